package sampler

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/hostfs"
)

// TreeCPU is the CPU time a process and every descendant of it have used
// so far: utime+stime of each living member plus cutime+cstime, the CPU of
// the children each has reaped (proc(5)). A database server forks a
// backend per connection that exits with it; the server reaps it, so its
// CPU stays in the sum. The difference of two readings is the service's
// CPU between them (bench's database profiles).
func TreeCPU(fsys hostfs.FS, pid int) (time.Duration, error) {
	ents, err := os.ReadDir(fsys.Proc)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", fsys.Proc, err)
	}
	buf := make([]byte, 1024)
	var tasks []taskStat
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		st, err := readStatInto(filepath.Join(fsys.Proc, e.Name(), "stat"), buf)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
				continue // exited between ReadDir and Open
			}
			return 0, err
		}
		tasks = append(tasks, st)
	}
	return treeTicks(tasks, pid)
}

// treeTicks sums the tree of root in tasks; an error when root is not
// among them (the server exited).
func treeTicks(tasks []taskStat, root int) (time.Duration, error) {
	in := map[int]bool{root: true}
	found := false
	for _, t := range tasks {
		found = found || t.PID == root
	}
	if !found {
		return 0, fmt.Errorf("process %d is gone: its CPU time cannot be read", root)
	}
	// Parents may be listed after their children: iterate.
	for changed := true; changed; {
		changed = false
		for _, t := range tasks {
			if !in[t.PID] && in[t.PPID] {
				in[t.PID], changed = true, true
			}
		}
	}
	var ticks uint64
	for _, t := range tasks {
		if in[t.PID] {
			ticks += t.Ticks + t.ChildTicks
		}
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}
