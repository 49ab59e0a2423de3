package cryptbench

import (
	"fmt"
	"time"

	"github.com/prometheus/procfs"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/lab/cryptlab"
	"github.com/slowpath/slowpath/internal/workload/profile"
)

// defaultRAM is the ramdisk of the fio profiles, which run over the whole
// device and fit any size.
const defaultRAM = 1 << 30

// Sizing is what the backing is sized for besides the profile.
type Sizing struct {
	NumCPU int
	// MemAvailable is /proc/meminfo's MemAvailable in bytes; 0: unknown
	// (no refusal for memory).
	MemAvailable uint64
	// Filesystem is the one the profile runs on; nil: the raw device.
	Filesystem *cryptlab.Filesystem
	// Scale is the bench profiles' --scale; 0 is 1.
	Scale float64
}

func (z Sizing) scale() float64 {
	if z.Scale == 0 {
		return 1
	}
	return z.Scale
}

// profileSpace is what a bench profile writes on this machine at the
// sizing's scale, on a device or a filesystem, with a sentence saying so (its plan decides both: planned
// here on a stand-in path, never opened); 0 for the lab jobs, which run
// over the whole device and fit any size.
func profileSpace(p *Profile, z Sizing) (uint64, string) {
	if p.IO != nil {
		return 0, ""
	}
	fs := z.Filesystem
	params := profile.Params{Scale: z.scale(), Runtime: time.Second, Device: standIn, NumCPU: z.NumCPU, JobFile: p.Arg.JobFile, Capture: p.Arg.Capture}
	if fs != nil {
		params.Device, params.Dir = "", standInDir
	}
	plan, err := profile.New(p.Workload, params)
	if err != nil || plan.SpaceBytes == 0 {
		return 0, "" // unknown (a fio job file's): the default ramdisk
	}
	if fs != nil {
		// A filesystem's own metadata (journal or log, inode tables)
		// and free-space reserve: an eighth more, at least 64 MiB.
		meta := max(plan.SpaceBytes/8, 64<<20)
		why := fmt.Sprintf("profile %s writes up to %d MiB on this machine, plus %d MiB for %s's own metadata", p.Name, plan.SpaceBytes>>20, meta>>20, fs.Type)
		return plan.SpaceBytes + meta, why
	}
	why := fmt.Sprintf("profile %s writes up to %d MiB on this machine", p.Name, plan.SpaceBytes>>20)
	if plan.SpaceNote != "" {
		why += " (" + plan.SpaceNote + ")"
	}
	return plan.SpaceBytes, why
}

// standIn and standInDir are the device and directory a profile is
// planned on to size the backing (never opened).
const (
	standIn    = "/dev/sizing-only"
	standInDir = "/sizing-only"
)

// fitSize is a backing size for need bytes, as --backing spells it: an
// eighth to spare, rounded up to 64 MiB.
func fitSize(need uint64) string {
	const step = 64 << 20
	n := (need + need/8 + step - 1) / step * step
	if n%(1<<30) == 0 {
		return fmt.Sprintf("%dG", n>>30)
	}
	return fmt.Sprintf("%dM", n>>20)
}

// ChooseBacking is the lab's device: the one given, refused when the
// profile's files do not fit it, or by default a ramdisk of 1G (fio
// profiles) or sized to the profile's files, refused when it would take
// more than half of the available memory (memAvail bytes, 0 if unknown).
// Every refusal names the --backing and --profile that would do.
//
// With a filesystem (fs) the backing holds its metadata too, and is at
// least the filesystem's smallest size (xfs: 300 MB).
func ChooseBacking(given string, p *Profile, z Sizing) (cryptlab.Backing, error) {
	fs, memAvail := z.Filesystem, z.MemAvailable
	need, why := profileSpace(p, z)
	if fs != nil && uint64(fs.MinBytes()) > need {
		need, why = uint64(fs.MinBytes()), fmt.Sprintf("mkfs.%s makes nothing smaller than %d MiB", fs.Type, fs.MinBytes()>>20)
	}
	if given != "" {
		b, err := cryptlab.ParseBacking(given)
		if err != nil {
			return b, err
		}
		if need > uint64(b.Size) {
			bigger := "ram:" + fitSize(need)
			if b.Kind == "file" {
				bigger = "file:" + b.Path + ":" + fitSize(need)
			}
			return b, fmt.Errorf("%s and --backing %s has %d MiB: use --backing %s (or leave --backing out: the default ramdisk is sized to the profile), or --profile randrw-4k, whose fio job fits any backing",
				why, given, b.Size>>20, bigger)
		}
		return b, nil
	}
	size := fmt.Sprint(defaultRAM>>30, "G")
	if need > 0 {
		size = fitSize(need)
	}
	b, err := cryptlab.ParseBacking("ram:" + size)
	if err != nil {
		return b, err
	}
	if memAvail > 0 && uint64(b.Size) > memAvail/2 {
		what := fmt.Sprintf("profile %s", p.Name)
		if why != "" {
			what = why
		}
		return b, fmt.Errorf("%s: a ramdisk of %s would take more than half of the %d MiB of memory available: use --backing file:PATH:%s (a file on a disk with that much free space), or --profile randrw-4k with a smaller --backing ram:SIZE",
			what, size, memAvail>>20, size)
	}
	return b, nil
}

// MemAvailable is MemAvailable from /proc/meminfo in bytes, 0 if unknown.
func MemAvailable(fs hostfs.FS) uint64 {
	pfs, err := procfs.NewFS(fs.Proc)
	if err != nil {
		return 0
	}
	mi, err := pfs.Meminfo()
	if err != nil || mi.MemAvailableBytes == nil {
		return 0
	}
	return *mi.MemAvailableBytes
}
