package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/collect/blocksig"
	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/collect/host"
	"github.com/slowpath/slowpath/internal/collect/sampler"
	"github.com/slowpath/slowpath/internal/collect/storage"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/units"
	"github.com/slowpath/slowpath/internal/workload/fio"
)

// TargetError is a target that could not be prepared or was refused:
// Target is the directory or device as given, so a command can name it
// by its flag.
type TargetError struct {
	Device  bool // a block device, else a directory
	Refused bool // refused by policy (in use, holds data, the root disk)
	Target  string
	Err     error
}

func (e *TargetError) Error() string { return e.Named("directory", "device").Error() }

// Named is the error with the target called what the caller calls it (a
// command: its --dir and --device flags); it wraps Err.
func (e *TargetError) Named(dir, device string) error {
	what := dir
	if e.Device {
		what = device
	}
	if e.Refused {
		return fmt.Errorf("refusing %s %s: %w", what, e.Target, e.Err)
	}
	return fmt.Errorf("%s: %w", what, e.Err)
}

func (e *TargetError) Unwrap() error { return e.Err }

// target is a run's prepared Target: its own subdirectory of the
// directory, or a block device.
type target struct {
	given   string // Target.Dir or Target.Device as given
	kind    string // "dir" or "block"
	workDir string // the run's own directory of data files ("" for a device)
	// phaseDir holds job files, fio's JSON and logs: workDir, or a private
	// temporary directory for a device.
	phaseDir string
	device   string // /dev/NAME for a device run
	devName  string
	dev      uint64 // st_dev of the directory, st_rdev of the device
	devices  []sampler.Device
	snap     *snapshot.Snapshot
	// claim is the exclusive open of a device run, held until cleanup.
	claim *os.File

	once       sync.Once
	cleanupErr error
}

func prepareTarget(fs hostfs.FS, t Target) (*target, error) {
	switch {
	case t.Dir == "" && t.Device == "":
		return nil, errors.New("the run has no target: give a directory or a block device")
	case t.Dir != "" && t.Device != "":
		return nil, errors.New("the run has a directory and a block device as target: give one")
	case t.Device != "":
		return prepareDevice(fs, t.Device, t.Created)
	}
	dir, err := filepath.Abs(t.Dir)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, &TargetError{Target: t.Dir, Err: err}
	}
	if !fi.IsDir() {
		return nil, &TargetError{Target: t.Dir, Err: fmt.Errorf("%s is not a directory", dir)}
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return nil, &TargetError{Target: t.Dir, Err: err}
	}
	work, err := os.MkdirTemp(dir, "slowpath-bench-")
	if err != nil {
		return nil, fmt.Errorf("create the run's directory in %s: %w", dir, err)
	}
	return &target{given: t.Dir, kind: "dir", workDir: work, phaseDir: work, dev: st.Dev}, nil
}

