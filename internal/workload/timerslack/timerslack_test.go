package timerslack

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestLock: the thread's slack is 1 ns while locked and what it was after.
func TestLock(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		// A goroutine of its own: the test's thread keeps its slack.
		restore := Lock()
		inside, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
		if err == nil && inside != 1 {
			t.Errorf("slack %d ns while locked, want 1", inside)
		}
		restore()
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestSleepUntil: the sleep never ends before its deadline, on the clock
// Now reads.
func TestSleepUntil(t *testing.T) {
	for range 20 {
		at := Now() + 200_000 // 200 µs
		SleepUntil(at)
		if woke := Now(); woke < at {
			t.Fatalf("woke %d ns before the deadline", at-woke)
		}
	}
	SleepUntil(Now() - 1) // a deadline already past returns at once
}
