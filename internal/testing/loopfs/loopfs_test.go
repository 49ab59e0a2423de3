package loopfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// TestLoopExt4Undone: inside a subtest the loop device is bound to the
// image and ext4 is mounted and writable; once the subtest ends, the mount
// and the loop device are gone (t.Cleanup also runs after a failure).
func TestLoopExt4Undone(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "losetup", "mount")
	testenv.RequireTool(t, "mkfs.ext4", "e2fsprogs")
	var mnt, img string
	t.Run("use", func(t *testing.T) {
		var name string
		mnt, name = LoopExt4(t, 32<<20)
		out, err := exec.Command("losetup", "--noheadings", "--output", "BACK-FILE", "/dev/"+name).Output()
		if err != nil {
			t.Fatalf("losetup /dev/%s: %v", name, err)
		}
		img = strings.TrimSpace(string(out))
		if filepath.Base(img) != "disk.img" {
			t.Errorf("backing file of %s: %q", name, img)
		}
		if err := os.WriteFile(filepath.Join(mnt, "f"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if mnt == "" || img == "" {
		t.Fatal("the subtest set nothing up")
	}
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{mnt, filepath.Dir(mnt)} {
		if strings.Contains(string(mounts), " "+p+" ") {
			t.Errorf("%s still mounted", p)
		}
	}
	// The image is gone with its temporary directory by now: look for it
	// among every loop device's backing file (a deleted one is listed
	// with " (deleted)").
	out, err := exec.Command("losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE").Output()
	if err != nil {
		t.Fatalf("losetup --list: %v", err)
	}
	if strings.Contains(string(out), img) {
		t.Errorf("a loop device is still bound to %s:\n%s", img, out)
	}
}
