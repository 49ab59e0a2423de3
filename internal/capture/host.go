package capture

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/procfs"
	"github.com/slowpath/slowpath/internal/bpf/iotrace"
	"github.com/slowpath/slowpath/internal/capture/capfile"
	"github.com/slowpath/slowpath/internal/collect/storage"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
	"golang.org/x/sys/unix"
)

// What a capture reads of the host before it starts: the mount and the
// block devices beneath it, and the system settings that shape its I/O.

// target is what the capture learnt of the host before it starts.
type target struct {
	manifest     *capfile.Manifest // all but what the run fills
	major, minor uint32            // the mount's device
	devs         []iotrace.BlockDevice
	mounts       []snapshot.Mount // the mount table, for the cgroup filter
}

// findTarget reads the mount opts.Mount names and the storage path beneath
// it as doctor models it, and starts the manifest.
func findTarget(ctx context.Context, opts Options) (*target, error) {
	mountAbs, err := filepath.Abs(opts.Mount)
	if err != nil {
		return nil, fmt.Errorf("mount point: %w", err)
	}
	snap := &snapshot.Snapshot{}
	storage.Collect(ctx, opts.FS, snap)
	mnt := findMount(snap, mountAbs)
	if mnt == nil {
		return nil, ErrNotMountPoint
	}
	t := &target{mounts: snap.Storage.Mounts}
	if _, err := fmt.Sscanf(mnt.MajorMinor, "%d:%d", &t.major, &t.minor); err != nil {
		return nil, fmt.Errorf("device %q: %w", mnt.MajorMinor, err)
	}
	m := &capfile.Manifest{
		SlowpathVersion: opts.SlowpathVersion,
		Status:          capfile.StatusComplete,
		Filters: capfile.Filters{PID: opts.PID, Comm: opts.Comm, MountDevice: mnt.MajorMinor,
			FSType: mnt.FSType, BlockOnly: opts.BlockOnly},
		Limits: capfile.Limits{DurationNS: uint64(opts.Duration), MaxRecords: opts.MaxRecords},
	}
	if opts.Cgroup != "" {
		var st unix.Stat_t
		if err := unix.Stat(opts.Cgroup, &st); err != nil {
			return nil, fmt.Errorf("cgroup %s: %w", opts.Cgroup, err)
		}
		m.Filters.CgroupID = st.Ino
	}
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	m.Kernel.Release = unix.ByteSliceToString(uts.Release[:])
	model := storagemodel.Build(snap)
	if model != nil {
		for i := range model.Paths {
			if model.Paths[i].MountPoint == mnt.MountPoint {
				m.Path = capfile.RedactPath(*model.Paths[i].Record())
				m.Devices, t.devs = devicesOf(opts.FS, &model.Paths[i])
				break
			}
		}
	}
	m.System = readSystem(opts.FS)
	t.manifest = m
	return t, nil
}

// findMount returns the mount whose mount point is dir; the last one
// mounted there wins, as it hides the others.
func findMount(s *snapshot.Snapshot, dir string) *snapshot.Mount {
	if s.Storage == nil {
		return nil
	}
	var found *snapshot.Mount
	for i := range s.Storage.Mounts {
		if s.Storage.Mounts[i].MountPoint == dir {
			found = &s.Storage.Mounts[i]
		}
	}
	return found
}

// devicesOf lists the block devices of a path whose requests are
// recorded: every layer with a device except partitions (their requests
// are the disk's). A device without blk-mq (no /sys/block/NAME/mq) is
// bio-based.
func devicesOf(fs hostfs.FS, p *storagemodel.Path) ([]capfile.Device, []iotrace.BlockDevice) {
	var out []capfile.Device
	var tr []iotrace.BlockDevice
	seen := map[string]bool{}
	for _, l := range p.Layers {
		if l.Device == "" || l.MajorMinor == "" || l.Kind == storagemodel.LayerPartition || seen[l.MajorMinor] {
			continue
		}
		var major, minor uint32
		if _, err := fmt.Sscanf(l.MajorMinor, "%d:%d", &major, &minor); err != nil {
			continue
		}
		seen[l.MajorMinor] = true
		id := uint32(len(out) + 1)
		_, err := os.Stat(fs.SysPath("block", l.Device, "mq"))
		bio := err != nil
		d := capfile.Device{ID: id, Name: l.Device, MajorMinor: l.MajorMinor, Kind: l.Kind, Source: capfile.BlockSourceRq}
		if bio {
			d.Source = capfile.BlockSourceBio
		}
		if v, err := hostfs.ReadValue(fs.SysPath("block", l.Device, "queue", "read_ahead_kb")); err == nil {
			var kb uint64
			if _, err := fmt.Sscanf(v, "%d", &kb); err == nil {
				d.ReadaheadKB = &kb
			}
		}
		out = append(out, d)
		tr = append(tr, iotrace.BlockDevice{Major: major, Minor: minor, ID: id, Bio: bio})
	}
	return out, tr
}

var sysctlNames = []string{"vm.dirty_ratio", "vm.dirty_background_ratio", "vm.dirty_bytes", "vm.dirty_background_bytes",
	"vm.dirty_expire_centisecs", "vm.dirty_writeback_centisecs", "vm.page-cluster"}

func readSystem(fs hostfs.FS) capfile.System {
	s := capfile.System{PageSize: uint64(os.Getpagesize()), Sysctls: map[string]string{}}
	for _, n := range sysctlNames {
		if v, err := hostfs.ReadValue(fs.ProcPath(append([]string{"sys"}, strings.Split(n, ".")...)...)); err == nil {
			s.Sysctls[n] = v
		}
	}
	pfs, err := procfs.NewFS(fs.Proc)
	if err != nil {
		return s
	}
	mi, err := pfs.Meminfo()
	if err != nil {
		return s
	}
	kB := func(v *uint64) uint64 {
		if v == nil {
			return 0
		}
		return *v << 10
	}
	s.MemTotalBytes, s.MemAvailableBytes = kB(mi.MemTotal), kB(mi.MemAvailable)
	s.CachedBytes, s.DirtyBytes = kB(mi.Cached), kB(mi.Dirty)
	return s
}

// uringState says whether io_uring I/O is captured on this host: not where
// the kernel's tracepoints do not name the request (before 6.1), and
// nothing to capture where kernel.io_uring_disabled is 2 (no ring can be
// set up; Documentation/admin-guide/sysctl/kernel.rst, 6.6+; 1 still lets
// io_uring_group use it). A kernel built without io_uring has no io_uring
// tracepoints either: that reads as no tracepoints.
func uringState(fs hostfs.FS, hasTracepoints bool) string {
	if v, err := hostfs.ReadValue(fs.ProcPath("sys", "kernel", "io_uring_disabled")); err == nil && v == "2" {
		return capfile.AsyncDisabled
	}
	if !hasTracepoints {
		return capfile.AsyncNoTracepoints
	}
	return capfile.AsyncCaptured
}
