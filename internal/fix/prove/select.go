package prove

import (
	"fmt"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Skipped is a plan entry --prove does not measure, and why.
type Skipped struct {
	Entry fix.Entry
	Why   string
	// Counters is true for network entries: --apply verifies them by
	// their counters instead.
	Counters bool
}

// Select splits the plan into the entries the workload on path exercises
// and the rest. Measured: an entry whose every step changes the table of
// a dm-crypt layer of path, and any entry with runtime steps named in
// only (the user asked for it to be measured, e.g. a sysctl). Network
// entries not named keep their counter verification; a dm-crypt entry of
// another device is skipped, since the workload does not reach it.
func Select(plan *fix.Plan, path *storagemodel.Path, only []string) (measure []fix.Entry, skipped []Skipped) {
	var crypt []string
	where := "no block device (tmpfs or unknown)"
	if path != nil {
		where = path.Subject()
		for _, l := range path.Layers {
			if l.Kind == storagemodel.LayerDMCrypt && l.Name != "" {
				crypt = append(crypt, l.Name)
			}
		}
	}
	for _, e := range plan.Entries {
		switch {
		case len(e.Steps) == 0:
			continue
		case slices.Contains(only, e.ID):
			measure = append(measure, e)
		case onPath(e, crypt):
			measure = append(measure, e)
		case fix.Watched(e):
			skipped = append(skipped, Skipped{Entry: e, Counters: true, Why: "a network change: verified by its counters, not by the workload (name it with --only to measure it)"})
		default:
			skipped = append(skipped, Skipped{Entry: e, Why: fmt.Sprintf("not on the storage path of the workload's directory (%s)", where)})
		}
	}
	return measure, skipped
}

// onPath reports whether every step of e changes a dm-crypt table named
// in crypt.
func onPath(e fix.Entry, crypt []string) bool {
	for _, s := range e.Steps {
		c, ok := s.Change.(fix.OnDM)
		if !ok || !slices.Contains(crypt, c.DMName()) {
			return false
		}
	}
	return true
}

// PathOf is the storage path whose filesystem has device number mm
// (major:minor of the directory's st_dev); nil when none has it (tmpfs).
func PathOf(m *storagemodel.Model, mm string) *storagemodel.Path {
	if m == nil {
		return nil
	}
	for i := range m.Paths {
		for _, l := range m.Paths[i].Layers {
			if l.Kind == storagemodel.LayerFilesystem && l.MajorMinor == mm {
				return &m.Paths[i]
			}
		}
	}
	return nil
}

// PathForDir is the storage path of s that holds dir: the path whose
// filesystem has dir's device number (st_dev). nil when none has it (a
// tmpfs, or a snapshot without the mount).
func PathForDir(s *snapshot.Snapshot, dir string) (*storagemodel.Path, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return nil, fmt.Errorf("--dir %s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, fmt.Errorf("--dir %s: not a directory", dir)
	}
	return PathOf(storagemodel.Build(s), fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))), nil
}
