package replay

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/capture/capfile"
	"github.com/slowpath/slowpath/internal/testing/testenv"
	"github.com/slowpath/slowpath/internal/workload/fio"
)

// writeCapture writes a capture directory: a psync writer (thread 1) and
// an mmap reader (thread 2) of the kinds the search incident had, plus
// what a replay skips, and block records on the filesystem's device
// (dm-0) and below it (vda).
func writeCapture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cap")
	w, err := capfile.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	ops := []capfile.Op{
		{Kind: capfile.OpOpen, Thread: 1, File: 1, Start: 10, End: 20},
		// Records arrive by end time: the second write ended first.
		{Kind: capfile.OpWrite, Thread: 1, File: 1, Flags: capfile.FlagPositional, Offset: 1 << 20, Length: 1 << 20, Result: 1 << 20, Start: 3e6, End: 3e6 + 500},
		{Kind: capfile.OpWrite, Thread: 1, File: 1, Flags: capfile.FlagPositional, Offset: 0, Length: 1 << 20, Result: 1 << 20, Start: 2e6, End: 3e6 + 900},
		{Kind: capfile.OpFdatasync, Thread: 1, File: 1, Start: 4e6, End: 5e6},
		{Kind: capfile.OpSyncFileRange, Thread: 1, File: 1, Length: 1 << 20, Start: 5e6, End: 5e6 + 10},
		{Kind: capfile.OpMmap, Thread: 2, File: 2, Flags: capfile.FlagShared, Length: 8 << 20, Arg: 1, Start: 100, End: 200},
		{Kind: capfile.OpFault, Thread: 2, File: 2, Flags: capfile.FlagMajor, Offset: 40960, Length: 4096, Start: 1e6, End: 1e6},
		{Kind: capfile.OpFault, Thread: 2, File: 2, Offset: 0, Length: 4096, Start: 1e6 + 1, End: 1e6 + 1}, // minor: a hit
		{Kind: capfile.OpRead, Thread: 2, File: 2, Flags: capfile.FlagDirect | capfile.FlagPositional, Offset: 8192, Length: 4096, Result: 4096, Start: 2e6, End: 2e6 + 70},
		{Kind: capfile.OpRead, Thread: 2, File: 2, Offset: 0, Length: 4096, Result: -9, Start: 3e6, End: 3e6 + 1},
		{Kind: capfile.OpFadvise, Thread: 3, File: 2, Arg: 4, Start: 1, End: 2},
		{Kind: capfile.OpMadvise, Thread: 2, File: 2, Length: 8192, Arg: 1, Start: 300, End: 310},
		{Kind: capfile.OpMadvise, Thread: 2, File: 2, Length: 8192, Arg: 9, Start: 400, End: 410}, // MADV_REMOVE: not replayed
	}
	for _, o := range ops {
		if err := w.Ops.Write(o); err != nil {
			t.Fatal(err)
		}
	}
	blocks := []capfile.Block{
		{Device: 1, Op: capfile.BlockWrite, Bytes: 1 << 20, Issue: 2e6, Latency: 400e3},
		{Device: 1, Op: capfile.BlockWrite, Bytes: 1 << 20, Issue: 3e6, Latency: 600e3},
		{Device: 1, Op: capfile.BlockRead, Bytes: 16384, Issue: 1e6, Latency: 100e3},
		{Device: 1, Op: capfile.BlockRead, Bytes: 4096, Issue: 2e6, Latency: 50e3},
		{Device: 1, Op: capfile.BlockFlush, Flags: capfile.BlockFlagPreflush, Issue: 4e6, Latency: 10e3},
		{Device: 2, Op: capfile.BlockWrite, Bytes: 512 << 10, Issue: 2e6, Latency: 300e3},
	}
	for _, b := range blocks {
		if err := w.Block.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	m := &capfile.Manifest{Status: capfile.StatusComplete, Started: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC), DurationNS: 10e9,
		Kernel:  capfile.Kernel{Release: "6.1.0-test", FaultSource: capfile.FaultSourceFilemap},
		Filters: capfile.Filters{MountDevice: "253:0", FSType: "ext4"}, Limits: capfile.Limits{DurationNS: 10e9, MaxRecords: 1 << 20},
		Devices: []capfile.Device{{ID: 1, Name: "dm-0", MajorMinor: "253:0", Kind: "dm-crypt", Source: capfile.BlockSourceBio},
			{ID: 2, Name: "vda", MajorMinor: "254:0", Kind: "disk", Source: capfile.BlockSourceRq}},
		Files: []capfile.File{{ID: 1, Name: "f0001", SizeBytes: 2 << 20, ResidencyUnknown: true},
			{ID: 2, Name: "f0002", SizeBytes: 8 << 20, SizeStartBytes: 8 << 20, ResidentPages: 3, Resident: [][2]uint64{{0, 2}, {2047, 1}}}},
		Threads: []capfile.Thread{{ID: 1, Process: 1}, {ID: 2, Process: 1}, {ID: 3, Process: 2}},
		System:  capfile.System{PageSize: 4096, Sysctls: map[string]string{}},
		Events:  capfile.Events{Faults: 2}}
	if err := w.Finish(m); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLoad(t *testing.T) {
	src, err := Load(writeCapture(t))
	if err != nil {
		t.Fatal(err)
	}
	want := &Trace{
		Files: []File{{Name: "f0001", Size: 0}, {Name: "f0002", Size: 8 << 20, Resident: []Range{{0, 8192}, {2047 * 4096, 4096}}}},
		Threads: []Thread{
			{Name: "t0001", Ops: []Op{{Kind: Write, File: 0, Offset: 0, Length: 1 << 20, At: 2e6}, {Kind: Write, File: 0, Offset: 1 << 20, Length: 1 << 20, At: 3e6},
				{Kind: Fdatasync, File: 0, At: 4e6}}, LastEnd: 5e6},
			{Name: "t0002", Ops: []Op{{Kind: Madvise, File: 1, Length: 8192, At: 300, Advice: 1}, {Kind: Fault, File: 1, Offset: 40960, Length: 4096, At: 1e6},
				{Kind: Read, File: 1, Offset: 8192, Length: 4096, At: 2e6, Direct: true}}, LastEnd: 2000070},
			{Name: "t0003", Ops: []Op{{Kind: Fadvise, File: 1, At: 1, Advice: 4}}, LastEnd: 2},
		}, End: 5e6}
	if d := cmp.Diff(want, src.Trace); d != "" {
		t.Errorf("trace (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]uint64{"failed": 1, "sync_file_range": 1, "mmap": 1, "fault": 1, "madvise": 1}, src.Skipped); d != "" {
		t.Errorf("skipped (-want +got):\n%s", d)
	}
	// dm-0 only: the mount's device; the flush counts as a request and
	// ends the span (4 ms + 10 µs), not in bytes or sizes.
	wantBlocks := benchresult.BlockTrace{Device: "dm-0", IOs: 5, Bytes: 2<<20 + 20480, ReadIOs: 2, WriteIOs: 2, FlushIOs: 1,
		ReadBytes: 20480, WriteBytes: 2 << 20,
		Sizes:      []benchresult.SizeBucket{{MaxBytes: 4096, Count: 1}, {MaxBytes: 16384, Count: 1}, {MaxBytes: 1 << 20, Count: 2}},
		DurationNS: 4.01e6 - 1e6, IOPS: 5 / 3.01e-3, BytesPerSec: float64(2<<20+20480) / 3.01e-3, P50NS: 100e3, P99NS: 600e3}
	if d := cmp.Diff(wantBlocks, src.Blocks); d != "" {
		t.Errorf("capture's block trace (-want +got):\n%s", d)
	}
}

func TestLoadBroken(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, dir string)
		want error
	}{
		{"ops cut short", func(t *testing.T, dir string) { cut(t, filepath.Join(dir, capfile.OpsName), 10) }, capfile.ErrTruncated},
		{"block cut short", func(t *testing.T, dir string) { cut(t, filepath.Join(dir, capfile.BlockName), 3) }, capfile.ErrTruncated},
		{"ops byte flipped", func(t *testing.T, dir string) { flip(t, filepath.Join(dir, capfile.OpsName), 40) }, capfile.ErrCorrupt},
		{"no manifest", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, capfile.ManifestName)) }, capfile.ErrTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeCapture(t)
			tc.edit(t, dir)
			if _, err := Load(dir); !errors.Is(err, tc.want) {
				t.Fatalf("Load = %v, want %v", err, tc.want)
			}
		})
	}
}

