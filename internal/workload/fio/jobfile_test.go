package fio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

func TestRenderFile(t *testing.T) {
	f := File{Global: []Option{{"directory", "/d"}, {"group_reporting", ""}},
		Jobs: []Section{{Name: "writers", Options: []Option{{"rw", "write"}, {"numjobs", "4"}}}, {Name: "readers", Options: []Option{{"rw", "randread"}}}}}
	got, err := f.Render()
	if err != nil {
		t.Fatal(err)
	}
	want := "[global]\ndirectory=/d\ngroup_reporting\n\n[writers]\nrw=write\nnumjobs=4\n\n[readers]\nrw=randread\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for name, bad := range map[string]File{
		"no jobs":        {Global: []Option{{"a", "b"}}},
		"bad name":       {Jobs: []Section{{Name: "a]b"}}},
		"newline value":  {Jobs: []Section{{Name: "a", Options: []Option{{"filename", "x\nrw=write"}}}}},
		"key with equal": {Jobs: []Section{{Name: "a", Options: []Option{{"rw=write", ""}}}}},
	} {
		if _, err := bad.Render(); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
}

func TestParseLog(t *testing.T) {
	pts, err := ParseLog(strings.NewReader("1000, 2384, 1, 0, 0\n2000, 2346, 1, 0, 0\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]LogPoint{{1000, 2384, 1}, {2000, 2346, 1}}, pts); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []string{"1000, 5\n", "x, 1, 0\n", "1000, -1, 0\n", "1000, 1, 7\n", "1000, NaN, 0\n"} {
		if _, err := ParseLog(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzParseLog(f *testing.F) {
	f.Add([]byte("1000, 2384, 1, 0, 0\n2001, 2346, 0, 4096, 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pts, err := ParseLog(strings.NewReader(string(b)))
		if err == nil {
			for _, p := range pts {
				if p.Value < 0 || p.Dir < 0 || p.Dir > 2 {
					t.Fatalf("bad point %+v", p)
				}
			}
		}
	})
}

// TestInvocationReal runs a two-job file with fdatasync and per-second logs
// and interrupts a second run: fio's SIGINT result is returned as partial.
func TestInvocationReal(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	dir := t.TempDir()
	f := File{Global: []Option{{"directory", dir}, {"ioengine", "psync"}, {"group_reporting", ""}, {"log_avg_msec", "1000"}},
		Jobs: []Section{{Name: "commit", Options: []Option{{"rw", "write"}, {"bs", "8k"}, {"size", "2m"}, {"fdatasync", "1"},
			{"numjobs", "2"}, {"runtime", "2"}, {"time_based", ""}, {"write_iops_log", "commit"}}}}}
	jf, err := f.Render()
	if err != nil {
		t.Fatal(err)
	}
	pid := 0
	res, err := Invocation{JobFile: jf, Dir: dir, Started: func(p int) { pid = p }}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if pid <= 0 {
		t.Error("Started not called")
	}
	j := res.Jobs[0]
	var binSum uint64
	for _, b := range j.Write.Clat.Bins {
		binSum += b.Count
	}
	if j.Write.IOs == 0 || binSum != j.Write.Clat.Count || j.Write.Clat.Count != j.Write.IOs {
		t.Errorf("write ios %d, clat N %d, bins sum %d: want equal and > 0", j.Write.IOs, j.Write.Clat.Count, binSum)
	}
	// fdatasync=1: one sync per write.
	if j.Sync.Count == 0 || j.Sync.Count+2 < j.Write.IOs || len(j.Sync.Lat.Bins) == 0 || j.Sync.Lat.Max < j.Sync.Lat.Min {
		t.Errorf("sync %+v for %d writes", j.Sync.Count, j.Write.IOs)
	}
	if j.Runtime < time.Second {
		t.Errorf("job runtime %v", j.Runtime)
	}
	logs, err := SumLogs(dir, "commit", "iops")
	if err != nil {
		t.Fatal(err)
	}
	if len(logs[1]) < 1 || logs[1][0].Value <= 0 {
		t.Errorf("iops log %+v", logs)
	}
	t.Logf("%d writes, %.0f IOPS, sync p99 %v; log %+v", j.Write.IOs, j.Write.IOPS, j.Sync.Lat.Max, logs[1])

	// Interrupted once fio has read, well before the end of a 30 s job:
	// partial result, ctx's error. A fixed delay would fail by chance on a
	// loaded machine, where fio may not have laid its file out yet; the job
	// runs as a thread, so fio's own /proc/PID/io counts its reads.
	long := File{Global: []Option{{"directory", dir}, {"ioengine", "psync"}, {"thread", ""}},
		Jobs: []Section{{Name: "long", Options: []Option{{"rw", "randread"}, {"bs", "4k"}, {"size", "4m"}, {"runtime", "30"}, {"time_based", ""}}}}}
	jf, err = long.Render()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan int, 1)
	go func() {
		pid := <-started
		for ctx.Err() == nil {
			if readSyscalls(pid) >= 1000 {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	res, err = Invocation{JobFile: jf, Dir: dir, Started: func(p int) { started <- p }}.Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: err %v", err)
	}
	if res == nil || res.Jobs[0].Read.IOs == 0 {
		t.Fatalf("interrupted run: no partial result: %+v", res)
	}
	// fio's own clock, not the test's: it stopped before its 30 s.
	if rt := res.Jobs[0].Runtime; rt >= 30*time.Second {
		t.Errorf("interrupted run ran its whole runtime (%v)", rt)
	}
	if _, err := filepath.Glob(filepath.Join(dir, "fio.json")); err != nil {
		t.Error(err)
	}
}

// readSyscalls is the syscr field of /proc/PID/io (Documentation/filesystems/proc.rst):
// read system calls of the whole process, threads included; 0 when unread.
func readSyscalls(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "syscr: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// TestCancelLeavesNoJobProcess cancels fio at points through its start-up,
// where its forked job processes wait at a semaphore for the main process:
// whatever the moment, Run returns and no process of fio's group is left
// (a job process orphaned there waits on its futex for good, holding the
// device; lab crypt hung on one in the VM lab).
func TestCancelLeavesNoJobProcess(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	dir := t.TempDir()
	f := File{Global: []Option{{"directory", dir}, {"ioengine", "psync"}, {"size", "8m"}},
		Jobs: []Section{{Name: "j", Options: []Option{{"rw", "randrw"}, {"bs", "4k"}, {"numjobs", "4"}, {"runtime", "1"}, {"time_based", ""}}}}}
	jf, err := f.Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, delay := range []time.Duration{0, 10 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		ctx, cancel := context.WithCancel(context.Background())
		pgid := 0
		res, err := Invocation{JobFile: jf, Dir: dir, Started: func(p int) {
			pgid = p
			time.AfterFunc(delay, cancel)
		}}.Run(ctx)
		cancel()
		if pgid == 0 {
			t.Fatalf("delay %v: fio never started: %v", delay, err)
		}
		// kill(-pgid, 0) finds any process still in fio's group.
		if kerr := syscall.Kill(-pgid, 0); !errors.Is(kerr, syscall.ESRCH) {
			t.Errorf("cancelled %v after start: fio's process group %d still has a process (%v)", delay, pgid, kerr)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		if h := holders(t, dir); len(h) > 0 {
			t.Errorf("cancelled %v after start: processes %v still hold files of the job", delay, h)
		}
		// Cancelled or not (fio may finish first on an idle machine), the
		// outcome is a result or ctx's error, never another failure.
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled %v after start: %v", delay, err)
		} else if err == nil && res == nil {
			t.Errorf("cancelled %v after start: no result and no error", delay)
		}
	}
}

// TestRunCancelFreesFiles is TestCancelLeavesNoJobProcess through Run, the
// path of a fio.Job (lab crypt's variants): once Run returns, no process
// holds the job's file.
func TestRunCancelFreesFiles(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	dir := t.TempDir()
	file := filepath.Join(dir, "data")
	for _, delay := range []time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		ctx, cancel := context.WithTimeout(context.Background(), delay)
		_, err := Run(ctx, Job{Name: "j", Filename: file, Size: "8m", RW: "randrw", BlockSize: "4k", IOEngine: "psync",
			NumJobs: 4, Runtime: time.Second, TimeBased: true})
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("cancelled %v after start: %v", delay, err)
		}
		if h := holders(t, dir); len(h) > 0 {
			t.Errorf("cancelled %v after start: processes %v still hold files of the job", delay, h)
		}
	}
}

// holders are the pids of processes with a file under dir open
// (/proc/PID/fd links), other than this test's own.
func holders(t *testing.T, dir string) []int {
	t.Helper()
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	seen := map[int]bool{}
	var out []int
	for _, fd := range fds {
		target, err := os.Readlink(fd)
		if err != nil || !strings.HasPrefix(target, dir+"/") {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(fd, "/")[2])
		if pid != os.Getpid() && !seen[pid] {
			seen[pid] = true
			out = append(out, pid)
			stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			t.Logf("holder %d: %s (stat %s) fd %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " "), strings.TrimSpace(string(stat)), target)
			_ = syscall.Kill(pid, syscall.SIGKILL) // do not leave it behind
		}
	}
	return out
}
