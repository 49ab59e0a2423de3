package fio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/testenv"
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