func cut(t *testing.T, p string, n int) {
	b, err := os.ReadFile(p)
	if err != nil || len(b) <= n {
		t.Fatalf("%s: %v (%d bytes)", p, err, len(b))
	}
	if err := os.WriteFile(p, b[:len(b)-n], 0o600); err != nil {
		t.Fatal(err)
	}
}

func flip(t *testing.T, p string, at int) {
	b, err := os.ReadFile(p)
	if err != nil || len(b) <= at {
		t.Fatalf("%s: %v (%d bytes)", p, err, len(b))
	}
	b[at] ^= 0x55
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestDifferences(t *testing.T) {
	c := benchresult.BlockTrace{IOs: 100, Bytes: 409600, ReadIOs: 75, WriteIOs: 25, Sizes: []benchresult.SizeBucket{{MaxBytes: 4096, Count: 100}}, IOPS: 1000, BytesPerSec: 4096000, P50NS: 100, P99NS: 1000}
	r := benchresult.BlockTrace{IOs: 101, Bytes: 413696, ReadIOs: 76, WriteIOs: 24, Sizes: []benchresult.SizeBucket{{MaxBytes: 4096, Count: 99}, {MaxBytes: 8192, Count: 1}}, IOPS: 950, BytesPerSec: 4096000, P50NS: 110, P99NS: 0}
	got := map[string][2]float64{}
	for _, d := range Differences(c, r) {
		got[d.Name] = [2]float64{d.Capture, d.Relative}
	}
	want := map[string][2]float64{"ios": {100, 0.01}, "bytes": {409600, 0.01}, "read_share": {0.75, 0.76/0.75 - 1}, "size_share_le_4096": {1, -0.01},
		"size_share_le_8192": {0, math.NaN()}, "iops": {1000, -0.05}, "bytes_per_sec": {4096000, 0}, "p50": {100, 0.1}, "p99": {1000, -1}}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) || math.Abs(a-b) < 1e-9 })); d != "" {
		t.Errorf("Differences (-want +got):\n%s", d)
	}
	if got := SummarizeBlocks("x", nil); got.IOs != 0 || got.Sizes == nil {
		t.Errorf("SummarizeBlocks of nothing = %+v, want zero with empty sizes", got)
	}
}