// prepareDevice checks that a device is expendable: refused when mounted,
// holding a signature, part of a dm/md stack or the root disk, unless
// created says the caller made it for the run. The caller has the user's
// consent to overwrite it (bench --destroy-data, lab crypt's own mapping).
func prepareDevice(fs hostfs.FS, device string, created bool) (*target, error) {
	var st unix.Stat_t
	if err := unix.Stat(device, &st); err != nil {
		return nil, &TargetError{Device: true, Target: device, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return nil, &TargetError{Device: true, Target: device, Err: fmt.Errorf("%s is not a block device", device)}
	}
	mm := fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	// The policy on what the storage collector says (mounted, the root
	// disk, partitions, dm/md stacks), before the device is opened at all.
	s := &snapshot.Snapshot{}
	storage.Collect(context.Background(), fs, s)
	if err := refuseDevice(s, mm, "", nil); err != nil && !created {
		return nil, &TargetError{Device: true, Refused: true, Target: device, Err: err}
	}
	// First line: an exclusive claim, held until the run's cleanup. The
	// kernel refuses it (EBUSY) while anything else has the device: a
	// mount, a dm or md device on it, or any exclusive opener (a Ceph OSD,
	// a ZFS pool, LVM tools) that no on-disk signature may show.
	// A created device that a device-mapper or md device holds is used
	// unclaimed: lab crypt's plain side is its ramdisk, which the lab's
	// own dm-crypt mappings hold open exclusively for the whole experiment
	// (the kernel refuses the claim with EBUSY), and the lab's host lock
	// keeps other labs off it. Any other exclusive opener still refuses it.
	claim, err := ClaimDevice(fs, device, mm)
	if err != nil && !(created && heldByStack(s, mm)) {
		return nil, &TargetError{Device: true, Refused: true, Target: device, Err: err}
	}
	// Second line: the first bytes' signatures.
	if !created {
		sig, sigErr := blocksig.ProbeDevice(device)
		if err := refuseDevice(s, mm, sig, sigErr); err != nil {
			claim.Close()
			return nil, &TargetError{Device: true, Refused: true, Target: device, Err: err}
		}
	}
	tmp, err := os.MkdirTemp("", "slowpath-bench-")
	if err != nil {
		claim.Close()
		return nil, err
	}
	name := ""
	if s.Storage != nil {
		for _, d := range s.Storage.BlockDevices {
			if d.MajorMinor == mm {
				name = d.Name
			}
		}
	}
	return &target{given: device, kind: "block", phaseDir: tmp, device: device, devName: name, dev: st.Rdev, snap: s, claim: claim}, nil
}

// heldByStack reports whether a dm or md device holds the device mm. A
// created device held so (lab crypt's plain side: the ramdisk under its
// own mappings) runs unclaimed; this host has no device-mapper, so
// test/vm TestCryptLab is where that runs, on every kernel.
func heldByStack(s *snapshot.Snapshot, mm string) bool {
	if s.Storage == nil {
		return false
	}
	for _, d := range s.Storage.BlockDevices {
		if d.MajorMinor == mm {
			return len(d.Holders) > 0
		}
	}
	return false
}

// ClaimDevice opens the block device dev (major:minor mm) with O_EXCL,
// which for a block device is an exclusive claim rather than a create
// flag (block/bdev.c, bdev_open: bd_prepare_to_claim returns -EBUSY while
// another holder has it). fio's own opens, not exclusive, still succeed.
// On EBUSY the error names the holder when sysfs or mountinfo tells.
func ClaimDevice(fs hostfs.FS, dev, mm string) (*os.File, error) {
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC, 0)
	if err == nil {
		return os.NewFile(uintptr(fd), dev), nil
	}
	if !errors.Is(err, unix.EBUSY) {
		return nil, fmt.Errorf("open it exclusively: %w", err)
	}
	name := filepath.Base(dev)
	if link, lerr := os.Readlink(fs.SysPath("dev", "block", mm)); lerr == nil {
		name = filepath.Base(link)
	}
	if hs, _ := os.ReadDir(fs.SysPath("class", "block", name, "holders")); len(hs) > 0 {
		var names []string
		for _, h := range hs {
			names = append(names, h.Name())
		}
		return nil, fmt.Errorf("%s is in use: held by %s (a device-mapper or md device on it)", name, strings.Join(names, ", "))
	}
	if mnts := mountsOf(fs, mm); len(mnts) > 0 {
		return nil, fmt.Errorf("%s is in use: %s is mounted at %s", name, name, strings.Join(mnts, ", "))
	}
	return nil, fmt.Errorf("%s is in use: another process has it open exclusively (a filesystem, Ceph OSD, ZFS pool or LVM tool; see fuser -v %s)", name, dev)
}

// mountsOf lists the mount points of major:minor mm in the mount table
// (collect/storage's mountinfo reader, unescaped).
func mountsOf(fs hostfs.FS, mm string) []string {
	mounts, err := storage.MountTable(fs)
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range mounts {
		if m.MajorMinor == mm {
			out = append(out, m.MountPoint)
		}
	}
	return out
}

// refuseDevice is the policy: why the device with major:minor mm must not
// be overwritten, or nil.
func refuseDevice(s *snapshot.Snapshot, mm, sig string, sigErr error) error {
	if s.Storage == nil {
		return errors.New("the storage collector read nothing: cannot tell whether the device is in use")
	}
	var dev *snapshot.BlockDevice
	byName := map[string]*snapshot.BlockDevice{}
	for i := range s.Storage.BlockDevices {
		d := &s.Storage.BlockDevices[i]
		byName[d.Name] = d
		if d.MajorMinor == mm {
			dev = d
		}
	}
	if dev == nil {
		return fmt.Errorf("device %s is not in /sys/block", mm)
	}
	// The device and its partitions.
	family := map[string]bool{dev.Name: true}
	for _, d := range s.Storage.BlockDevices {
		if d.Parent == dev.Name {
			family[d.Name] = true
		}
	}
	for _, m := range s.Storage.Mounts {
		for n := range family {
			if d := byName[n]; d != nil && d.MajorMinor == m.MajorMinor {
				return fmt.Errorf("%s is mounted at %s", n, m.MountPoint)
			}
		}
	}
	if root := rootDisks(s); root[dev.Name] || (dev.Parent != "" && root[dev.Parent]) {
		return fmt.Errorf("%s holds the root filesystem", dev.Name)
	}
	for n := range family {
		d := byName[n]
		if len(d.Holders) > 0 {
			return fmt.Errorf("%s is part of a device-mapper or md stack (held by %s)", n, strings.Join(d.Holders, ", "))
		}
		if n != dev.Name {
			return fmt.Errorf("%s has partitions (%s)", dev.Name, n)
		}
	}
	if len(dev.Slaves) > 0 || dev.DM != nil || dev.MD != nil {
		return fmt.Errorf("%s is a device-mapper or md device built on %s: benchmark a directory on it instead", dev.Name, strings.Join(dev.Slaves, ", "))
	}
	if sigErr != nil {
		return fmt.Errorf("cannot read its first bytes to look for a filesystem: %w", sigErr)
	}
	if sig != "" {
		return fmt.Errorf("%s holds a %s (wipe it first if it is really expendable: wipefs -a /dev/%s)", dev.Name, sig, dev.Name)
	}
	return nil
}

