package profile

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/workload/fio"
	"github.com/slowpath/slowpath/internal/workload/replay"
)

// ReplayPrefix starts a replay:DIR profile: the capture in DIR replayed
// on its captured schedule (docs/replay.md); ReplayAFAPPrefix as fast as
// possible; ReplaySpanPrefix as fast as possible for as long as each
// thread was busy.
const (
	ReplayPrefix     = "replay:"
	ReplayAFAPPrefix = "replay-afap:"
	ReplaySpanPrefix = "replay-span:"
)

func init() {
	Register(replayProfile{replay.Timed})
	Register(replayProfile{replay.AFAP})
	Register(replayProfile{replay.Span})
}

// replayProfile is the family of a capture's replays in one mode.
type replayProfile struct{ mode replay.Mode }

// Spec: a timed replay keeps the captured offered load, so latency is the
// answer: the p99 of all its I/Os first, then IOPS; replay-afap runs as
// fast as it can, so IOPS first.
func (r replayProfile) Spec() Spec {
	s := Spec{Name: ReplayPrefix, Arg: "the capture directory", Needs: Dir, Rank: 50,
		Description: "a capture (slowpath capture) replayed on its captured schedule",
		Metrics:     &Metrics{Primary: []Metric{{Figure: "total_p99"}, {Figure: "total_iops"}}, Guards: totalMetrics.Guards}}
	switch r.mode {
	case replay.AFAP:
		s.Name, s.Rank, s.Metrics = ReplayAFAPPrefix, 60, &totalMetrics
		s.Description = "a capture replayed as fast as possible, by fio from per-thread iologs"
	case replay.Span:
		s.Name, s.Rank, s.Metrics = ReplaySpanPrefix, 65, &totalMetrics
		s.Description = "replay-afap for as long as the service was busy: a thread still busy when the capture ended repeats its operations for as long as it was busy"
	}
	s.Usage = s.Name + "DIR"
	return s
}

// ReplayDir returns the capture directory of a replay profile name and
// whether name is one.
func ReplayDir(name string) (string, bool) {
	for _, prefix := range []string{ReplayPrefix, ReplayAFAPPrefix, ReplaySpanPrefix} {
		if d, ok := strings.CutPrefix(name, prefix); ok && d != "" {
			return d, true
		}
	}
	return "", false
}

// resolve loads the capture; the capture directory's base name names the
// profile in the result, as a job file's does.
func (replayProfile) resolve(arg string) (Arg, error) {
	dir, _ := ReplayDir(arg)
	a := Arg{Name: strings.TrimSuffix(arg, dir) + filepath.Base(filepath.Clean(dir))}
	if err := benchresult.ValidProfile(a.Name); err != nil {
		return Arg{}, err
	}
	src, err := replay.Load(dir)
	if err != nil {
		return Arg{}, fmt.Errorf("profile %s: %w", arg, err)
	}
	a.Capture = src
	return a, nil
}

func (replayProfile) Figures(phases []benchresult.Phase, _ *benchresult.LoadTimes) []benchresult.Figure {
	return jobFigures(phases)
}

// ReplayPhase is a phase replaying a capture.
type ReplayPhase struct {
	Source *replay.Source
	Mode   replay.Mode
}

// ReplayMode is the mode a replay profile name asks for.
func ReplayMode(name string) replay.Mode {
	if strings.HasPrefix(name, ReplayAFAPPrefix) {
		return replay.AFAP
	}
	if strings.HasPrefix(name, ReplaySpanPrefix) {
		return replay.Span
	}
	return replay.Timed
}

