package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/loopfs"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

func collectLive(t testing.TB) *snapshot.Snapshot {
	t.Helper()
	var s snapshot.Snapshot
	Collect(context.Background(), hostfs.Default(), &s)
	return &s
}

func findDevice(st *snapshot.Storage, name string) *snapshot.BlockDevice {
	for i := range st.BlockDevices {
		if st.BlockDevices[i].Name == name {
			return &st.BlockDevices[i]
		}
	}
	return nil
}

// lsblkDev is the subset of `lsblk -J -b -a -O` this test compares.
type lsblkDev struct {
	Name     string     `json:"name"`
	MajMin   string     `json:"maj:min"`
	Type     string     `json:"type"`
	Size     uint64     `json:"size"`
	RO       bool       `json:"ro"`
	RM       bool       `json:"rm"`
	Rota     bool       `json:"rota"`
	LogSec   int        `json:"log-sec"`
	PhySec   int        `json:"phy-sec"`
	Sched    *string    `json:"sched"`
	RqSize   *int       `json:"rq-size"`
	RA       int        `json:"ra"`
	PKName   *string    `json:"pkname"`
	Children []lsblkDev `json:"children"`
}

// TestLiveMatchesLsblk compares the collector on this machine's real /proc
// and /sys with util-linux lsblk and findmnt, which read the same kernel
// files independently.
func TestLiveMatchesLsblk(t *testing.T) {
	testenv.RequireTool(t, "lsblk", "util-linux")
	testenv.RequireTool(t, "findmnt", "util-linux")
	// Other tests may bind loop devices meanwhile: collect before and
	// after lsblk and compare only what did not change.
	s := collectLive(t)
	errs := map[string]bool{}
	for _, e := range s.Manifest.Errors {
		errs[e.Path+": "+e.Message] = true
	}
	after := collectLive(t)
	for _, e := range after.Manifest.Errors {
		if errs[e.Path+": "+e.Message] {
			t.Errorf("collection error on this host: %+v", e)
		}
	}
	out, err := exec.Command("lsblk", "-J", "-b", "-a", "-o",
		"NAME,MAJ:MIN,TYPE,SIZE,RO,RM,ROTA,LOG-SEC,PHY-SEC,SCHED,RQ-SIZE,RA,PKNAME").Output()
	if err != nil {
		t.Fatalf("lsblk: %v", err)
	}
	var lb struct {
		BlockDevices []lsblkDev `json:"blockdevices"`
	}
	if err := json.Unmarshal(out, &lb); err != nil {
		t.Fatal(err)
	}
	var flat []lsblkDev
	var walk func([]lsblkDev)
	walk = func(ds []lsblkDev) {
		for _, d := range ds {
			flat = append(flat, d)
			walk(d.Children)
		}
	}
	walk(lb.BlockDevices)
	if len(flat) == 0 {
		t.Fatal("lsblk lists no devices")
	}
	for _, l := range flat {
		d := findDevice(s.Storage, l.Name)
		// The I/O counters move between the two collections on a busy
		// host (vda, under other tests); the rest must not.
		if d2 := findDevice(after.Storage, l.Name); d == nil || d2 == nil || !cmp.Equal(d, d2, cmpopts.IgnoreFields(snapshot.BlockDevice{}, "Stat")) {
			if strings.HasPrefix(l.Name, "loop") {
				continue // bound or detached by another test meanwhile
			}
			t.Errorf("lsblk has %s, collector: %+v then %+v", l.Name, d, d2)
			continue
		}
		got := fmt.Sprintf("%s size=%d ro=%v rm=%v", d.MajorMinor, d.SizeBytes, d.ReadOnly, d.Removable)
		want := fmt.Sprintf("%s size=%d ro=%v rm=%v", l.MajMin, l.Size, l.RO, l.RM)
		if got != want {
			t.Errorf("%s: collector %s, lsblk %s", l.Name, got, want)
		}
		kind := map[string]string{"disk": "disk", "part": "partition", "loop": "loop", "crypt": "dm", "dm": "dm", "lvm": "dm"}[l.Type]
		if strings.HasPrefix(l.Name, "zram") {
			kind = "zram"
		}
		if strings.HasPrefix(l.Type, "raid") {
			kind = "md"
		}
		if kind != "" && d.Kind != kind {
			t.Errorf("%s: kind %q, lsblk type %q", l.Name, d.Kind, l.Type)
		}
		if d.Kind == "partition" && (l.PKName == nil || d.Parent != *l.PKName) {
			t.Errorf("%s: parent %q, lsblk pkname %v", l.Name, d.Parent, l.PKName)
		}
		if q := d.Queue; q != nil {
			if q.Rotational == nil || *q.Rotational != l.Rota || q.LogicalBlockSize != l.LogSec ||
				q.PhysicalBlockSize != l.PhySec || q.ReadAheadKB != l.RA {
				t.Errorf("%s: queue %+v rota=%v, lsblk %+v", l.Name, *q, q.Rotational != nil && *q.Rotational, l)
			}
			if l.Sched != nil && q.Scheduler != *l.Sched {
				t.Errorf("%s: scheduler %q, lsblk %q", l.Name, q.Scheduler, *l.Sched)
			}
			if l.RqSize != nil && q.NrRequests != *l.RqSize {
				t.Errorf("%s: nr_requests %d, lsblk %d", l.Name, q.NrRequests, *l.RqSize)
			}
		}
		// virtio_blk names its disks vd* (drivers/block/virtio_blk.c).
		if d.Kind == "disk" && strings.HasPrefix(d.Name, "vd") && (d.Ident == nil || d.Ident.Transport != "virtio") {
			t.Errorf("%s: transport %+v, want virtio", d.Name, d.Ident)
		}
	}

	// The root mount, as findmnt sees it.
	out, err = exec.Command("findmnt", "-J", "-n", "-o", "TARGET,FSTYPE,MAJ:MIN", "/").Output()
	if err != nil {
		t.Fatalf("findmnt: %v", err)
	}
	var fm struct {
		Filesystems []struct {
			Target string `json:"target"`
			FSType string `json:"fstype"`
			MajMin string `json:"maj:min"`
		} `json:"filesystems"`
	}
	if err := json.Unmarshal(out, &fm); err != nil || len(fm.Filesystems) != 1 {
		t.Fatalf("findmnt output %s: %v", out, err)
	}
	want := fm.Filesystems[0]
	var root *snapshot.Mount
	for i, m := range s.Storage.Mounts {
		if m.MountPoint == "/" {
			root = &s.Storage.Mounts[i] // the last one is on top
		}
	}
	if root == nil || root.FSType != want.FSType || root.MajorMinor != want.MajMin {
		t.Fatalf("root mount %+v, findmnt %+v", root, want)
	}
	var dev *snapshot.BlockDevice
	for i := range s.Storage.BlockDevices {
		if s.Storage.BlockDevices[i].MajorMinor == root.MajorMinor {
			dev = &s.Storage.BlockDevices[i]
		}
	}
	if dev == nil {
		t.Logf("root %s is not on a block device (%s)", root.MajorMinor, root.FSType)
	} else {
		t.Logf("root: %s on %s (%s, transport %+v)", root.FSType, dev.Name, dev.Kind, dev.Ident)
	}
}

