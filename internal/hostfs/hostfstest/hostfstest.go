// Package hostfstest builds host roots for collector tests from plain-text
// fixtures, so `go test` needs no extraction step and a reviewer reads the
// fixture as it is.
package hostfstest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Materialise writes the txtar archive at path into a temporary root and
// returns it as a hostfs.FS (root/proc, root/sys, root). A member named
// "path -> target" becomes a symlink, as sysfs is made of them.
func Materialise(t testing.TB, path string) hostfs.FS {
	t.Helper()
	a, err := txtar.ParseFile(path)
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

// ErrorLines lists the manifest errors of s as sorted "collector kind path"
// lines, with paths inside root made relative to it, so a test can compare
// what a collector could not read without spelling out temporary paths.
func ErrorLines(s *snapshot.Snapshot, root string) []string {
	var out []string
	for _, e := range s.Manifest.Errors {
		p := e.Path
		if rel, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(rel, "..") {
			p = rel
		}
		out = append(out, e.Collector+" "+string(e.Kind)+" "+p)
	}
	slices.Sort(out)
	return out
}