// Plan replays the capture in p.Capture: timed (replay:DIR) by
// slowpath's own replayer, or as fast as possible (replay-afap:DIR; for
// as long as each busy thread was busy, replay-span:DIR) by fio from
// per-thread iologs. --scale and --runtime do not apply: a
// replay is the capture's length.
func (replayProfile) Plan(name string, p Params) (*Plan, error) {
	src := p.Capture
	if src == nil {
		return nil, fmt.Errorf("profile %s: no capture loaded (replay.Load)", name)
	}
	t := src.Trace
	mode := ReplayMode(name)
	ops := 0
	for _, th := range t.Threads {
		ops += len(th.Ops)
	}
	streams := t.StreamsFor(mode)
	ph := PhasePlan{Name: "replay", Expected: t.Span() + layoutTime(t.Bytes()), Replay: &ReplayPhase{Source: src, Mode: mode}}
	if mode != replay.Timed {
		job, err := replay.JobFile(streams, mode)
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", name, err)
		}
		ph.JobFile = job
		ph.Expected = layoutTime(t.Bytes())
		if mode == replay.Span {
			ph.Expected += t.End
		}
	}
	return &Plan{Profile: name, SpaceBytes: t.Space(),
		Settings: map[string]string{"mode": string(mode), "threads": strconv.Itoa(len(t.Threads)), "streams": strconv.Itoa(len(streams)),
			"files": strconv.Itoa(len(t.Files)), "ops": strconv.Itoa(ops), "file_bytes": strconv.FormatInt(t.Bytes(), 10),
			"capture_span": t.Span().String()},
		Phases: []PhasePlan{ph}}, nil
}

// runReplay lays the capture's files out in pdir and replays them there.
func (pl *Plan) runReplay(ctx context.Context, pp PhasePlan, pdir string, h Hooks) (benchresult.Phase, error) {
	rp := pp.Replay
	t := rp.Source.Trace
	ph := benchresult.Phase{Name: pp.Name, Engine: "slowpath-replay", Streams: []benchresult.Stream{}}
	if err := replay.Layout(ctx, pdir, t); err != nil {
		return ph, err
	}
	fid := &benchresult.Fidelity{Mode: string(rp.Mode), Capture: rp.Source.Blocks, Skipped: rp.Source.Skipped}
	if m := rp.Source.Manifest; m != nil {
		if note := replay.MissedNote(m, rp.Source.Blocks); note != "" {
			fid.Problems = append(fid.Problems, note)
		}
	}
	pl.fidelity = fid
	run := func(ctx context.Context) error {
		if rp.Mode == replay.Timed {
			out, err := replay.Replay(ctx, pdir, t)
			if out != nil {
				ph.Streams = out.Streams
				fid.Timing = &benchresult.ReplayTiming{Ops: out.Timing.Ops, LateP50NS: out.Timing.LateP50NS, LateP99NS: out.Timing.LateP99NS, LateMaxNS: out.Timing.LateMaxNS}
				if out.BeyondEOF > 0 {
					fid.Skipped = maps.Clone(fid.Skipped)
					if fid.Skipped == nil {
						fid.Skipped = map[string]uint64{}
					}
					fid.Skipped["fault-beyond-eof"] = out.BeyondEOF
				}
			}
			return err
		}
		ph.Engine, ph.JobFile = "fio", string(pp.JobFile)
		if _, err := replay.WriteIologs(pdir, t, rp.Mode); err != nil {
			return err
		}
		res, err := fio.Invocation{JobFile: pp.JobFile, Dir: pdir, Started: h.FioStarted, Exited: h.FioExited}.Run(ctx)
		if res != nil {
			ph.Streams = streams(res, pdir, nil)
		}
		return err
	}
	if pl.Recorder == nil {
		fid.Problems = append(fid.Problems, "the replay's block requests were not recorded (not asked for: the recorder's CPU would be in the figures): only the capture's are shown")
		return ph, run(ctx)
	}
	bt, recErr, runErr := pl.Recorder(ctx, pdir, run)
	fid.Replay = bt
	if recErr != nil {
		// One line: the result's problems are single-line text.
		fid.Problems = append(fid.Problems, "the replay's block requests were not recorded: "+strings.Join(strings.Fields(recErr.Error()), " "))
	}
	return ph, runErr
}

// BlockRecorder records the block requests of the device holding dir
// while run runs, summarised as replay.SummarizeBlocks does
// (replay.RecordBlocks). recErr says why it recorded nothing; runErr is
// run's.
type BlockRecorder func(ctx context.Context, dir string, run func(context.Context) error) (bt *benchresult.BlockTrace, recErr, runErr error)

// Fidelity is a replay run's fidelity (nil for other profiles): set by
// Run.
func (pl *Plan) Fidelity() *benchresult.Fidelity { return pl.fidelity }
