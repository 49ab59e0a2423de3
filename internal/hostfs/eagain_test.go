package hostfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// TestOpenBelowRetriesRace: openat2 with RESOLVE_IN_ROOT answers EAGAIN
// when a rename or mount anywhere on the system races a ".." in the path
// it resolves (openat2(2)); other tests rename and mount all the time.
// A link whose target climbs with ".." is still resolved inside the root,
// missing, while renames run beside it: never EAGAIN (seen once in a
// whole-suite run as a hostile fixture's "could not be read: error").
func TestOpenBelowRetriesRace(t *testing.T) {
	root := t.TempDir()
	if err := os.Symlink("/../../../../outside/secret.cnf", filepath.Join(root, "escape.cnf")); err != nil {
		t.Fatal(err)
	}
	churn := t.TempDir()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a, b := filepath.Join(churn, "a"), filepath.Join(churn, "b")
		if err := os.WriteFile(a, nil, 0o600); err != nil {
			return
		}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			os.Rename(a, b)
			a, b = b, a
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	counts := map[string]int{}
	for i := 0; i < 20000; i++ {
		_, err := ReadFileBelow(root, "escape.cnf")
		switch {
		case errors.Is(err, fs.ErrNotExist):
			counts["missing"]++
		default:
			counts[strconv.Quote(errString(err))]++
		}
	}
	if len(counts) != 1 || counts["missing"] == 0 {
		t.Errorf("20,000 reads of a link that climbs out of the root, renames beside them: %v, want every one missing", counts)
	}
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
