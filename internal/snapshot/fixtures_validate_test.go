package snapshot

import (
	"path/filepath"
	"testing"
)

// TestFixturesValidate: every whole-host fixture obeys the validation
// rules (a fixture that does not would fail every command that loads it).
func TestFixturesValidate(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "hosts", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no fixtures found under testdata/hosts")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if _, err := Load(f); err != nil {
				t.Error(err)
			}
		})
	}
}
