package replay_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/testing/testenv"
	"github.com/slowpath/slowpath/internal/workload/profile"
	"github.com/slowpath/slowpath/internal/workload/replay"
)

// asyncJob is a 4 KiB random 60/40 read/write job on one file through an
// asynchronous engine; its %s are the directory, engine, depth and direct.
const asyncJob = `[global]
directory=%s
filename=f
size=16m
bs=4k
rw=randrw
rwmixread=60
ioengine=%s
iodepth=%d
direct=%d
randrepeat=0
[j]
`

// TestFidelityAsync captures fio with the libaio and io_uring engines at
// depths 1, 8 and 32 (direct, and one buffered io_uring job: fio advises
// POSIX_FADV_RANDOM, which the replay's job must repeat), checks that
// the replay keeps each thread's engine and depth, and replays it as fast
// as possible with fio: the replay's block-level requests and bytes must
// be within 2% of the capture's, its read share within a percentage point.
func TestFidelityAsync(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "fio", "fio")
	type job struct {
		engine        string
		depth, direct int
	}
	jobs := []job{{"libaio", 1, 1}, {"libaio", 8, 1}, {"libaio", 32, 1}, {"io_uring", 1, 1}, {"io_uring", 8, 1}, {"io_uring", 32, 1}, {"libaio", 8, 0}, {"io_uring", 32, 0}}
	for _, j := range jobs {
		t.Run(fmt.Sprintf("%s-qd%d-direct%d", j.engine, j.depth, j.direct), func(t *testing.T) {
			mnt := loopExt4(t, 256<<20)
			dir := filepath.Join(mnt, "orig")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			layoutBlob(t, filepath.Join(dir, "f"), 16<<20)
			capDir := captureFio(t, mnt, fmt.Sprintf(asyncJob, dir, j.engine, j.depth, j.direct))
			src, err := replay.Load(capDir)
			if err != nil {
				t.Fatal(err)
			}
			var engines []string
			depth := 0
			for _, th := range src.Trace.Threads {
				if th.Engine != "" {
					engines = append(engines, th.Engine)
					depth = max(depth, th.Depth)
				}
			}
			if len(engines) != 1 || engines[0] != j.engine {
				t.Fatalf("threads' engines %v, want one %s", engines, j.engine)
			}
			// fio keeps iodepth in flight at most; a shallow job may not
			// fill it, a deep one fills most of it.
			if depth > j.depth || depth < (j.depth+1)/2 {
				t.Errorf("captured depth %d, fio's iodepth %d", depth, j.depth)
			}
			res, f := replayAFAP(context.Background(), t, mnt, src)
			for _, ph := range res {
				for _, s := range ph.Streams {
					t.Logf("replay stream %s %s: %d ops, %d bytes", s.Name, s.Op, s.Ops, s.Bytes)
				}
			}
			t.Logf("captured depth %d (events %+v); replay-afap:cap against its capture:", depth, src.Manifest.Events)
			logDiffs(t, f.Capture, *f.Replay)
			t.Logf("skipped: %v problems: %v", f.Skipped, f.Problems)
			// The bounds for asynchronous engines: requests and
			// bytes within 2%, the read share within a percentage point.
			for _, d := range replay.Differences(f.Capture, *f.Replay) {
				diff, bound := d.Relative, 0.02
				switch d.Name {
				case "ios", "bytes":
				case "read_share":
					diff, bound = d.Replay-d.Capture, 0.01
				default:
					continue
				}
				if math.IsNaN(diff) || math.Abs(diff) > bound {
					t.Errorf("%s: capture %g, replay %g: %+.2f%%, bound ±%.0f%%", d.Name, d.Capture, d.Replay, diff*100, bound*100)
				}
			}
		})
	}
}

// replayAFAP replays src as fast as it can (replay-afap:cap) in a new
// directory of mnt: replayRecorded.
func replayAFAP(ctx context.Context, t *testing.T, mnt string, src *replay.Source) ([]benchresult.Phase, *benchresult.Fidelity) {
	t.Helper()
	return replayRecorded(ctx, t, mnt, "replay-afap:cap", "afap", src)
}

// replayRecorded runs the replay profile name (replay:cap, replay-afap:cap)
// of src in mnt/dir, a new directory, recording the replay's block
// requests, and returns the run's phases and its fidelity, which has the
// replay's block trace.
func replayRecorded(ctx context.Context, t *testing.T, mnt, name, dir string, src *replay.Source) ([]benchresult.Phase, *benchresult.Fidelity) {
	t.Helper()
	plan, err := profile.New(name, profile.Params{Scale: 1, Runtime: time.Second, Dir: mnt, Capture: src})
	if err != nil {
		t.Fatal(err)
	}
	plan.Recorder = replay.RecordBlocks
	run := filepath.Join(mnt, dir)
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	res, _, err := plan.Run(ctx, run, profile.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	f := plan.Fidelity()
	if f == nil || f.Replay == nil {
		t.Fatalf("%s: no replay block trace: %+v", name, f)
	}
	return res, f
}
