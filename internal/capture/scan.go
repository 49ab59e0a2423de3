package capture

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/prometheus/procfs"
	"github.com/slowpath/slowpath/internal/snapshot"
	"golang.org/x/sys/unix"
)

// The process scan at the start: files on the mount that the selected
// processes hold open or mapped, read through prometheus/procfs.

// scanProcesses registers the files on the mount that the selected
// processes hold open or mapped now, with their residency at the start, and
// returns the processes that map such files.
func (r *run) scanProcesses(major, minor uint32) []uint32 {
	pfs, err := procfs.NewFS(r.fs.Proc)
	if err != nil {
		return nil
	}
	procs, err := pfs.AllProcs()
	if err != nil {
		return nil
	}
	sort.Sort(procs)
	var mappers []uint32
	for _, p := range procs {
		pid := uint32(p.PID)
		if r.o.PID != 0 && pid != r.o.PID {
			continue
		}
		if r.o.Cgroup != "" && !r.inCgroup(p) {
			continue
		}
		if r.o.Comm != "" {
			if c, err := p.Comm(); err != nil || c != r.o.Comm {
				continue
			}
		}
		r.scanFds(pid)
		if r.scanMaps(p, major, minor) {
			mappers = append(mappers, pid)
		}
	}
	return mappers
}

// inCgroup says whether process p is in the filter's cgroup or below it:
// its cgroup v2 line of /proc/PID/cgroup ("0::/path", hierarchy 0 and no
// controllers; cgroups(7)).
func (r *run) inCgroup(p procfs.Proc) bool {
	if r.cgroupRel == "" {
		return false
	}
	cgs, err := p.Cgroups()
	if err != nil {
		return false
	}
	for _, cg := range cgs {
		if cg.HierarchyID == 0 && len(cg.Controllers) == 0 {
			return cg.Path == r.cgroupRel || strings.HasPrefix(cg.Path, strings.TrimSuffix(r.cgroupRel, "/")+"/")
		}
	}
	return false
}

// cgroupRel returns dir relative to the cgroup2 mount holding it, as
// /proc/PID/cgroup's "0::/path" spells it (the mount is /sys/fs/cgroup, or
// /sys/fs/cgroup/unified on a hybrid host); mounts is the mount table.
func cgroupRel(mounts []snapshot.Mount, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("cgroup %s: %w", dir, err)
	}
	best := ""
	for _, m := range mounts {
		if m.FSType != "cgroup2" {
			continue
		}
		if (abs == m.MountPoint || strings.HasPrefix(abs, strings.TrimSuffix(m.MountPoint, "/")+"/")) && len(m.MountPoint) > len(best) {
			best = m.MountPoint
		}
	}
	if best == "" {
		return "", fmt.Errorf("cgroup %s is not in a cgroup v2 hierarchy (no cgroup2 mount holds it)", dir)
	}
	return "/" + strings.TrimPrefix(strings.TrimPrefix(abs, best), "/"), nil
}

func (r *run) scanFds(pid uint32) {
	dir := r.fs.ProcPath(fmt.Sprint(pid), "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, ent := range ents {
		var st unix.Stat_t
		p := filepath.Join(dir, ent.Name())
		if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		if unix.Major(st.Dev)<<20|unix.Minor(st.Dev) != r.mountDev {
			continue
		}
		r.candidate(st.Ino, func() *os.File {
			h, err := os.Open(p)
			if err != nil {
				return nil
			}
			return h
		})
	}
}

// scanMaps reads /proc/PID/maps (procfs.ProcMaps) for mappings of files on
// the device and registers them; true when there was one. A mapping's
// file is opened through /proc/PID/map_files/START-END, named "%lx-%lx"
// without the zero padding maps prints (fs/proc/base.c
// proc_map_files_readdir; dname_to_vma_addr refuses a leading zero).
func (r *run) scanMaps(p procfs.Proc, major, minor uint32) bool {
	maps, err := p.ProcMaps()
	if err != nil {
		return false
	}
	dev := unix.Mkdev(major, minor)
	found := false
	for _, m := range maps {
		if m.Dev != dev || m.Inode == 0 {
			continue
		}
		start, end := uint64(m.StartAddr), uint64(m.EndAddr)
		link := r.fs.ProcPath(fmt.Sprint(p.PID), "map_files", fmt.Sprintf("%x-%x", start, end))
		r.candidate(m.Inode, func() *os.File {
			h, err := os.Open(link)
			if err != nil {
				return nil
			}
			return h
		})
		r.maps[uint32(p.PID)] = append(r.maps[uint32(p.PID)], mapping{start: start, end: end, pgoff: uint64(m.Offset), file: fileKey{r.mountDev, m.Inode}})
		found = true
	}
	return found
}
