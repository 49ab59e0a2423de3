package storage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/slowpath/slowpath/internal/hostfs"
)

// materialise writes testdata/name (txtar) into a temporary root. A file
// named "path -> target" becomes a symlink, as sysfs is made of them.
func materialise(t testing.TB, name string) hostfs.FS {
	t.Helper()
	a, err := txtar.ParseFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range a.Files {
		name, target, isLink := strings.Cut(f.Name, " -> ")
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if isLink {
			err = os.Symlink(target, p)
		} else {
			err = os.WriteFile(p, f.Data, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return hostfs.New(dir)
}
