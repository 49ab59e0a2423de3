package experiment

import (
	"errors"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// fixtureHost is a snapshot with a root disk (vda, ext4 on /), a spare disk with a
// partition, a dm-crypt stack on sdc and a blank disk sdd.
func fixtureHost() *snapshot.Snapshot {
	return &snapshot.Snapshot{Storage: &snapshot.Storage{
		BlockDevices: []snapshot.BlockDevice{
			{Name: "vda", MajorMinor: "254:0", Kind: snapshot.KindDisk, SizeBytes: 1 << 40},
			{Name: "sdb", MajorMinor: "8:16", Kind: snapshot.KindDisk, SizeBytes: 1 << 30},
			{Name: "sdb1", MajorMinor: "8:17", Kind: snapshot.KindPartition, Parent: "sdb", SizeBytes: 1 << 29},
			{Name: "sdc", MajorMinor: "8:32", Kind: snapshot.KindDisk, Holders: []string{"dm-0"}, SizeBytes: 1 << 30},
			{Name: "dm-0", MajorMinor: "253:0", Kind: snapshot.KindDM, Slaves: []string{"sdc"}, DM: &snapshot.DM{Name: "crypt"}, SizeBytes: 1 << 30},
			{Name: "sdd", MajorMinor: "8:48", Kind: snapshot.KindDisk, SizeBytes: 1 << 30},
			{Name: "sde", MajorMinor: "8:64", Kind: snapshot.KindDisk, SizeBytes: 1 << 30},
		},
		Mounts: []snapshot.Mount{
			{MountPoint: "/", MajorMinor: "254:0", FSType: "ext4", Root: "/"},
			{MountPoint: "/data", MajorMinor: "8:64", FSType: "xfs", Root: "/"},
		},
	}}
}

func TestRefuseDevice(t *testing.T) {
	for _, tt := range []struct {
		mm, sig string
		sigErr  error
		want    string // "" = allowed
	}{
		{mm: "254:0", want: "vda is mounted at /"},
		{mm: "8:64", want: "sde is mounted at /data"},
		{mm: "8:16", want: "sdb has partitions (sdb1)"},
		{mm: "8:32", want: "part of a device-mapper or md stack (held by dm-0)"},
		{mm: "253:0", want: "dm-0 is a device-mapper or md device built on sdc"},
		{mm: "8:48", sig: "ext2/3/4 filesystem", want: "sdd holds a ext2/3/4 filesystem (wipe it first"},
		{mm: "8:48", sigErr: errors.New("EIO"), want: "cannot read its first bytes"},
		{mm: "9:9", want: "not in /sys/block"},
		{mm: "8:48"},
	} {
		err := refuseDevice(fixtureHost(), tt.mm, tt.sig, tt.sigErr)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.mm, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want %q", tt.mm, err, tt.want)
		}
	}
	// The root disk is refused even when / is on a partition of it and the
	// disk itself is not mounted.
	s := fixtureHost()
	s.Storage.BlockDevices = append(s.Storage.BlockDevices, snapshot.BlockDevice{Name: "nvme0n1", MajorMinor: "259:0", Kind: snapshot.KindDisk},
		snapshot.BlockDevice{Name: "nvme0n1p1", MajorMinor: "259:1", Kind: snapshot.KindPartition, Parent: "nvme0n1"})
	s.Storage.Mounts[0].MajorMinor = "259:1"
	if err := refuseDevice(s, "259:0", "", nil); err == nil || !strings.Contains(err.Error(), "mounted") && !strings.Contains(err.Error(), "root") {
		t.Errorf("root disk: %v", err)
	}
	if err := refuseDevice(&snapshot.Snapshot{}, "8:48", "", nil); err == nil {
		t.Error("no storage section: allowed")
	}
}
