package experiment

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testing/loopfs"
	"github.com/slowpath/slowpath/internal/testing/testenv"
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

func majorMinor(t *testing.T, dev string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
}

// TestClaimDevice: a run's claim keeps every other exclusive opener out
// until it is released, while fio's plain opens still succeed; a device
// held by another opener is refused, naming the holder sysfs lists.
func TestClaimDevice(t *testing.T) {
	dev := loopfs.Device(t, 64<<20)
	name := filepath.Base(dev)
	mm := majorMinor(t, dev)
	claim, err := ClaimDevice(hostfs.Default(), dev, mm)
	if err != nil {
		t.Fatalf("claim of the blank device: %v", err)
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
	if err := claim.Close(); err != nil {
		t.Fatal(err)
	}

	// A holder in sysfs is named: a real EBUSY (the test's exclusive
	// open) with a fixture sysfs whose holders/ lists a dm device, as
	// /sys/class/block/NAME/holders does for a dm-crypt member.
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("exclusive open after the claim's release: %v", err)
	}
	defer unix.Close(fd)
	if _, err := ClaimDevice(hostfs.Default(), dev, mm); err == nil || !strings.Contains(err.Error(), name+" is in use: another process has it open exclusively") {
		t.Errorf("claim of a held device: %v", err)
	}
	fixture := t.TempDir()
	if err := os.MkdirAll(filepath.Join(fixture, "sys/class/block", name, "holders", "dm-7"), 0o755); err != nil {
		t.Fatal(err)
	}
	fs := hostfs.Default()
	fs.Sys = filepath.Join(fixture, "sys")
	if _, err := ClaimDevice(fs, dev, mm); err == nil || !strings.Contains(err.Error(), name+" is in use: held by dm-7") {
		t.Errorf("claim with a holder: %v", err)
	}
}

// TestMountsOf: the mount points of a device come from collect/storage's
// mountinfo reader, so a mount point with a space reads as the kernel
// means it (mountinfo writes it \040), and a device mounted nowhere has none.
func TestMountsOf(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "proc", "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	table := "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n" +
		"40 22 8:16 / /media/My\\040Disk rw - ext4 /dev/sdb rw\n" +
		"41 22 8:16 /sub /srv/sub rw - ext4 /dev/sdb rw\n"
	if err := os.WriteFile(filepath.Join(dir, "proc", "self", "mountinfo"), []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := hostfs.New(dir)
	if got, want := mountsOf(fs, "8:16"), []string{"/media/My Disk", "/srv/sub"}; !slices.Equal(got, want) {
		t.Errorf("mountsOf(8:16) = %q, want %q", got, want)
	}
	if got := mountsOf(fs, "8:32"); got != nil {
		t.Errorf("mountsOf(8:32) = %q, want none", got)
	}
}
