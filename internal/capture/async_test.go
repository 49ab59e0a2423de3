package capture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/slowpath/slowpath/internal/capture/capfile"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// TestCaptureAsyncFio runs real fio jobs with the libaio and io_uring
// engines at depths 1, 8 and 32, direct and buffered, and one SQPOLL ring
// with registered files, each under its own capture: the capture's
// asynchronous read and write records and their bytes must equal fio's own
// per-job counts (--output-format=json).
func TestCaptureAsyncFio(t *testing.T) {
	testenv.RequireRoot(t)
	fio := testenv.RequireTool(t, "fio", "fio")
	if v, err := os.ReadFile("/proc/sys/kernel/io_uring_disabled"); err == nil && len(v) > 0 && v[0] == '2' {
		testenv.Unavailable(t, "kernel.io_uring_disabled is 2")
	}
	mnt, _ := loopExt4(t, 128<<20)
	cg := testCgroup(t)
	type job struct {
		engine string
		depth  int
		direct int
		extra  string
	}
	var jobs []job
	for _, e := range []string{"libaio", "io_uring"} {
		for _, d := range []int{1, 8, 32} {
			for _, direct := range []int{1, 0} {
				jobs = append(jobs, job{e, d, direct, ""})
			}
		}
	}
	jobs = append(jobs, job{"io_uring", 16, 1, "sqthread_poll=1\n"})
	for i, j := range jobs {
		name := fmt.Sprintf("%s-qd%d-direct%d", j.engine, j.depth, j.direct)
		if j.extra != "" {
			name += "-sqpoll"
		}
		t.Run(name, func(t *testing.T) {
			text := fmt.Sprintf("[global]\ndirectory=%%s\nfilename=f%d\nsize=8m\nbs=4k\nrw=randrw\nrwmixread=60\nioengine=%s\niodepth=%d\ndirect=%d\nrandrepeat=0\n%s[j]\n",
				i, j.engine, j.depth, j.direct, j.extra)
			jobFile := layoutJob(t, fio, text, mnt)
			out := filepath.Join(t.TempDir(), "cap")
			finish := startCapture(t, Options{Mount: mnt, Cgroup: cg}, out)
			raw := inCgroup(t, cg, fio, "--output-format=json", jobFile)
			if _, err := finish(); err != nil {
				t.Fatalf("capture: %v", err)
			}
			fr, err := fioCounts(raw)
			if err != nil {
				t.Fatal(err)
			}
			c, err := capfile.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			m := c.Manifest
			want := capfile.FlagAIO
			if j.engine == "io_uring" {
				want = capfile.FlagURing
				if m.Kernel.IOURing != capfile.AsyncCaptured {
					t.Fatalf("kernel.io_uring %q", m.Kernel.IOURing)
				}
			}
			var reads, readBytes, writes, writeBytes, fixed uint64
			err = c.EachOp(func(o capfile.Op) error {
				if o.Flags&want == 0 || o.Result < 0 {
					return nil
				}
				if (o.Flags&capfile.FlagDirect != 0) != (j.direct == 1) {
					t.Errorf("record %+v: direct flag, want direct=%d", o, j.direct)
				}
				if o.Flags&capfile.FlagFixedFile != 0 {
					fixed++
				}
				switch o.Kind {
				case capfile.OpRead:
					reads++
					readBytes += uint64(o.Result)
				case capfile.OpWrite:
					writes++
					writeBytes += uint64(o.Result)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprintf("reads %d (%d B), writes %d (%d B)", reads, readBytes, writes, writeBytes)
			exp := fmt.Sprintf("reads %d (%d B), writes %d (%d B)", fr[0], fr[1], fr[2], fr[3])
			if got != exp {
				t.Errorf("capture: %s; fio: %s", got, exp)
			}
			if j.extra != "" && fixed == 0 {
				t.Errorf("SQPOLL ring: no record with a registered file")
			}
			t.Logf("%s; aio %d io_uring %d records; dropped %d, recursion misses %d, block %d", got, m.Events.AIO, m.Events.IOURing, m.Events.Dropped, m.Events.RecursionMisses, m.Events.Block)
		})
	}
}

// fioCounts reads one job's read and write I/Os and bytes from fio's
// --output-format=json (jobs[0].read.total_ios, io_bytes), skipping what
// fio prints before the JSON (warnings).
func fioCounts(raw []byte) ([4]uint64, error) {
	var out [4]uint64
	b := raw
	if i := bytes.IndexByte(b, '{'); i >= 0 {
		b = b[i:]
	}
	type dir struct {
		TotalIOs uint64 `json:"total_ios"`
		IOBytes  uint64 `json:"io_bytes"`
	}
	var r struct {
		Jobs []struct{ Read, Write dir } `json:"jobs"`
	}
	if err := json.Unmarshal(b, &r); err != nil || len(r.Jobs) != 1 {
		return out, fmt.Errorf("fio JSON (%v): %s", err, raw)
	}
	j := r.Jobs[0]
	return [4]uint64{j.Read.TotalIOs, j.Read.IOBytes, j.Write.TotalIOs, j.Write.IOBytes}, nil
}

// TestURingState: a kernel without the io_uring tracepoints, and one where
// io_uring is disabled, are named in the manifest (fixtures).
func TestURingState(t *testing.T) {
	for _, tc := range []struct {
		disabled string // "": no such sysctl (before 6.6)
		tps      bool
		want     string
	}{
		{"", true, capfile.AsyncCaptured},
		{"0", true, capfile.AsyncCaptured},
		{"1", true, capfile.AsyncCaptured},
		{"", false, capfile.AsyncNoTracepoints},
		{"2", true, capfile.AsyncDisabled},
		{"2", false, capfile.AsyncDisabled},
	} {
		root := t.TempDir()
		if tc.disabled != "" {
			writeTree(t, root, map[string]string{"proc/sys/kernel/io_uring_disabled": tc.disabled + "\n"})
		}
		if got := uringState(hostfs.New(root), tc.tps); got != tc.want {
			t.Errorf("io_uring_disabled %q, tracepoints %v: %q, want %q", tc.disabled, tc.tps, got, tc.want)
		}
	}
}

// TestCaptureMissed: cp (coreutils 9 copies with copy_file_range) and
// fio's splice engine do I/O no record describes: the manifest counts it.
func TestCaptureMissed(t *testing.T) {
	testenv.RequireRoot(t)
	fio := testenv.RequireTool(t, "fio", "fio")
	mnt, _ := loopExt4(t, 64<<20)
	cg := testCgroup(t)
	src := filepath.Join(mnt, "src")
	if err := os.WriteFile(src, bytes.Repeat([]byte("x"), 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	job := layoutJob(t, fio, "[j]\ndirectory=%s\nfilename=sp\nsize=1m\nbs=64k\nrw=read\nioengine=splice\n", mnt)
	out := filepath.Join(t.TempDir(), "cap")
	finish := startCapture(t, Options{Mount: mnt, Cgroup: cg}, out)
	inCgroup(t, cg, "cp", src, filepath.Join(mnt, "dst"))
	inCgroup(t, cg, fio, job)
	if _, err := finish(); err != nil {
		t.Fatal(err)
	}
	c, err := capfile.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	ms := c.Manifest.Events.Missed
	if ms == nil || ms.CopyFileRange == 0 || ms.CopyFileRangeBytes < 1<<20 || ms.Splice == 0 || ms.SpliceBytes < 1<<20 {
		t.Errorf("missed: %+v, want cp's copy_file_range of 1 MiB and fio's splices of 1 MiB", ms)
	}
}
