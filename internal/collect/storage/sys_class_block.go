package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// readBlockDevices reads every entry of <sys>/class/block
// (Documentation/ABI/stable/sysfs-block). One unreadable device does not
// stop the others; its problems are recorded under "storage.block".
func readBlockDevices(fs hostfs.FS, s *snapshot.Snapshot) []snapshot.BlockDevice {
	dir := fs.SysPath("class", "block")
	ents, err := listClassBlock(dir)
	if hostfs.Classify(err) == hostfs.KindMissing {
		// Older layout, as captured trees have it (sys_block.go).
		if alt, altErr := listSysBlock(fs.SysPath("block")); altErr == nil {
			ents, err = alt, nil
		}
	}
	if err != nil {
		s.AddError("storage.block", dir, fmt.Errorf("list block devices: %w", err))
		return nil
	}
	var out []snapshot.BlockDevice
	for _, e := range ents {
		d, errs := readBlockDevice(fs, e)
		for _, pe := range errs {
			s.AddError("storage.block", pe.path, pe.err)
		}
		if d != nil {
			out = append(out, *d)
		}
	}
	return out
}

// pathError pairs an error with the file it concerns, for the manifest.
type pathError struct {
	path string
	err  error
}

// attrReader reads attributes of one sysfs directory and remembers what
// went wrong. Absent optional attributes are quiet: kernels and drivers
// differ in what they expose.
type attrReader struct {
	dir  string
	errs []pathError
}

// read returns the trimmed attribute, "" and false when absent or broken.
func (a *attrReader) read(name string, required bool) (string, bool) {
	p := filepath.Join(a.dir, name)
	v, err := hostfs.ReadValue(p)
	if err != nil {
		if required || hostfs.Classify(err) != hostfs.KindMissing {
			a.errs = append(a.errs, pathError{p, err})
		}
		return "", false
	}
	return v, true
}

func (a *attrReader) uint(name string, required bool) (uint64, bool) {
	v, ok := a.read(name, required)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		p := filepath.Join(a.dir, name)
		a.errs = append(a.errs, pathError{p, fmt.Errorf("%s: not an unsigned number: %q", p, v)})
		return 0, false
	}
	return n, true
}

func (a *attrReader) bool(name string) (bool, bool) {
	v, ok := a.uint(name, false)
	return v != 0, ok
}

