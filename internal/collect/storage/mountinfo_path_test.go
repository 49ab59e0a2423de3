package storage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/slowpath/slowpath/internal/hostfs"
)

// TestMountInfoPath: a host procfs mounted elsewhere is read at pid 1 (the
// host's mount namespace), the default /proc and trees without pid 1 at self.
func TestMountInfoPath(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"self", "1"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "self", "mountinfo"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fs := hostfs.FS{Proc: dir, Sys: "/sys", Root: "/"}
	if got, want := MountInfoPath(fs), filepath.Join(dir, "self", "mountinfo"); got != want {
		t.Errorf("without 1/mountinfo: %s, want %s", got, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "1", "mountinfo"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := MountInfoPath(fs), filepath.Join(dir, "1", "mountinfo"); got != want {
		t.Errorf("host procfs: %s, want %s", got, want)
	}
	if got, want := MountInfoPath(hostfs.Default()), "/proc/self/mountinfo"; got != want {
		t.Errorf("default procfs: %s, want %s", got, want)
	}
}
