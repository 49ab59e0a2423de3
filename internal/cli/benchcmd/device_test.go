package benchcmd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/testing/loopfs"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// TestDevice: a blank loop device is benchmarked with --destroy-data; once
// it holds ext4 it is refused, mounted too; the root disk is refused.
func TestDevice(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	testenv.RequireTool(t, "mke2fs", "e2fsprogs")
	dev := loopfs.Device(t, 64<<20)
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

	// Below a shared tmpfs: a mount namespace copied meanwhile (ip netns
	// exec in other tests) must not keep the loop device from detaching.
	mnt := filepath.Join(loopfs.SharedArena(t, t.TempDir()), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	loopfs.Mount(t, "-t", "ext4", dev, mnt)
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

// TestDeviceExclusive: a device another process opened with O_EXCL (what
// a Ceph OSD or a ZFS pool holds, with no signature bench knows) is
// refused with exit 2, before anything is written. The claim itself
// (holders named, a run's claim keeping others out) is tested in
// internal/experiment, where it lives.
func TestDeviceExclusive(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	dev := loopfs.Device(t, 64<<20)
	name := filepath.Base(dev)
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("exclusive open of the blank loop device: %v", err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	code, _, stderr := run(t, "bench", "db-commit", "--device", dev, "--destroy-data", "--scale", "0.05", "--runtime", "1s")
	unix.Close(fd)
	if code != 2 || !strings.Contains(stderr, "refusing --device "+dev+": "+name+" is in use: another process has it open exclusively") {
		t.Errorf("held device: exit %d, %q", code, stderr)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("refused run left %v", ents)
	}
}
