package sampler

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/hostfs"
)

// taskStat is what the sampler needs of /proc/PID/stat or
// /proc/PID/task/TID/stat (proc(5); fs/proc/array.c do_task_stat).
type taskStat struct {
	PID   int
	Comm  string
	State byte // R, S, D, ... (proc(5) field 3)
	PPID  int
	Ticks uint64 // utime + stime, in USER_HZ ticks
	// ChildTicks is cutime + cstime: the CPU of the task's children it
	// has waited for (and theirs), in USER_HZ ticks.
	ChildTicks uint64
	Start      uint64 // starttime: tells a reused PID apart
}

// userHZ is the unit of utime/stime: USER_HZ, 100 on every Linux
// architecture's user ABI (include/asm-generic/param.h; procfs assumes the
// same).
const userHZ = 100

// parseTaskStat parses one stat line. comm may hold spaces and
// parentheses, so it ends at the last ')'. For a workqueue worker the
// kernel prints the worker's current or last workqueue after a '-'
// ("kworker/u4:2-kcryptd/253:0"; fs/proc/array.c proc_task_name calls
// wq_worker_comm since Linux 4.18).
func parseTaskStat(b []byte) (taskStat, error) {
	open := bytes.IndexByte(b, '(')
	closeIdx := bytes.LastIndexByte(b, ')')
	if open < 1 || closeIdx < open {
		return taskStat{}, errors.New("stat: no (comm)")
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil || pid <= 0 {
		return taskStat{}, fmt.Errorf("stat: bad pid %q", b[:open])
	}
	f := bytes.Fields(b[closeIdx+1:])
	// After comm: state(3) ppid(4) ... utime(14) stime(15) cutime(16)
	// cstime(17) ... starttime(22).
	if len(f) < 20 {
		return taskStat{}, fmt.Errorf("stat: %d fields after comm, want at least 20", len(f))
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	ut, err2 := strconv.ParseUint(string(f[11]), 10, 64)
	st, err3 := strconv.ParseUint(string(f[12]), 10, 64)
	start, err4 := strconv.ParseUint(string(f[19]), 10, 64)
	// cutime and cstime are signed in proc(5) (%ld), never negative in
	// practice: a negative one counts as none.
	cut, err5 := strconv.ParseInt(string(f[13]), 10, 64)
	cst, err6 := strconv.ParseInt(string(f[14]), 10, 64)
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return taskStat{}, fmt.Errorf("stat: %w", err)
	}
	return taskStat{PID: pid, Comm: string(b[open+1 : closeIdx]), State: f[0][0], PPID: ppid, Ticks: ut + st,
		ChildTicks: uint64(max(cut, 0)) + uint64(max(cst, 0)), Start: start}, nil
}

// readStatInto reads one stat file with a single read into buf, which
// the sampler reuses across its reads of every task each interval (a stat
// line is far shorter than buf).
func readStatInto(path string, buf []byte) (taskStat, error) {
	f, err := os.Open(path)
	if err != nil {
		return taskStat{}, err
	}
	defer f.Close()
	n, err := f.Read(buf)
	if err != nil {
		return taskStat{}, err
	}
	return parseTaskStat(buf[:n])
}

// ParentPID is the ppid of pid from its /proc/PID/stat under fsys.
func ParentPID(fsys hostfs.FS, pid int) (int, error) {
	st, err := readStatInto(fsys.ProcPath(strconv.Itoa(pid), "stat"), make([]byte, 1024))
	if err != nil {
		return 0, err
	}
	return st.PPID, nil
}

// ThreadStates counts pid's threads by state and wait channel ("S
// futex_wait_queue": /proc/PID/task/TID/stat and wchan under fsys), as
// "12 S futex_wait_queue, 1 S io_cqring_wait": what a process that will
// not end was doing, for an error that says so.
func ThreadStates(fsys hostfs.FS, pid int) (string, error) {
	dir := fsys.ProcPath(strconv.Itoa(pid), "task")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	buf := make([]byte, 1024)
	counts := map[string]int{}
	for _, e := range ents {
		st, err := readStatInto(filepath.Join(dir, e.Name(), "stat"), buf)
		if err != nil {
			continue // exited since the listing
		}
		wchan, _ := os.ReadFile(filepath.Join(dir, e.Name(), "wchan"))
		counts[string(st.State)+" "+string(bytes.TrimSpace(wchan))]++
	}
	keys := slices.Sorted(maps.Keys(counts))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", counts[k], k)
	}
	return strings.Join(parts, ", "), nil
}