// rootDisks names every device under the root filesystem, down to disks.
func rootDisks(s *snapshot.Snapshot) map[string]bool {
	out := map[string]bool{}
	for _, p := range storagemodel.Build(s).Paths {
		if p.MountPoint != "/" {
			continue
		}
		for _, l := range p.Layers {
			if l.Device != "" {
				out[l.Device] = true
			}
		}
	}
	// Whole disks of root partitions too.
	for _, d := range s.Storage.BlockDevices {
		if out[d.Name] && d.Parent != "" {
			out[d.Parent] = true
		}
	}
	return out
}

// checkSpace refuses a run that would not fit, with the numbers and what
// to do (lower --scale, unless the size is not the user's choice).
func (t *target) checkSpace(need uint64, remedy string) error {
	if need == 0 {
		return nil
	}
	if t.kind == "block" {
		if t.snap.Storage == nil {
			return nil
		}
		for _, d := range t.snap.Storage.BlockDevices {
			if d.Name == t.devName && d.SizeBytes < need {
				return fmt.Errorf("%s has %s; this run writes up to %s: %s", t.device, units.Size(d.SizeBytes), units.Size(need), remedy)
			}
		}
		return nil
	}
	free, err := freeBytes(t.workDir)
	if err != nil {
		return err
	}
	// 5% and 64 MiB to spare: the filesystem's metadata and other writers.
	want := need + need/20 + 64<<20
	if free < want {
		return fmt.Errorf("not enough free space in %s: this run writes up to %s (with margin %s), %s free: %s or free space",
			t.given, units.Size(need), units.Size(want), units.Size(free), remedy)
	}
	return nil
}

func freeBytes(dir string) (uint64, error) {
	var sf unix.Statfs_t
	if err := unix.Statfs(dir, &sf); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return sf.Bavail * uint64(sf.Bsize), nil
}

// cleanup removes the run's directory once; safe to call again.
func (t *target) cleanup() error {
	t.once.Do(func() {
		dir := t.workDir
		if dir == "" {
			dir = t.phaseDir
		}
		if dir != "" {
			t.cleanupErr = os.RemoveAll(dir)
		}
		if t.claim != nil {
			t.claim.Close()
		}
	})
	return t.cleanupErr
}

// environment gathers the facts for the result: host, cloud and the
// storage model's path of the target, whose block devices the sampler
// watches.
func environment(ctx context.Context, fs hostfs.FS, co cloud.Options, t *target) benchresult.Environment {
	e := benchresult.Environment{GoVersion: runtime.Version()}
	e.Hostname, _ = os.Hostname()
	if v, err := fio.Version(ctx); err == nil {
		e.FioVersion = v
	}
	s := t.snap
	if s == nil {
		s = &snapshot.Snapshot{}
		storage.Collect(ctx, fs, s)
	}
	host.Collect(fs, s)
	cloud.Collect(ctx, co, s)
	e.Host, e.Cloud = s.Host, s.Cloud
	for _, me := range s.Manifest.Errors {
		if strings.HasPrefix(me.Collector, "cloud") {
			e.Problems = append(e.Problems, fmt.Sprintf("%s: %s", me.Path, me.Message))
		}
	}
	tp := &benchresult.TargetPath{Path: t.given}
	if t.workDir != "" {
		tp.Path, _ = filepath.Abs(t.given)
		tp.FreeBytes, _ = freeBytes(t.workDir)
	}
	m := storagemodel.Build(s)
	mm := fmt.Sprintf("%d:%d", unix.Major(t.dev), unix.Minor(t.dev))
	for i := range m.Paths {
		p := &m.Paths[i]
		if match(p, t, mm) {
			tp.Storage = p.Record()
			tp.MountPoint = p.MountPoint
			for _, l := range p.Layers {
				if l.Kind == storagemodel.LayerFilesystem {
					tp.FSType = l.FSType
				}
				if l.Device != "" {
					t.devices = append(t.devices, sampler.Device{Name: l.Device, Layer: l.Kind, Depth: l.Depth})
				}
			}
			break
		}
	}
	if tp.Storage == nil && s.Storage != nil {
		// A virtual filesystem (tmpfs) has no device path; say what it is.
		for _, mt := range s.Storage.Mounts {
			if mt.MajorMinor == mm && strings.HasPrefix(tp.Path+"/", strings.TrimSuffix(mt.MountPoint, "/")+"/") && len(mt.MountPoint) >= len(tp.MountPoint) {
				tp.MountPoint, tp.FSType = mt.MountPoint, mt.FSType
			}
		}
		e.Problems = append(e.Problems, fmt.Sprintf("no block device path for %s (%s): where the time went has CPU only", t.given, tp.FSType))
	}
	sort.SliceStable(t.devices, func(i, j int) bool { return t.devices[i].Depth < t.devices[j].Depth })
	e.Target = tp
	return e
}

func match(p *storagemodel.Path, t *target, mm string) bool {
	if t.kind == "block" {
		return p.MountPoint == "" && p.Device == t.devName
	}
	for _, l := range p.Layers {
		if l.Kind == storagemodel.LayerFilesystem && l.MajorMinor == mm {
			return true
		}
	}
	return false
}