// list returns the entry names of a subdirectory (slaves/, holders/).
func (a *attrReader) list(name string) []string {
	p := filepath.Join(a.dir, name)
	ents, err := os.ReadDir(p)
	if err != nil {
		if hostfs.Classify(err) != hostfs.KindMissing {
			a.errs = append(a.errs, pathError{p, fmt.Errorf("list %s: %w", p, err)})
		}
		return nil
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func (a *attrReader) exists(name string) bool {
	_, err := os.Stat(filepath.Join(a.dir, name))
	return err == nil
}

// readBlockDevice reads /sys/class/block/NAME. It returns nil when even
// the device number cannot be read: without it nothing can refer to the
// device.
func readBlockDevice(fs hostfs.FS, e blockEntry) (*snapshot.BlockDevice, []pathError) {
	name := e.name
	a := &attrReader{dir: e.dir}
	mm, ok := a.read("dev", true)
	if !ok {
		return nil, a.errs
	}
	if !validMajorMinor(mm) {
		p := filepath.Join(a.dir, "dev")
		return nil, append(a.errs, pathError{p, fmt.Errorf("%s: not MAJOR:MINOR: %q", p, mm)})
	}
	d := &snapshot.BlockDevice{Name: name, MajorMinor: mm}
	// The class entry is a symlink into /sys/devices; its target names the
	// bus (transport) and, for a partition, the disk directory above it.
	link, _ := os.Readlink(a.dir)

	if sectors, ok := a.uint("size", true); ok {
		// sysfs size is always in 512-byte units, whatever the logical
		// block size (include/linux/blk_types.h SECTOR_SHIFT).
		d.SizeBytes = sectors * 512
	}
	d.ReadOnly, _ = a.bool("ro")
	d.Removable, _ = a.bool("removable")
	d.Slaves = a.list("slaves")
	d.Holders = a.list("holders")
	d.Stat = readBlockStat(a)

	d.Kind = blockKind(name, a)
	if d.Kind == snapshot.KindPartition {
		d.Parent = partitionParent(link)
		if d.Parent == "" {
			d.Parent = e.parent // a /sys/block listing knows it
		}
		if d.Parent == "" {
			p := a.dir
			a.errs = append(a.errs, pathError{p, fmt.Errorf("%s: partition without a parent disk in its sysfs link %q", p, link)})
		}
	} else {
		d.Queue = readQueue(a)
	}
	switch d.Kind {
	case snapshot.KindDM:
		name, _ := a.read("dm/name", true)
		uuid, _ := a.read("dm/uuid", false)
		d.DM = &snapshot.DM{Name: name, UUID: uuid}
	case snapshot.KindMD:
		if lvl, ok := a.read("md/level", false); ok {
			d.MD = &snapshot.MD{Level: lvl}
		}
	case snapshot.KindLoop:
		d.Loop = readLoop(fs, a)
	case snapshot.KindDisk:
		d.Ident = readIdentity(a, link)
	}
	return d, a.errs
}

// blockKind classifies a device by the sysfs subdirectories its driver
// creates (dm/, md/, loop/, partition) and by the kernel names of drivers
// that create none when idle (loop, zram, brd's ram).
func blockKind(name string, a *attrReader) string {
	switch {
	case a.exists("partition"):
		return snapshot.KindPartition
	case strings.HasPrefix(name, "dm-") || a.exists("dm"):
		return snapshot.KindDM
	case strings.HasPrefix(name, "md") && a.exists("md"):
		return snapshot.KindMD
	case strings.HasPrefix(name, "loop"):
		return snapshot.KindLoop
	case strings.HasPrefix(name, "zram"):
		return snapshot.KindZram
	case strings.HasPrefix(name, "ram"):
		return snapshot.KindRAM
	}
	if devtype, ok := a.read("uevent", false); ok && !strings.Contains(devtype, "DEVTYPE=disk") {
		return snapshot.KindOther
	}
	return snapshot.KindDisk
}

// partitionParent returns the disk directory above a partition in its
// sysfs link: ../../devices/pci0000:00/.../block/vda/vda1 -> vda.
func partitionParent(link string) string {
	if link == "" {
		return ""
	}
	parent := filepath.Base(filepath.Dir(link))
	if parent == "block" || parent == "." || parent == "/" || parent == ".." {
		return ""
	}
	return parent
}

// readQueue reads the request queue attributes
// (Documentation/ABI/stable/sysfs-block, /sys/block/<disk>/queue/*).
// Bio-based drivers (zram, brd, dm) lack scheduler and nr_requests.
func readQueue(a *attrReader) *snapshot.Queue {
	if !a.exists("queue") {
		return nil
	}
	q := &snapshot.Queue{}
	if v, ok := a.bool("queue/rotational"); ok {
		q.Rotational = &v
	}
	if v, ok := a.uint("queue/logical_block_size", false); ok {
		q.LogicalBlockSize = int(v)
	}
	if v, ok := a.uint("queue/physical_block_size", false); ok {
		q.PhysicalBlockSize = int(v)
	}
	if v, ok := a.read("queue/scheduler", false); ok {
		active, all, err := parseScheduler(v)
		if err != nil {
			p := filepath.Join(a.dir, "queue/scheduler")
			a.errs = append(a.errs, pathError{p, fmt.Errorf("%s: %w", p, err)})
		}
		q.Scheduler, q.Schedulers = active, all
	}
	if v, ok := a.uint("queue/nr_requests", false); ok {
		q.NrRequests = int(v)
	}
	if v, ok := a.uint("queue/read_ahead_kb", false); ok {
		q.ReadAheadKB = int(v)
	}
	return q
}

// errScheduler marks queue/scheduler text that names no active scheduler.
var errScheduler = errors.New("cannot tell the active scheduler")

// parseScheduler parses queue/scheduler: "none [mq-deadline] kyber" lists
// the available elevators with the active one in brackets
// (block/elevator.c elv_iosched_show). A queue without elevator support
// prints just "none".
func parseScheduler(s string) (active string, all []string, err error) {
	f := strings.Fields(s)
	for _, w := range f {
		if len(w) > 2 && w[0] == '[' && w[len(w)-1] == ']' {
			w = w[1 : len(w)-1]
			if active != "" {
				return "", nil, fmt.Errorf("%w: two bracketed entries in %q", errScheduler, s)
			}
			active = w
		}
		all = append(all, w)
	}
	if active == "" {
		if len(f) != 1 {
			return "", all, fmt.Errorf("%w: no bracketed entry in %q", errScheduler, s)
		}
		active = f[0]
	}
	return active, all, nil
}

// readLoop reads /sys/block/loopN/loop (drivers/block/loop.c loop_attrs),
// present only while a file is bound. An unbound loop device returns nil:
// nothing about a backing file is invented.
func readLoop(fs hostfs.FS, a *attrReader) *snapshot.Loop {
	if !a.exists("loop") {
		return nil
	}
	l := &snapshot.Loop{}
	l.BackingFile, _ = a.read("loop/backing_file", true)
	l.Offset, _ = a.uint("loop/offset", false)
	l.DirectIO, _ = a.bool("loop/dio")
	if l.BackingFile == "" {
		return l
	}
	// The kernel appends " (deleted)" to an unlinked file (d_path).
	path := l.BackingFile
	if strings.HasSuffix(path, " (deleted)") {
		a.errs = append(a.errs, pathError{filepath.Join(a.dir, "loop/backing_file"),
			fmt.Errorf("backing file %s was deleted; the filesystem holding it cannot be found by path", strings.TrimSuffix(path, " (deleted)"))})
		return l
	}
	// The path is as the process that bound it saw it; under a different
	// mount namespace this stat can miss. stat(2) answers with this
	// kernel's device numbers: only for live roots (hostfs live.go).
	full := fs.RootPath(path)
	if !fs.Live {
		a.errs = append(a.errs, pathError{full, fmt.Errorf("stat backing file: %w", fs.NotLive())})
		return l
	}
	var st unix.Stat_t
	if err := unix.Stat(full, &st); err != nil {
		a.errs = append(a.errs, pathError{full, &os.PathError{Op: "stat backing file", Path: full, Err: err}})
		return l
	}
	l.BackingDevice = fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	if st.Mode&unix.S_IFMT == unix.S_IFBLK {
		l.BackingBlockDevice = fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	}
	return l
}

// readIdentity reads what a whole disk says it is: the transport from its
// sysfs path and the vendor, model and firmware its driver exports under
// device/ (SCSI: vendor, model, rev; NVMe controller: model, firmware_rev).
func readIdentity(a *attrReader, link string) *snapshot.Identity {
	id := &snapshot.Identity{Transport: transportFromLink(link)}
	if id.Transport == "" || id.Transport == "virtio" {
		// virtio-blk exports only PCI-style numeric ids; no names.
		if id.Transport == "" {
			return nil
		}
		return id
	}
	id.Vendor, _ = a.read("device/vendor", false)
	id.Model, _ = a.read("device/model", false)
	if fw, ok := a.read("device/firmware_rev", false); ok {
		id.Firmware = fw
	} else {
		id.Firmware, _ = a.read("device/rev", false)
	}
	readCloudIdentity(a, link, id)
	return id
}

// transportFromLink names the bus from the device path a class/block link
// points to, e.g.
//
//	../../devices/pci0000:00/0000:00:02.0/virtio1/block/vda           virtio
//	../../devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1            nvme
//	../../devices/virtual/nvme-subsystem/nvme-subsys0/nvme0n1           nvme
//	../../devices/virtual/nvme-fabrics/ctl/nvme4/nvme4n1                 nvme (over fabrics)
//	../../devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/...    ata
//	.../VMBUS:00/<guid>/host0/target0:0:0/0:0:0:0/block/sda             scsi
//	../../devices/vbd-51712/block/xvda                                  xen
//
// A disk under devices/virtual has no transport ("").
func transportFromLink(link string) string {
	parts := strings.Split(filepath.ToSlash(link), "/")
	has := func(pred func(string) bool) bool { return slices.ContainsFunc(parts, pred) }
	switch {
	case has(func(p string) bool { return p == "nvme" || p == "nvme-fabrics" || strings.HasPrefix(p, "nvme-subsys") }):
		return "nvme"
	case has(func(p string) bool { return strings.HasPrefix(p, "virtio") }):
		// virtio-scsi puts a SCSI host under the virtio device.
		if has(isSCSIHost) {
			return "scsi"
		}
		return "virtio"
	case has(func(p string) bool { return strings.HasPrefix(p, "mmc_host") }):
		return "mmc"
	case has(func(p string) bool { return strings.HasPrefix(p, "usb") }):
		return "usb"
	case has(func(p string) bool { return strings.HasPrefix(p, "ata") && isDigits(p[3:]) }):
		return "ata"
	case has(func(p string) bool { return strings.HasPrefix(p, "vbd-") }):
		return "xen"
	case has(isSCSIHost):
		return "scsi"
	}
	return ""
}

func isSCSIHost(p string) bool { return strings.HasPrefix(p, "host") && isDigits(p[4:]) }

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
