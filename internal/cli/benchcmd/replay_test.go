package benchcmd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/capture/capfile"
	"github.com/slowpath/slowpath/internal/testing/capfiletest"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

func TestReplay(t *testing.T) {
	capDir := capfiletest.Service(t)
	for _, prof := range []string{"replay:", "replay-afap:"} {
		t.Run(prof, func(t *testing.T) {
			testenv.RequireTool(t, "fio", "fio") // bench checks for fio first
			res := filepath.Join(t.TempDir(), "r.json")
			code, stdout, stderr := run(t, "bench", prof+capDir, "--dir", t.TempDir(), "-o", res)
			if code != 0 {
				t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
			}
			r, err := benchresult.ReadFile(res)
			if err != nil {
				t.Fatal(err)
			}
			if r.Profile != prof+"cap" || r.Fidelity == nil || r.Fidelity.Capture.IOs != 40 || r.Fidelity.Capture.Device != "vda" {
				t.Fatalf("result profile %s, fidelity %+v", r.Profile, r.Fidelity)
			}
			var reads, writes, syncs uint64
			for _, s := range r.Phases[0].Streams {
				switch s.Op {
				case "read":
					reads += s.Ops
				case "write":
					writes += s.Ops
				case "sync":
					syncs += s.Ops
				}
			}
			if reads != 40 || writes != 40 || syncs != 5 {
				t.Errorf("replayed %d reads, %d writes, %d syncs; want 40, 40, 5", reads, writes, syncs)
			}
			if !strings.Contains(stdout, "fidelity ("+string(r.Fidelity.Mode)+" replay; block requests on vda") {
				t.Errorf("summary lacks the fidelity:\n%s", stdout)
			}
			t.Logf("%s", stdout)
			// Recorded (root with BPF) or saying why not; bench always
			// asks for it (compare only with --fidelity).
			if r.Fidelity.Replay == nil && len(r.Fidelity.Problems) == 0 {
				t.Errorf("no replay trace and no problem said: %+v", r.Fidelity)
			}
			for _, p := range r.Fidelity.Problems {
				if strings.Contains(p, "not asked for") {
					t.Errorf("bench did not ask for the replay's fidelity: %s", p)
				}
			}
		})
	}
}

func TestReplayRefused(t *testing.T) {
	capDir := capfiletest.Service(t)
	ops := filepath.Join(capDir, capfile.OpsName)
	b, err := os.ReadFile(ops)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ops, b[:len(b)-8], 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "bench", "replay:"+capDir, "--dir", t.TempDir())
	if code != 2 || !strings.Contains(stderr, "capture truncated") {
		t.Errorf("truncated capture: exit %d: %s", code, stderr)
	}
	code, _, stderr = run(t, "bench", "export", "replay:"+capDir, "-o", filepath.Join(t.TempDir(), "x"))
	if code != 2 || !strings.Contains(stderr, "capture truncated") {
		t.Errorf("export of a truncated capture: exit %d: %s", code, stderr)
	}
	code, _, stderr = run(t, "bench", "replay:"+t.TempDir(), "--dir", t.TempDir())
	if code != 2 || !strings.Contains(stderr, "no manifest.json") {
		t.Errorf("not a capture: exit %d: %s", code, stderr)
	}
}

// TestReplayNoSpace: a capture whose files exceed the target's free space
// is refused with the numbers before anything is written.
func TestReplayNoSpace(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	dir := filepath.Join(t.TempDir(), "big")
	w, err := capfile.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Ops.Write(capfile.Op{Kind: capfile.OpRead, Thread: 1, File: 1, Length: 4096, Result: 4096, Start: 1, End: 2}); err != nil {
		t.Fatal(err)
	}
	m := &capfile.Manifest{Status: capfile.StatusComplete, DurationNS: 1e9,
		Kernel:  capfile.Kernel{Release: "6.1.0-test", FaultSource: capfile.FaultSourceFilemap},
		Filters: capfile.Filters{MountDevice: "254:0"}, Limits: capfile.Limits{DurationNS: 1e9, MaxRecords: 1 << 20},
		Files:   []capfile.File{{ID: 1, Name: "f0001", SizeBytes: 1 << 50, SizeStartBytes: 1 << 50}},
		Threads: []capfile.Thread{{ID: 1, Process: 1}},
		System:  capfile.System{PageSize: 4096, Sysctls: map[string]string{}}}
	if err := w.Finish(m); err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	code, _, stderr := run(t, "bench", "replay:"+dir, "--dir", target)
	if code != 2 || !strings.Contains(stderr, "not enough free space in "+target+": this run writes up to 1.0 PiB") || !strings.Contains(stderr, "replay on a larger filesystem") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("refused replay left %v", ents)
	}
}

func TestExportReplay(t *testing.T) {
	capDir := capfiletest.Service(t)
	out := filepath.Join(t.TempDir(), "repro")
	code, stdout, stderr := run(t, "bench", "export", "replay:"+capDir, "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, f := range []string{"replay-afap.fio", "replay-fio-timed.fio", "t0001.iolog", "t0002.iolog", "run.sh", "README.md"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if !strings.Contains(stdout, "2 iologs") {
		t.Errorf("stdout: %s", stdout)
	}
	if b, err := exec.Command("sh", "-n", filepath.Join(out, "run.sh")).CombinedOutput(); err != nil {
		t.Errorf("sh -n run.sh: %v: %s", err, b)
	}
	if code, _, _ := run(t, "bench", "export", "replay:"+capDir, "-o", out); code != 2 {
		t.Error("export over an existing directory accepted")
	}
	// A span replay is not what run.sh runs: refused before anything is
	// written, naming what to export instead.
	spanOut := filepath.Join(t.TempDir(), "span")
	code, _, stderr = run(t, "bench", "export", "replay-span:"+capDir, "-o", spanOut)
	if _, err := os.Stat(spanOut); code != 2 || !strings.Contains(stderr, "export replay:DIR") || !os.IsNotExist(err) {
		t.Errorf("export of a span replay: exit %d, %v: %s", code, err, stderr)
	}
}

// TestCompareReplay: compare --profile takes a replay like any profile
// (the engine's ParseWorkload loads the capture), and decides on the
// replay's declared metrics.
func TestCompareReplay(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	capDir := capfiletest.Service(t)
	code, stdout, stderr := run(t, "compare", "--profile", "replay:"+capDir, "--target", "a="+t.TempDir(), "--target", "b="+t.TempDir(), "--runs", "2", "--format", "json")
	if code != 0 && code != 1 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{`"total_p99"`, `"total_iops"`, `"a-1"`, `"b-2"`} {
		if !strings.Contains(stdout, w) {
			t.Errorf("compare's JSON lacks %s:\n%.2000s", w, stdout)
		}
	}
}
