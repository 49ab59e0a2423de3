// Package golden compares test output with golden files and rewrites them
// when SLOWPATH_UPDATE=1. An environment variable rather than an -update
// flag, so `go test ./...` with it does not trip packages that define no
// such flag. Only tests import it.
package golden

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Update reports whether golden files are being rewritten.
func Update() bool { return os.Getenv("SLOWPATH_UPDATE") == "1" }

// Compare fails t when got differs from the file at path, showing the diff;
// with SLOWPATH_UPDATE=1 it writes got to path instead.
func Compare(t testing.TB, path string, got []byte) {
	t.Helper()
	if Update() {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with SLOWPATH_UPDATE=1 to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, d)
	}
}
