package storagecheck

import (
	"fmt"
	"testing"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// bigSnapshot is a host with n NVMe disks, each with a partition, a LUKS2
// crypt target and an LVM-style linear target on top, mounted: 2n dm devices.
func bigSnapshot(n int) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Manifest: snapshot.Manifest{FormatVersion: 1},
		Host: &snapshot.Host{KernelRelease: "6.1.0-28-amd64", CPUFlags: []string{"aes", "avx2"}}, Storage: &snapshot.Storage{}}
	q := func() *snapshot.Queue {
		return &snapshot.Queue{Rotational: bptr(false), LogicalBlockSize: 512, PhysicalBlockSize: 4096, Scheduler: "none"}
	}
	for i := 0; i < n; i++ {
		disk, part := fmt.Sprintf("nvme%dn1", i), fmt.Sprintf("nvme%dn1p1", i)
		c, l := fmt.Sprintf("dm-%d", 2*i), fmt.Sprintf("dm-%d", 2*i+1)
		s.Storage.BlockDevices = append(s.Storage.BlockDevices,
			snapshot.BlockDevice{Name: disk, MajorMinor: fmt.Sprintf("259:%d", 2*i), Kind: snapshot.KindDisk, SizeBytes: 1 << 40, Queue: q(),
				Ident: &snapshot.Identity{Transport: "nvme", Model: "X"}},
			snapshot.BlockDevice{Name: part, MajorMinor: fmt.Sprintf("259:%d", 2*i+1), Kind: snapshot.KindPartition, Parent: disk, SizeBytes: 1 << 40, Holders: []string{c}},
			snapshot.BlockDevice{Name: c, MajorMinor: fmt.Sprintf("253:%d", 2*i), Kind: snapshot.KindDM, SizeBytes: 1 << 40, Slaves: []string{part}, Holders: []string{l}, Queue: q(),
				DM: &snapshot.DM{Name: fmt.Sprintf("crypt%d", i), UUID: "CRYPT-LUKS2-00-x",
					Targets: []snapshot.DMTarget{{Length: 1 << 31, Type: "crypt", Params: fmt.Sprintf("aes-xts-plain64 redacted:512 0 259:%d 32768", 2*i+1)}}}},
			snapshot.BlockDevice{Name: l, MajorMinor: fmt.Sprintf("253:%d", 2*i+1), Kind: snapshot.KindDM, SizeBytes: 1 << 40, Slaves: []string{c}, Queue: q(),
				DM: &snapshot.DM{Name: fmt.Sprintf("vg-lv%d", i), Targets: []snapshot.DMTarget{{Length: 1 << 31, Type: "linear", Params: fmt.Sprintf("253:%d 0", 2*i)}}}},
		)
		s.Storage.Mounts = append(s.Storage.Mounts, snapshot.Mount{MountID: i + 10, MajorMinor: fmt.Sprintf("253:%d", 2*i+1),
			Root: "/", MountPoint: fmt.Sprintf("/data/%d", i), FSType: "xfs", Source: "/dev/mapper/x"})
	}
	return s
}

// BenchmarkAnalyze512DM is the analysis half of doctor (model + every check)
// on a host with 512 device-mapper devices.
func BenchmarkAnalyze512DM(b *testing.B) {
	s := bigSnapshot(256)
	b.ReportAllocs()
	for b.Loop() {
		m := storagemodel.Build(s)
		fs := check.Run(&check.Input{Snapshot: s, Storage: m}, false)
		if len(fs) < 256 {
			b.Fatalf("%d findings, want a workqueue finding per crypt device", len(fs))
		}
	}
}
