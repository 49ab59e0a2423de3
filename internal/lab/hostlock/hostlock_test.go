package hostlock

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestExclusive: a second Acquire waits while the first holds the lock,
// fails with the holder's name when its context ends, and succeeds after
// Release.
func TestExclusive(t *testing.T) {
	dir := t.TempDir()
	first, err := Acquire(context.Background(), dir, "another lab is running")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := Acquire(ctx, dir, "another lab is running"); err == nil || !strings.Contains(err.Error(), "another lab is running") {
		t.Fatalf("second Acquire while held: %v", err)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	second, err := Acquire(context.Background(), dir, "another lab is running")
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	second.Release()
}