// TestExportRunsWithFioAlone runs the exported run.sh for real: fio
// replays exactly the trace's operations, twice.
func TestExportRunsWithFioAlone(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	src, err := Load(writeCapture(t))
	if err != nil {
		t.Fatal(err)
	}
	files, err := ExportFiles("replay:cap", src.Trace)
	if err != nil {
		t.Fatal(err)
	}
	exp := writeExport(t, files)
	target := t.TempDir()
	out, err := exec.Command("sh", filepath.Join(exp, "run.sh"), target).CombinedOutput()
	if err != nil {
		t.Fatalf("run.sh: %v\n%s", err, out)
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("run.sh left %d entries in the target", len(ents))
	}
	for _, j := range []string{ExportAFAPJob, ExportTimedJob} {
		f, err := os.Open(filepath.Join(exp, "results", strings.TrimSuffix(j, ".fio")+".json"))
		if err != nil {
			t.Fatal(err)
		}
		res, err := fioParse(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		var reads, writes, syncs, rb, wb uint64
		for _, jr := range res.Jobs {
			reads, writes, syncs = reads+jr.Read.IOs, writes+jr.Write.IOs, syncs+jr.Sync.Count
			rb, wb = rb+jr.Read.Bytes, wb+jr.Write.Bytes
		}
		// t0001: two 1 MiB writes and an fdatasync; t0002: a fault (a
		// 4 KiB read) and a direct 4 KiB read.
		if reads != 2 || writes != 2 || syncs != 1 || rb != 8192 || wb != 2<<20 {
			t.Errorf("%s: %d reads (%d B), %d writes (%d B), %d syncs; want 2 (8192), 2 (2 MiB), 1", j, reads, rb, writes, wb, syncs)
		}
	}
	for _, w := range []string{"t0001.iolog", "t0002.iolog", "t0002-direct.iolog"} {
		if _, ok := files[w]; !ok {
			t.Errorf("export lacks %s", w)
		}
	}
}

// writeExport writes the files of an export into a new directory.
func writeExport(t *testing.T, files map[string][]byte) string {
	t.Helper()
	exp := t.TempDir()
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(exp, n), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return exp
}

func TestExportRefusesNoSpace(t *testing.T) {
	tr := &Trace{Files: []File{{Name: "f0001", Size: 1 << 62}}, Threads: []Thread{{Name: "t0001", Ops: []Op{{Kind: Write, Length: 4096}, {Kind: Fsync}}}}}
	files, err := ExportFiles("replay:big", tr)
	if err != nil {
		t.Fatal(err)
	}
	exp := writeExport(t, files)
	// ulimit -f: should the check fail, head stops at 1 MiB instead of
	// filling the disk.
	out, err := exec.Command("sh", "-c", `ulimit -f 2048; exec sh "$0" "$1"`, filepath.Join(exp, "run.sh"), t.TempDir()).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "need 4503599627370496 KiB") {
		t.Fatalf("run.sh for a too large capture: %v\n%s", err, out)
	}
}

var fioParse = fio.Parse

func TestMaxInFlight(t *testing.T) {
	for _, tc := range []struct {
		spans [][2]uint64
		want  int
	}{
		{nil, 0},
		{[][2]uint64{{0, 10}}, 1},
		{[][2]uint64{{0, 10}, {10, 20}}, 1},
		{[][2]uint64{{0, 10}, {5, 20}, {6, 7}, {8, 30}}, 3},
	} {
		if got := maxInFlight(tc.spans); got != tc.want {
			t.Errorf("%v: %d, want %d", tc.spans, got, tc.want)
		}
	}
}

func TestMissedNote(t *testing.T) {
	m := &capfile.Manifest{}
	if got := MissedNote(m, benchresult.BlockTrace{Bytes: 100}); got != "" {
		t.Errorf("nothing missed: %q", got)
	}
	m.Events.Missed = &capfile.Missed{CopyFileRange: 2, CopyFileRangeBytes: 1 << 20, IOURingOther: 1}
	got := MissedNote(m, benchresult.BlockTrace{Device: "loop0", Bytes: 4 << 20})
	for _, want := range []string{"2 copy_file_range", "1 io_uring requests of other opcodes", "1048576 bytes", "25.0% of the capture's 4194304 block bytes on loop0"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "\n") {
		t.Errorf("not one line: %q", got)
	}
}
