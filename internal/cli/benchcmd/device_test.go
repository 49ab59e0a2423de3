package benchcmd_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/cli/benchcmd"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testenv"
	"github.com/slowpath/slowpath/internal/testenv/loopfs"
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

func majorMinor(t *testing.T, dev string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
}

// TestDeviceExclusive: a device another process opened with O_EXCL (what
// a Ceph OSD or a ZFS pool holds, with no signature bench knows) is
// refused; so is one under a dm device, naming it. A run's own claim
// keeps every other exclusive opener out until it is released.
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

	mm := majorMinor(t, dev)
	release, err := benchcmd.ClaimDevice(hostfs.Default(), dev, mm)
	if err != nil {
		t.Fatalf("claim of the released device: %v", err)
	}
	if fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC, 0); err == nil {
		unix.Close(fd)
		t.Error("a second exclusive open succeeded while the claim is held")
	} else if !errors.Is(err, unix.EBUSY) {
		t.Errorf("second exclusive open: %v, want EBUSY", err)
	}
	if fd, err := unix.Open(dev, unix.O_RDWR|unix.O_CLOEXEC, 0); err != nil {
		t.Errorf("plain open (what fio does) refused under the claim: %v", err)
	} else {
		unix.Close(fd)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}

	// A holder in sysfs is named: a real EBUSY (the test's exclusive
	// open) with a fixture sysfs whose holders/ lists a dm device, as
	// /sys/class/block/NAME/holders does for a dm-crypt member.
	fd, err = unix.Open(dev, unix.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	fixture := t.TempDir()
	if err := os.MkdirAll(filepath.Join(fixture, "sys/class/block", name, "holders", "dm-7"), 0o755); err != nil {
		t.Fatal(err)
	}
	fs := hostfs.Default()
	fs.Sys = filepath.Join(fixture, "sys")
	if _, err := benchcmd.ClaimDevice(fs, dev, mm); err == nil || !strings.Contains(err.Error(), name+" is in use: held by dm-7") {
		t.Errorf("claim with a holder: %v", err)
	}
}
