package host

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
	"github.com/slowpath/slowpath/internal/hostfs"
)

// UserHZ is the unit of the tick counts in /proc/stat and /proc/PID/stat:
// USER_HZ, 100 on every architecture Linux supports today
// (include/asm-generic/param.h; proc(5)).
const UserHZ = 100

// CPUTicks are the busy and total ticks of all CPUs from the "cpu" line of
// /proc/stat (proc(5): user nice system idle iowait irq softirq steal ...).
type CPUTicks struct{ Busy, Total uint64 }

// ReadCPUTicks reads /proc/stat.
func ReadCPUTicks(fs hostfs.FS) (CPUTicks, error) {
	p := fs.ProcPath("stat")
	b, err := os.ReadFile(p)
	if err != nil {
		return CPUTicks{}, fmt.Errorf("read %s: %w", p, err)
	}
	t, err := parseCPUTicks(b)
	if err != nil {
		return t, fmt.Errorf("%s: %w", p, err)
	}
	return t, nil
}

func parseCPUTicks(b []byte) (CPUTicks, error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 5 || f[0] != "cpu" {
		return CPUTicks{}, fmt.Errorf("first line %q is not the cpu total", line)
	}
	var t CPUTicks
	// guest and guest_nice (fields 9, 10) are already in user and nice.
	for i, s := range f[1:min(len(f), 9)] {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return CPUTicks{}, fmt.Errorf("cpu field %d %q: %w", i+1, s, err)
		}
		t.Total += n
		if i != 3 && i != 4 { // idle, iowait
			t.Busy += n
		}
	}
	return t, nil
}

// pfKthread is PF_KTHREAD in /proc/PID/stat's flags (include/linux/sched.h).
const pfKthread = 0x00200000

// KernelThreadTicks sums utime+stime of every kernel thread (flags
// field of /proc/PID/stat, read through procfs.Proc.Stat). dm-crypt
// encrypts in kernel threads: kcryptd work items run in kworkers, writes are
// submitted from dmcrypt_write (drivers/md/dm-crypt.c), so their CPU shows
// here and not in the process doing the I/O. Threads that exit between
// two reads drop out of the sum: take it over short intervals.
func KernelThreadTicks(fs hostfs.FS) (uint64, error) {
	pfs, err := procfs.NewFS(fs.Proc)
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", fs.Proc, err)
	}
	procs, err := pfs.AllProcs()
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", fs.Proc, err)
	}
	var sum uint64
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil {
			continue // exited
		}
		if st.Flags&pfKthread != 0 {
			sum += uint64(st.UTime + st.STime)
		}
	}
	return sum, nil
}