// TestLoopDeviceLive binds a real loop device to a temporary file and
// checks that the collector finds the file and the filesystem holding it.
func TestLoopDeviceLive(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "losetup", "mount")
	img := loopfs.Image(t, 8<<20)
	name := filepath.Base(loopfs.Attach(t, img))

	s := collectLive(t)
	d := findDevice(s.Storage, name)
	if d == nil {
		t.Fatalf("%s not collected; errors %+v", name, s.Manifest.Errors)
	}
	var st unix.Stat_t
	if err := unix.Stat(img, &st); err != nil {
		t.Fatal(err)
	}
	wantDev := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	if d.Kind != snapshot.KindLoop || d.SizeBytes != 8<<20 || d.Loop == nil ||
		d.Loop.BackingFile != img || d.Loop.BackingDevice != wantDev {
		t.Errorf("%s = %+v loop %+v; want loop of 8 MiB backed by %s on %s", name, d, d.Loop, img, wantDev)
	}
	if bd := findDevice(s.Storage, ""); bd != nil {
		t.Errorf("device without name: %+v", bd)
	}
}

// TestFscryptLive makes a real ext4 with the encrypt feature on a loop
// device, sets a v1 policy on an empty directory (which needs no key),
// bind-mounts that directory, and checks what the collector says about
// both mount roots.
func TestFscryptLive(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "losetup", "mount")
	testenv.RequireTool(t, "mkfs.ext4", "e2fsprogs")
	if _, err := os.Stat("/sys/fs/ext4/features/encryption"); err != nil {
		testenv.Unavailable(t, "kernel ext4 lacks encryption (CONFIG_FS_ENCRYPTION)")
	}
	img := loopfs.Image(t, 32<<20)
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-O", "encrypt", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	loop := filepath.Base(loopfs.Attach(t, img))
	arena := loopfs.SharedArena(t, filepath.Dir(img))
	mnt, bind := filepath.Join(arena, "mnt"), filepath.Join(arena, "bind")
	for _, d := range []string{mnt, bind} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	loopfs.Mount(t, "/dev/"+loop, mnt)
	enc := filepath.Join(mnt, "enc")
	if err := os.Mkdir(enc, 0o700); err != nil {
		t.Fatal(err)
	}
	setPolicyV1(t, enc)
	loopfs.Mount(t, "--bind", enc, bind)

	s := collectLive(t)
	got := map[string]snapshot.Mount{}
	for _, m := range s.Storage.Mounts {
		got[m.MountPoint] = m
	}
	if m := got[mnt]; m.FscryptStatus != snapshot.FscryptNotEncrypted || m.Fscrypt != nil {
		t.Errorf("%s: %+v, want not_encrypted", mnt, m)
	}
	want := snapshot.Fscrypt{Version: 1, ContentsMode: "AES-256-XTS", FilenamesMode: "AES-256-CTS"}
	if m := got[bind]; m.FscryptStatus != snapshot.FscryptEncrypted || m.Fscrypt == nil || *m.Fscrypt != want {
		t.Errorf("%s: %+v fscrypt %+v, want %+v", bind, m, m.Fscrypt, want)
	}
	for _, e := range s.Manifest.Errors {
		if e.Collector == "storage.fscrypt" {
			t.Errorf("fscrypt error: %+v", e)
		}
	}
}

