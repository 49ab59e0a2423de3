package experiment

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

// TestCreatedDevice: a device the caller made for the run (Created, as lab
// crypt's mapping) is not refused for what it holds: a loop device with an
// ext4 signature, refused as a plain Device, runs db-commit as a created
// one. The exclusive claim still applies: held open O_EXCL by another
// opener, a created device is refused too.
func TestCreatedDevice(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	testenv.RequireTool(t, "mke2fs", "e2fsprogs")
	dev := loopDevice(t)
	if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", dev).CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v: %s", err, out)
	}
	w := Workload{Profile: "db-commit", Scale: 0.05, Runtime: time.Second}
	r, err := RunWorkload(t.Context(), testEnv(), w, Target{Device: dev})
	var te *TargetError
	if r != nil || !errors.As(err, &te) || !te.Refused || !strings.Contains(err.Error(), "holds a ext2/3/4 filesystem") {
		t.Errorf("plain device with ext4: %v, %v", r, err)
	}
	r, err = RunWorkload(t.Context(), testEnv(), w, Target{Device: dev, Created: true})
	if err != nil {
		t.Fatalf("created device: %v", err)
	}
	if r.Status != benchresult.StatusComplete || r.Parameters.TargetKind != "block" || r.Parameters.Target != dev {
		t.Errorf("created device: %s %s %s", r.Status, r.Parameters.TargetKind, r.Parameters.Target)
	}
	if f, ok := r.Figure("direct-4k", "read_iops"); !ok || !(f.Value > 0) {
		t.Errorf("direct-4k read_iops %+v %v", f, ok)
	}
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("exclusive open after the run (its claim released?): %v", err)
	}
	defer unix.Close(fd)
	r, err = RunWorkload(t.Context(), testEnv(), w, Target{Device: dev, Created: true})
	if r != nil || err == nil || !strings.Contains(err.Error(), "is in use") {
		t.Errorf("created device held by another opener: %v, %v", r, err)
	}
}

// TestCreatedDeviceHeldByDM: lab crypt's plain side, a created device that
// the caller's own dm mapping holds (the kernel refuses its exclusive
// claim), runs unclaimed; as a plain Device it is refused.
func TestCreatedDeviceHeldByDM(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	testenv.RequireTool(t, "dmsetup", "dmsetup")
	dev := loopDevice(t)
	name := "slowpath-test-held-" + filepath.Base(dev)
	out, err := exec.Command("dmsetup", "create", name, "--table", "0 131072 linear "+dev+" 0").CombinedOutput()
	if err != nil {
		t.Skipf("no device-mapper here: dmsetup create: %v: %s", err, out)
	}
	// Registered after loopDevice's cleanup, so it runs first: the
	// mapping goes before its loop device.
	t.Cleanup(func() {
		if out, err := exec.Command("dmsetup", "remove", "--retry", name).CombinedOutput(); err != nil {
			t.Errorf("dmsetup remove %s: %v: %s", name, err, out)
		}
	})
	w := Workload{Profile: "lab:randread-4k", Runtime: time.Second}
	r, err := RunWorkload(t.Context(), testEnv(), w, Target{Device: dev})
	if r != nil || err == nil || !strings.Contains(err.Error(), "device-mapper") {
		t.Errorf("plain device under a mapping: %v, %v", r, err)
	}
	r, err = RunWorkload(t.Context(), testEnv(), w, Target{Device: dev, Created: true})
	if err != nil {
		t.Fatalf("created device under the caller's mapping: %v", err)
	}
	if f, ok := r.Figure("", "total_iops"); !ok || !(f.Value > 0) {
		t.Errorf("total_iops %+v %v", f, ok)
	}
}
