package profile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/workload/fio"
	"github.com/slowpath/slowpath/internal/workload/indexload"
)

// Hooks let the caller follow a run.
type Hooks struct {
	// Phase is called as phase i starts.
	Phase func(i int, name string)
	// FioStarted is called with each fio process's pid, FioExited with
	// its CPU time once it exited.
	FioStarted func(pid int)
	FioExited  func(pid int, cpu time.Duration)
	// Start is the run's start: phase offsets and load times are from it.
	Start time.Time
	// ServiceCPU reads the CPU time a database server's process tree has
	// used so far (sampler.TreeCPU); nil: the service's CPU is not
	// measured.
	ServiceCPU func(pid int) (time.Duration, error)
}

// Run runs every phase in order. On an error or a cancelled ctx it
// returns what it has, the interrupted phase marked partial.
func (pl *Plan) Run(ctx context.Context, dir string, h Hooks) ([]benchresult.Phase, []benchresult.Load, error) {
	if h.Start.IsZero() {
		h.Start = time.Now()
	}
	var phases []benchresult.Phase
	var loads []benchresult.Load
	for i, pp := range pl.Phases {
		if err := ctx.Err(); err != nil {
			return phases, loads, err
		}
		if h.Phase != nil {
			h.Phase(i, pp.Name)
		}
		pdir := filepath.Join(dir, fmt.Sprintf("%d-%s", i, pp.Name))
		if err := os.Mkdir(pdir, 0o700); err != nil {
			return phases, loads, err
		}
		start := time.Now()
		ph, pl2, err := pl.runPhase(ctx, pp, pdir, h)
		ph.StartNS = int64(start.Sub(h.Start))
		ph.DurationNS = int64(time.Since(start))
		loads = append(loads, pl2...)
		if err != nil {
			ph.Partial = true
			if len(ph.Streams) > 0 {
				phases = append(phases, ph)
			}
			return phases, loads, err
		}
		phases = append(phases, ph)
	}
	return phases, loads, nil
}

func (pl *Plan) runPhase(ctx context.Context, pp PhasePlan, pdir string, h Hooks) (benchresult.Phase, []benchresult.Load, error) {
	if pp.Replay != nil {
		ph, err := pl.runReplay(ctx, pp, pdir, h)
		return ph, nil, err
	}
	if pp.Native != nil {
		ph, err := pp.Native(ctx, pdir, h)
		ph.Name = pp.Name
		if ph.Streams == nil {
			ph.Streams = []benchresult.Stream{}
		}
		return ph, nil, err
	}
	ph := benchresult.Phase{Name: pp.Name, Engine: "fio", JobFile: string(pp.JobFile), Streams: []benchresult.Stream{}}
	var loads []benchresult.Load
	var loadErr error
	var wg sync.WaitGroup
	lctx, stopLoader := context.WithCancel(ctx)
	defer stopLoader()
	if pp.Loader != nil {
		o := *pp.Loader
		o.Start = h.Start
		wg.Add(1)
		go func() {
			defer wg.Done()
			loads, loadErr = indexload.Watch(lctx, o)
		}()
	}
	res, err := fio.Invocation{JobFile: pp.JobFile, Dir: pdir, Started: h.FioStarted, Exited: h.FioExited}.Run(ctx)
	stopLoader()
	wg.Wait()
	if res != nil {
		ph.Streams = streams(res, pdir, pp.logs)
	}
	if err == nil && loadErr != nil {
		err = fmt.Errorf("index loader: %w", loadErr)
	}
	return ph, loads, err
}

// streams converts fio's groups into streams: one per direction that did
// I/O, plus the sync calls (commits, checkpoints) where there were any.
func streams(res *fio.Result, dir string, logs []string) []benchresult.Stream {
	logged := map[string]bool{}
	for _, l := range logs {
		logged[l] = true
	}
	var out []benchresult.Stream
	for _, j := range res.Jobs {
		var bw, iops map[int][]fio.LogPoint
		if logged[j.Name] {
			bw, _ = fio.SumLogs(dir, j.Name, "bw")
			iops, _ = fio.SumLogs(dir, j.Name, "iops")
		}
		for _, d := range []struct {
			op  string
			dir int
			v   fio.Direction
		}{{"read", 0, j.Read}, {"write", 1, j.Write}} {
			if d.v.IOs == 0 {
				continue
			}
			s := benchresult.Stream{Name: j.Name, Op: d.op, Ops: d.v.IOs, Bytes: d.v.Bytes, RuntimeNS: int64(d.v.Runtime),
				OpsPerSec: d.v.IOPS, BytesPerSec: d.v.BandwidthBytes, Latency: latency(d.v.Clat)}
			for _, p := range iops[d.dir] {
				s.Timeline = append(s.Timeline, benchresult.Point{TMS: p.TimeMS, Value: p.Value, Unit: benchresult.UnitIOPS})
			}
			for _, p := range bw[d.dir] {
				s.Timeline = append(s.Timeline, benchresult.Point{TMS: p.TimeMS, Value: p.Value, Unit: benchresult.UnitBytesPerSec})
			}
			out = append(out, s)
		}
		if j.Sync.Count > 0 {
			rt := j.Runtime
			s := benchresult.Stream{Name: j.Name, Op: "sync", Ops: j.Sync.Count, RuntimeNS: int64(rt), Latency: latency(j.Sync.Lat)}
			if rt > 0 {
				s.OpsPerSec = float64(j.Sync.Count) / rt.Seconds()
			}
			out = append(out, s)
		}
	}
	if out == nil {
		out = []benchresult.Stream{}
	}
	return out
}

func latency(l fio.Latency) *benchresult.Latency {
	if l.Count == 0 {
		return nil
	}
	out := &benchresult.Latency{Count: l.Count, MinNS: int64(l.Min), MeanNS: float64(l.Mean), MaxNS: int64(l.Max)}
	for _, p := range l.Percentiles {
		out.Percentiles = append(out.Percentiles, benchresult.Percentile{P: p.P, ValueNS: int64(p.Value)})
	}
	if len(l.Bins) > 0 {
		h := &benchresult.Histogram{Bins: make([]benchresult.Bin, 0, len(l.Bins))}
		for _, b := range l.Bins {
			h.Bins = append(h.Bins, benchresult.Bin{ValueNS: int64(b.Value), Count: b.Count})
		}
		out.Histogram = h
	}
	return out
}

// IndexLoads reports whether the plan runs the native index loader
// (search-index): its loads are timed against a slow-load threshold.
func (pl *Plan) IndexLoads() bool { return pl.loader }

// LoadTimes summarises the loader's loads (search-index only).
func (pl *Plan) LoadTimes(loads []benchresult.Load) *benchresult.LoadTimes {
	if !pl.loader {
		return nil
	}
	return indexload.Summarise(loads, pl.slowLoad)
}