// setPolicyV1 issues FS_IOC_SET_ENCRYPTION_POLICY with a v1 policy
// (struct fscrypt_policy_v1, include/uapi/linux/fscrypt.h). A v1 policy
// only names a key descriptor; the key itself is needed only for file I/O.
func setPolicyV1(t *testing.T, dir string) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	pol := [12]byte{0, unix.FSCRYPT_MODE_AES_256_XTS, unix.FSCRYPT_MODE_AES_256_CTS, 0x2, 1, 2, 3, 4, 5, 6, 7, 8}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.FS_IOC_SET_ENCRYPTION_POLICY, uintptr(unsafe.Pointer(&pol[0]))); errno != 0 {
		t.Fatalf("FS_IOC_SET_ENCRYPTION_POLICY %s: %v", dir, errno)
	}
}

func TestOpenDMControlMissing(t *testing.T) {
	_, err := OpenDMControl(filepath.Join(t.TempDir(), "control"))
	if hostfs.Classify(err) != hostfs.KindMissing {
		t.Errorf("kind %q for %v, want missing", hostfs.Classify(err), err)
	}
}

// TestOpenDMControlNotDM issues the real DM_VERSION ioctl on a node that
// is not device-mapper: the kernel answers ENOTTY, classified unsupported.
func TestOpenDMControlNotDM(t *testing.T) {
	_, err := OpenDMControl("/dev/null")
	if !errors.Is(err, ErrDMControl) || hostfs.Classify(err) != hostfs.KindUnsupported {
		t.Errorf("err %v, kind %q; want ErrDMControl, unsupported", err, hostfs.Classify(err))
	}
}
