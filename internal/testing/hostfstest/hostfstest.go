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
	Extract(t, dir, a)
	return hostfs.New(dir)
}

// Extract writes the members of a under root; a member named
// "path -> target" becomes a symlink, as sysfs is made of them.
func Extract(t testing.TB, root string, a *txtar.Archive) {
	t.Helper()
	for _, f := range a.Files {
		name, target, isLink := strings.Cut(f.Name, " -> ")
		if !isLink {
			WriteFile(t, root, name, string(f.Data))
			continue
		}
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
}

// WriteFile writes content to root/rel, making the directories above it:
// one file of a host tree built in a test.
func WriteFile(t testing.TB, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
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
