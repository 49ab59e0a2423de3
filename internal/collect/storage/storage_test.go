package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/dmtest"
	"github.com/slowpath/slowpath/internal/testing/hostfstest"
)

// testKey is a real-looking 512-bit XTS key (two AES-256 keys).
const testKey = "6f1c3b2a9d8e7f60a1b2c3d4e5f60718293a4b5c6d7e8f901122334455667788" +
	"99aabbccddeeff00102132435465768798a9bacbdcedfe0f1e2d3c4b5a697887"

type fakeFscrypt map[string]error

func (f fakeFscrypt) Policy(dir string, _ uint64) (*snapshot.Fscrypt, error) {
	err, ok := f[filepath.Base(dir)]
	if !ok {
		return nil, unix.ENODATA
	}
	if err == nil {
		return &snapshot.Fscrypt{Version: 2, ContentsMode: "AES-256-XTS", FilenamesMode: "AES-256-CTS"}, nil
	}
	return nil, err
}

func boolp(b bool) *bool { return &b }

func TestCollectBareMetal(t *testing.T) {
	fs := materialise(t, "baremetal.txtar")
	// The ioctls are faked; the loop backing file's stat(2) runs for real
	// on the file in the tree, which only a live root allows.
	fs.Live = true
	dm := &dmtest.Control{Payloads: map[string][]byte{
		"253:0": dmtest.EncodeTableStatus([]dmtest.Target{dmtest.T(0, 1952441777, "crypt",
			"aes-xts-plain64 "+testKey+" 0 259:2 32768 2 no_read_workqueue no_write_workqueue")}),
		"253:1": dmtest.EncodeTableStatus([]dmtest.Target{
			dmtest.T(0, 1000000000, "crypt", "aes-cbc-essiv:sha256 :32:logon:cryptsetup:inner-d0 0 253:0 0"),
			dmtest.T(1000000000, 952441777, "linear", "253:0 1000000000"),
		}),
	}}
	c := &Collector{FS: fs, OpenDM: func() (DMControl, error) { return dm, nil },
		Fscrypt: fakeFscrypt{"boot": unix.EOPNOTSUPP, "with space": nil}}
	// The LUKS2 header beneath luks-7c1e, where its device node would be.
	hdr := luks2Bytes(`{"keyslots":{"0":{"type":"luks2"},"1":{"type":"luks2"}},"tokens":{"0":{"type":"systemd-tpm2","keyslots":["1"]}},"config":{"flags":["no-read-workqueue","no-write-workqueue"]}}`, 16384)
	if err := os.MkdirAll(filepath.Join(fs.Root, "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fs.Root, "dev", "nvme0n1p2"), hdr, 0o600); err != nil {
		t.Fatal(err)
	}
	var s snapshot.Snapshot
	c.Collect(context.Background(), &s)

	var st unix.Stat_t
	if err := unix.Stat(fs.RootPath("data", "disk.img"), &st); err != nil {
		t.Fatal(err)
	}
	imgDev := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	want := &snapshot.Storage{
		Mounts: []snapshot.Mount{
			{MountID: 22, ParentID: 1, MajorMinor: "253:1", Root: "/", MountPoint: "/", Options: "rw,relatime",
				FSType: "ext4", Source: "/dev/mapper/inner", SuperOpts: "rw", FscryptStatus: "not_encrypted"},
			{MountID: 23, ParentID: 22, MajorMinor: "259:1", Root: "/", MountPoint: "/boot", Options: "rw,relatime",
				FSType: "ext4", Source: "/dev/nvme0n1p1", SuperOpts: "rw", FscryptStatus: "unsupported"},
			{MountID: 24, ParentID: 22, MajorMinor: "9:0", Root: "/", MountPoint: "/data", Options: "rw,noatime",
				FSType: "xfs", Source: "/dev/md0", SuperOpts: "rw,attr2"},
			{MountID: 25, ParentID: 22, MajorMinor: "7:0", Root: "/", MountPoint: "/mnt/with space", Options: "rw",
				FSType: "ext4", Source: "/dev/loop0", SuperOpts: "rw", FscryptStatus: "encrypted",
				Fscrypt: &snapshot.Fscrypt{Version: 2, ContentsMode: "AES-256-XTS", FilenamesMode: "AES-256-CTS"}},
			{MountID: 26, ParentID: 22, MajorMinor: "0:5", Root: "/", MountPoint: "/dev", Options: "rw,nosuid",
				FSType: "devtmpfs", Source: "udev", SuperOpts: "rw,size=1000k"},
		},
		BlockDevices: []snapshot.BlockDevice{
			{Name: "dm-0", MajorMinor: "253:0", Kind: "dm", SizeBytes: 1952441777 * 512,
				Slaves: []string{"nvme0n1p2"}, Holders: []string{"dm-1"},
				Queue: &snapshot.Queue{Rotational: boolp(false), LogicalBlockSize: 4096, PhysicalBlockSize: 4096,
					Scheduler: "none", Schedulers: []string{"none"}, ReadAheadKB: 128},
				DM: &snapshot.DM{Name: "luks-7c1e", UUID: "CRYPT-LUKS2-7c1e5b0a3d6f4e2b9a8c1d0e2f3a4b5c-luks-7c1e",
					Targets: []snapshot.DMTarget{{Start: 0, Length: 1952441777, Type: "crypt",
						Params: "aes-xts-plain64 redacted:512 0 259:2 32768 2 no_read_workqueue no_write_workqueue"}},
					LUKS: &snapshot.LUKSHeader{Device: "nvme0n1p2", Version: 2, Keyslots: []int{0, 1},
						Tokens: []snapshot.LUKSToken{{Type: "systemd-tpm2", Keyslots: []int{1}}},
						Flags:  []string{"no-read-workqueue", "no-write-workqueue"}}}},
			{Name: "dm-1", MajorMinor: "253:1", Kind: "dm", SizeBytes: 1952441777 * 512, Slaves: []string{"dm-0"},
				DM: &snapshot.DM{Name: "inner", UUID: "CRYPT-PLAIN-inner", Targets: []snapshot.DMTarget{
					{Start: 0, Length: 1000000000, Type: "crypt", Params: "aes-cbc-essiv:sha256 :32:logon:cryptsetup:inner-d0 0 253:0 0"},
					{Start: 1000000000, Length: 952441777, Type: "linear", Params: "253:0 1000000000"},
				}}},
			{Name: "loop0", MajorMinor: "7:0", Kind: "loop", SizeBytes: 2048 * 512,
				Loop: &snapshot.Loop{BackingFile: "/data/disk.img", DirectIO: true, BackingDevice: imgDev}},
			{Name: "loop1", MajorMinor: "7:1", Kind: "loop"},
			{Name: "md0", MajorMinor: "9:0", Kind: "md", SizeBytes: 7814035072 * 512, Slaves: []string{"sda1"},
				MD: &snapshot.MD{Level: "raid1"}},
			{Name: "nvme0n1", MajorMinor: "259:0", Kind: "disk", SizeBytes: 1953525168 * 512,
				Queue: &snapshot.Queue{Rotational: boolp(false), LogicalBlockSize: 512, PhysicalBlockSize: 512,
					Scheduler: "none", Schedulers: []string{"none", "mq-deadline"}, NrRequests: 1023, ReadAheadKB: 128},
				Ident: &snapshot.Identity{Transport: "nvme", Model: "Samsung SSD 980 PRO 1TB", Firmware: "5B2QGXA7"}},
			{Name: "nvme0n1p1", MajorMinor: "259:1", Kind: "partition", Parent: "nvme0n1", SizeBytes: 1048576 * 512},
			{Name: "nvme0n1p2", MajorMinor: "259:2", Kind: "partition", Parent: "nvme0n1", SizeBytes: 1952474545 * 512,
				Holders: []string{"dm-0"}},
			{Name: "sda", MajorMinor: "8:0", Kind: "disk", SizeBytes: 7814037168 * 512,
				Queue: &snapshot.Queue{Rotational: boolp(true), LogicalBlockSize: 512, PhysicalBlockSize: 4096,
					Scheduler: "mq-deadline", Schedulers: []string{"none", "mq-deadline", "kyber", "bfq"}, NrRequests: 64, ReadAheadKB: 128},
				Ident: &snapshot.Identity{Transport: "ata", Vendor: "ATA", Model: "ST4000NM0035-1V4", Firmware: "TN03"}},
			{Name: "sda1", MajorMinor: "8:1", Kind: "partition", Parent: "sda", SizeBytes: 7814035119 * 512, Holders: []string{"md0"}},
			{Name: "zram0", MajorMinor: "252:0", Kind: "zram", SizeBytes: 8388608 * 512},
		},
	}
	if diff := cmp.Diff(want, s.Storage); diff != "" {
		t.Errorf("storage (-want +got):\n%s", diff)
	}
	if len(s.Manifest.Errors) != 0 {
		t.Errorf("unexpected errors: %+v", s.Manifest.Errors)
	}
	if !dm.Closed {
		t.Error("dm control not closed")
	}
	for i, b := range dm.Handed {
		if slices.ContainsFunc(b, func(c byte) bool { return c != 0 }) {
			t.Errorf("ioctl buffer %d not zeroed after decoding", i)
		}
	}
	js, _ := json.Marshal(s)
	if strings.Contains(strings.ToLower(string(js)), testKey[:32]) {
		t.Fatal("key material in snapshot JSON")
	}
}

// errorLines summarises manifest errors as "collector kind relpath".
func TestCollectBroken(t *testing.T) {
	fs := materialise(t, "broken.txtar")
	dm := &dmtest.Control{Payloads: map[string][]byte{"253:3": []byte("this is no dm_ioctl at all")}}
	c := &Collector{FS: fs, OpenDM: func() (DMControl, error) { return dm, nil }, Fscrypt: fakeFscrypt{}}
	var s snapshot.Snapshot
	c.Collect(context.Background(), &s)

	wantErrs := []string{
		"storage.block error sys/class/block/loopy/dev",
		"storage.block error sys/class/block/sda/queue/scheduler",
		"storage.block error sys/class/block/sda/stat",
		"storage.block error sys/class/block/sda1/size",
		"storage.block error sys/class/block/sdx/dev",
		"storage.dm error dev/mapper/control dm-3",
		"storage.mounts error proc/self/mountinfo",
		"storage.mounts error proc/self/mountinfo",
	}
	if diff := cmp.Diff(wantErrs, hostfstest.ErrorLines(&s, fs.Root)); diff != "" {
		t.Errorf("errors (-want +got):\n%s\n%+v", diff, s.Manifest.Errors)
	}
	var names []string
	for _, d := range s.Storage.BlockDevices {
		names = append(names, d.Name+"/"+d.Kind)
	}
	if diff := cmp.Diff([]string{"dm-3/dm", "sda/disk", "sda1/partition"}, names); diff != "" {
		t.Errorf("partial devices (-want +got):\n%s", diff)
	}
	// A stat file cut short is an error and no counters; a whole one is read.
	for _, d := range s.Storage.BlockDevices {
		switch {
		case d.Name == "sda" && d.Stat != nil:
			t.Errorf("sda: counters kept from a 10-field stat: %+v", d.Stat)
		case d.Name == "dm-3" && (d.Stat == nil || d.Stat.Fields != 17 || d.Stat.ReadIOs != 1200 || d.Stat.TimeInQueueMS != 4000):
			t.Errorf("dm-3: stat = %+v, want 17 fields, 1200 reads, time_in_queue 4000", d.Stat)
		}
	}
	for _, e := range s.Manifest.Errors {
		if strings.HasSuffix(e.Path, "sda/stat") && !strings.Contains(e.Message, "10 fields, want at least 11") {
			t.Errorf("short stat not explained: %s", e.Message)
		}
	}
	if len(s.Storage.Mounts) != 1 || s.Storage.Mounts[0].MountPoint != "/" {
		t.Errorf("good mount line not kept: %+v", s.Storage.Mounts)
	}
	for _, e := range s.Manifest.Errors {
		if strings.Contains(e.Path, "loopy") && !strings.Contains(e.Message, "too many levels of symbolic links") {
			t.Errorf("symlink loop not named: %s", e.Message)
		}
	}
}

func TestCollectMissingTrees(t *testing.T) {
	fs := hostfs.New(t.TempDir())
	var s snapshot.Snapshot
	Collect(context.Background(), fs, &s)
	want := []string{
		"storage.block missing sys/class/block",
		"storage.mounts missing proc/self/mountinfo",
	}
	if diff := cmp.Diff(want, hostfstest.ErrorLines(&s, fs.Root)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// TestDMControlMissing: with dm devices in sysfs but no control node (this
// machine has no device-mapper), the error says "missing" and names the node.
func TestDMControlMissing(t *testing.T) {
	fs := materialise(t, "baremetal.txtar")
	fs.Live = true // the tree's dev/mapper/control is opened for real
	var s snapshot.Snapshot
	(&Collector{FS: fs, Fscrypt: fakeFscrypt{}}).Collect(context.Background(), &s)
	got := hostfstest.ErrorLines(&s, fs.Root)
	// No device node beneath the LUKS mapping either: its header is unread.
	if diff := cmp.Diff([]string{"storage.dm missing dev/mapper/control", "storage.luks missing dev/nvme0n1p2"}, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if msg := s.Manifest.Errors[0].Message; !strings.Contains(msg, "2 device(s)") || !strings.Contains(msg, "dm-mod") {
		t.Errorf("message does not say what is missing and what to do: %s", msg)
	}
	for _, d := range s.Storage.BlockDevices {
		if d.DM != nil && !strings.Contains(d.DM.TableNotRead, "dm-mod") {
			t.Errorf("%s: table_not_read %q: want why", d.Name, d.DM.TableNotRead)
		}
	}
}

// TestForeignTreeNoLiveSources: collected from a tree that is not this
// host's, with no fakes, the DM and fscrypt ioctls and the loop backing
// file's stat(2) are not run (they would answer for this host), and each
// is recorded once as skipped, saying why and what to pass.
func TestForeignTreeNoLiveSources(t *testing.T) {
	fs := materialise(t, "baremetal.txtar").WithLiveSources(hostfs.LiveAuto)
	if fs.Live {
		t.Fatal("a temporary tree was taken for this host's roots")
	}
	var s snapshot.Snapshot
	(&Collector{FS: fs}).Collect(context.Background(), &s)
	want := []string{
		"storage.block skipped data/disk.img",
		"storage.dm skipped dev/mapper/control",
		"storage.fscrypt skipped FS_IOC_GET_ENCRYPTION_POLICY_EX",
	}
	if diff := cmp.Diff(want, hostfstest.ErrorLines(&s, fs.Root)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	for _, e := range s.Manifest.Errors {
		if !strings.Contains(e.Message, "--live-sources on") || !strings.Contains(e.Message, "--path.procfs") {
			t.Errorf("%s: message does not say why and what to pass: %s", e.Collector, e.Message)
		}
	}
	for _, m := range s.Storage.Mounts {
		if m.FscryptStatus != "" {
			t.Errorf("%s: fscrypt status %q from an ioctl on this host", m.MountPoint, m.FscryptStatus)
		}
	}
	for _, d := range s.Storage.BlockDevices {
		if d.DM != nil && (len(d.DM.Targets) > 0 || !strings.Contains(d.DM.TableNotRead, "live-only source not used")) {
			t.Errorf("%s: dm %+v: want no table and why", d.Name, d.DM)
		}
		if d.Loop != nil && (d.Loop.BackingDevice != "" || d.Loop.BackingFile != "/data/disk.img" || !d.Loop.DirectIO) {
			t.Errorf("%s: loop %+v: want the tree's attributes and no device number from this host", d.Name, d.Loop)
		}
	}
}

// TestSysBlockFallback: a tree without /sys/class/block is read from
// /sys/block, partitions from the disk's subdirectories.
func TestSysBlockFallback(t *testing.T) {
	fs := materialise(t, "sysblock.txtar")
	var s snapshot.Snapshot
	(&Collector{FS: fs}).Collect(context.Background(), &s)
	var got []string
	for _, d := range s.Storage.BlockDevices {
		got = append(got, fmt.Sprintf("%s %s %s parent=%s slaves=%v", d.Name, d.MajorMinor, d.Kind, d.Parent, d.Slaves))
	}
	want := []string{
		"dm-5 253:5 dm parent= slaves=[sda1]",
		"sda 8:0 disk parent= slaves=[]",
		"sda1 8:1 partition parent=sda slaves=[]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	// md0 has no dev (as in the captured fixtures): skipped, and said.
	// dm-5's table is a live-only source: not read for a tree.
	wantErrs := []string{"storage.block missing sys/block/md0/dev", "storage.dm skipped dev/mapper/control"}
	if diff := cmp.Diff(wantErrs, hostfstest.ErrorLines(&s, fs.Root)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// TestMountInfoOfPID1: under a proc root that is not this process's own,
// self/mountinfo would be this process's mounts (a DaemonSet's container),
// so PID 1's table is read when the tree has one (node_exporter's captured
// tree has only proc/1/mountinfo).
func TestMountInfoOfPID1(t *testing.T) {
	dir := t.TempDir()
	fs := hostfs.New(dir)
	writeFile := func(rel, content string) {
		t.Helper()
		hostfstest.WriteFile(t, dir, rel, content)
	}
	writeFile("proc/self/mountinfo", "30 1 0:40 / / rw - overlay overlay rw\n")
	writeFile("proc/1/mountinfo", "22 1 8:1 / / rw - xfs /dev/sda1 rw\n")
	mounts, _, err := readMountInfo(fs)
	if err != nil || len(mounts) != 1 || mounts[0].FSType != "xfs" {
		t.Errorf("mounts %+v, %v: want PID 1's xfs root", mounts, err)
	}
	if got := mountInfoPath(hostfs.Default()); got != "/proc/self/mountinfo" {
		t.Errorf("own /proc: %s, want self", got)
	}
}
