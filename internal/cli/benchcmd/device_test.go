package benchcmd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/testenv"
)

// loopDevice binds a new 64 MiB file to a loop device, detached in cleanup.
func loopDevice(t *testing.T) string {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "losetup", "util-linux")
	f := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(f, 64<<20); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "-f", "--show", f).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", dev, err, out)
		}
	})
	return dev
}

// TestDevice: a blank loop device is benchmarked with --destroy-data; once
// it holds ext4 it is refused, mounted too; the root disk is refused.
func TestDevice(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	testenv.RequireTool(t, "mke2fs", "e2fsprogs")
	dev := loopDevice(t)
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := run(t, "bench", "db-commit", "--device", dev, "--destroy-data", "--scale", "0.05", "--runtime", "1s", "--interval", "200ms", "-o", out)
	if code != 0 {
		t.Fatalf("blank device: exit %d: %s\n%s", code, stderr, stdout)
	}
	r, err := benchresult.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(dev)
	if r.Parameters.TargetKind != "block" || len(r.WhereTime.Devices) == 0 || r.WhereTime.Devices[0].Device != name || r.WhereTime.Devices[0].WriteIOPS <= 0 {
		t.Errorf("device run: kind %s, devices %+v", r.Parameters.TargetKind, r.WhereTime.Devices)
	}
	if f, ok := r.Figure("direct-4k", "read_iops"); !ok || f.Value <= 0 {
		t.Errorf("figures %+v", r.Figures)
	}

	if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", dev).CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v: %s", err, out)
	}
	code, _, stderr = run(t, "bench", "db-commit", "--device", dev, "--destroy-data", "--scale", "0.05", "--runtime", "1s")
	if code != 2 || !strings.Contains(stderr, "refusing --device "+dev+": "+name+" holds a ext2/3/4 filesystem") {
		t.Errorf("ext4 device: exit %d, %q", code, stderr)
	}

	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "ext4", dev, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v: %s", err, out)
	}
	// Lazy: a mount namespace copied meanwhile (ip netns exec in other
	// tests) must not keep the loop device from detaching.
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	code, _, stderr = run(t, "bench", "db-commit", "--device", dev, "--destroy-data")
	if code != 2 || !strings.Contains(stderr, name+" is mounted at "+mnt) {
		t.Errorf("mounted device: exit %d, %q", code, stderr)
	}

	// The root filesystem's disk, whatever it is here; refused before
	// anything is opened for writing.
	rootDev, err := exec.Command("findmnt", "-n", "-o", "SOURCE", "/").Output()
	if err == nil && strings.HasPrefix(string(rootDev), "/dev/") {
		code, _, stderr = run(t, "bench", "db-commit", "--device", strings.TrimSpace(string(rootDev)), "--destroy-data")
		if code != 2 || !strings.Contains(stderr, "refusing --device") || !(strings.Contains(stderr, "mounted at /") || strings.Contains(stderr, "root filesystem")) {
			t.Errorf("root disk: exit %d, %q", code, stderr)
		}
	}
}
