package experiment

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/testenv"
	"github.com/slowpath/slowpath/internal/testenv/loopfs"
)

// TestCreatedDevice: a device the caller made for the run (Created, as lab
// crypt's mapping) is not refused for what it holds: a loop device with an
// ext4 signature, refused as a plain Device, runs db-commit as a created
// one. The exclusive claim still applies: held open O_EXCL by another
// opener, a created device is refused too.
func TestCreatedDevice(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	testenv.RequireTool(t, "mke2fs", "e2fsprogs")
	dev := loopfs.Device(t, 64<<20)
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

// A created device that the caller's own dm mapping holds (lab crypt's
// plain side: the ramdisk under its mappings) runs unclaimed: this host
// has no device-mapper, so test/vm TestCryptLab is where it runs, on
// every kernel.
