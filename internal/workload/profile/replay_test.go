package profile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/testing/testenv"
	"github.com/slowpath/slowpath/internal/workload/replay"
)

func replaySource() *replay.Source {
	tr := &replay.Trace{Files: []replay.File{{Name: "f0001", Size: 1 << 20}},
		Threads: []replay.Thread{{Name: "t0001", Ops: []replay.Op{
			{Kind: replay.Write, Offset: 0, Length: 65536, At: time.Millisecond},
			{Kind: replay.Read, Offset: 65536, Length: 4096, At: 2 * time.Millisecond},
			{Kind: replay.Fdatasync, At: 3 * time.Millisecond}}}}}
	return &replay.Source{Trace: tr, Blocks: benchresult.BlockTrace{Device: "vda", IOs: 3}}
}

func TestReplayNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		dir  string
		ok   bool
		mode replay.Mode
	}{
		{"replay:cap", "cap", true, replay.Timed},
		{"replay-afap:/srv/cap", "/srv/cap", true, replay.AFAP},
		{"replay:", "", false, ""},
		{"replay-afap:", "", false, ""},
		{"replays:cap", "", false, ""},
	} {
		d, ok := ReplayDir(tc.name)
		if d != tc.dir || ok != tc.ok || Known(tc.name) != tc.ok {
			t.Errorf("ReplayDir(%q) = %q, %v (Known %v), want %q, %v", tc.name, d, ok, Known(tc.name), tc.dir, tc.ok)
		}
		if ok && ReplayMode(tc.name) != tc.mode {
			t.Errorf("ReplayMode(%q) = %s, want %s", tc.name, ReplayMode(tc.name), tc.mode)
		}
		if m, mok := MetricsOf(tc.name); mok != tc.ok || ok && len(m.Primary) == 0 {
			t.Errorf("MetricsOf(%q) = %+v, %v", tc.name, m, mok)
		}
	}
	if m, _ := MetricsOf("replay:cap"); m.Primary[0].Row() != "total_p99" {
		t.Errorf("timed replay's first primary metric is %s, want the latency", m.Primary[0])
	}
	if m, _ := MetricsOf("replay-afap:cap"); m.Primary[0].Row() != "total_iops" {
		t.Errorf("afap replay's first primary metric is %s, want the throughput", m.Primary[0])
	}
}

func TestReplayPlan(t *testing.T) {
	p := Params{Scale: 1, Runtime: time.Second, Dir: "/x", NumCPU: 2}
	if _, err := New("replay:cap", p); err == nil || !strings.Contains(err.Error(), "no capture loaded") {
		t.Errorf("replay without a capture: %v", err)
	}
	p.Capture = replaySource()
	q := p
	q.Dir, q.Device = "", "/dev/vdb"
	if _, err := New("replay:cap", q); err == nil || !strings.Contains(err.Error(), "needs a directory") {
		t.Errorf("replay on a device: %v", err)
	}
	pl, err := New("replay:cap", p)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Phases) != 1 || pl.Phases[0].Replay == nil || pl.Phases[0].JobFile != nil || pl.SpaceBytes != 1<<20 || pl.Settings["mode"] != "timed" {
		t.Errorf("timed plan: %+v", pl)
	}
	pl, err = New("replay-afap:cap", p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(pl.Phases[0].JobFile), "read_iolog=t0001.iolog") || pl.Settings["mode"] != "afap" {
		t.Errorf("afap plan: %+v\n%s", pl, pl.Phases[0].JobFile)
	}
}

// TestReplayRun runs both modes for real, through Plan.Run as the engine
// does, with a recorder standing in for the block capture (which needs
// root and BPF: internal/workload/replay's TestFidelity runs the real one).
func TestReplayRun(t *testing.T) {
	for _, name := range []string{"replay:cap", "replay-afap:cap"} {
		t.Run(name, func(t *testing.T) {
			if ReplayMode(name) == replay.AFAP {
				testenv.RequireTool(t, "fio", "fio")
			}
			dir := t.TempDir()
			pl, err := New(name, Params{Scale: 1, Runtime: time.Second, Dir: dir, NumCPU: 2, Capture: replaySource()})
			if err != nil {
				t.Fatal(err)
			}
			recorded := false
			pl.Recorder = func(ctx context.Context, d string, run func(context.Context) error) (*benchresult.BlockTrace, error, error) {
				recorded = true
				return &benchresult.BlockTrace{Device: "vda", IOs: 3}, nil, run(ctx)
			}
			phases, _, err := pl.Run(context.Background(), dir, Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			ops := map[string]uint64{}
			for _, s := range phases[0].Streams {
				ops[s.Op] += s.Ops
			}
			if ops["read"] != 1 || ops["write"] != 1 || ops["sync"] != 1 {
				t.Errorf("streams %+v: want one read, one write, one sync", phases[0].Streams)
			}
			f := pl.Fidelity()
			if !recorded || f == nil || f.Replay == nil || f.Capture.Device != "vda" || f.Mode != string(ReplayMode(name)) {
				t.Errorf("fidelity %+v (recorded %v)", f, recorded)
			}
			if (f.Timing != nil) != (ReplayMode(name) == replay.Timed) {
				t.Errorf("timing %+v in mode %s", f.Timing, f.Mode)
			}
			figs := map[string]bool{}
			for _, g := range pl.Figures(phases, nil) {
				figs[g.Name] = true
			}
			if !figs["total_iops"] || !figs["total_p99"] {
				t.Errorf("figures %v: want total_iops and total_p99", figs)
			}
			if _, err := os.Stat(filepath.Join(dir, "0-replay", "f0001")); err != nil {
				t.Errorf("the files are laid out in the phase's directory: %v", err)
			}
		})
	}
}
