// Package dbservertest gives tests of dbserver's throwaway database servers
// the directories bench gives them, below directories the servers' own
// users (mysql, postgres) can enter.
package dbservertest

import (
	"os"
	"path/filepath"
	"testing"
)

// Enterable is a new directory below os.TempDir that every user may enter
// (0755), removed when t ends: t.TempDir's parent is 0700, which a server
// run as its own user cannot cross.
func Enterable(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "slowpath-dbserver-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// PhaseDir is a run's phase directory as bench makes it: run/0-phase
// below dir, both 0700 (dbserver opens them to its server's user).
func PhaseDir(t testing.TB, dir string) string {
	t.Helper()
	phase := filepath.Join(dir, "run", "0-phase")
	if err := os.MkdirAll(phase, 0o700); err != nil {
		t.Fatal(err)
	}
	return phase
}
