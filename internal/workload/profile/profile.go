// Package profile holds slowpath bench's workloads: the incident-shaped
// profiles (search-index, db-commit, telemetry-ingest) and any fio job
// file (fio:FILE), each planned as fio job files plus, for search-index,
// the native index loader. A plan runs in a directory the caller owns and
// returns its phases as benchresult types; figures are derived from them.
package profile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/workload/fio"
	"github.com/slowpath/slowpath/internal/workload/indexload"
	"github.com/slowpath/slowpath/internal/workload/replay"
)

// Names of the built-in profiles.
const (
	SearchIndex     = "search-index"
	DBCommit        = "db-commit"
	TelemetryIngest = "telemetry-ingest"
	// FioPrefix starts a fio:FILE profile.
	FioPrefix = "fio:"
	// ReplayPrefix starts a replay:DIR profile: the capture in DIR
	// replayed on its captured schedule (docs/replay.md);
	// ReplayAFAPPrefix as fast as possible.
	ReplayPrefix     = "replay:"
	ReplayAFAPPrefix = "replay-afap:"
)

// Names lists the built-in profiles for usage messages.
var Names = []string{SearchIndex, DBCommit, TelemetryIngest, FioPrefix + "FILE", ReplayPrefix + "DIR", ReplayAFAPPrefix + "DIR"}

// ErrUnknown is wrapped by New for a profile name it does not know.
var ErrUnknown = errors.New("unknown profile")

// DefaultRuntime is --runtime's default: every profile at scale 1 then
// finishes in under a minute (db-commit's three phases are the longest).
const DefaultRuntime = 15 * time.Second

// MaxScale bounds --scale: the incident's sizes (30 writers × 2 GiB, a
// 50 GiB blob) are reached at 32.
const MaxScale = 64

// Params are the inputs of a plan.
type Params struct {
	Scale   float64
	Runtime time.Duration // per timed phase
	Dir     string        // the run's own directory (created by the caller)
	// Device is a block device to run on instead of Dir's files
	// (db-commit and telemetry-ingest; the caller has checked it is
	// expendable).
	Device   string
	SlowLoad time.Duration // search-index: loads above it are slow
	// JobFile is the fio job file of a fio:FILE profile.
	JobFile []byte
	// Capture is the loaded capture of a replay profile (replay.Load).
	Capture *replay.Source
	NumCPU  int
}

// Plan is a profile sized for one run.
type Plan struct {
	Profile  string
	Settings map[string]string
	Phases   []PhasePlan
	// SpaceBytes is what the run writes at most: the free-space check.
	SpaceBytes uint64
	// Recorder, when set, records the block trace of a replay (the
	// replay's fidelity); the caller sets it before Run.
	Recorder BlockRecorder
	slowLoad time.Duration
	fidelity *benchresult.Fidelity
}

// PhasePlan is one fio invocation (plus the loader for search-index).
type PhasePlan struct {
	Name    string
	JobFile []byte
	// Expected is the phase's expected wall time (progress).
	Expected time.Duration
	// Loader, when set, runs the native index loader during the phase.
	Loader *indexload.Options
	// Replay, when set, makes the phase a replay of a capture: its files
	// laid out in the phase's directory, then replayed by slowpath on the
	// captured schedule (timed) or by fio with JobFile (as fast as
	// possible).
	Replay *ReplayPhase
	logs   []string // fio log prefixes written by the job file
}

// Known reports whether New plans a profile called name: the front ends
// check a name with it before anything runs. A new kind of workload is
// added here and in New, and every front end takes it.
func Known(name string) bool {
	switch name {
	case SearchIndex, DBCommit, TelemetryIngest:
		return true
	}
	if _, ok := FindLabJob(name); ok && strings.HasPrefix(name, LabPrefix) {
		return true
	}
	_, ok := ReplayDir(name)
	return ok || strings.HasPrefix(name, FioPrefix) && len(name) > len(FioPrefix)
}

// ReplayDir returns the capture directory of a replay profile name and
// whether name is one.
func ReplayDir(name string) (string, bool) {
	for _, prefix := range []string{ReplayPrefix, ReplayAFAPPrefix} {
		if d, ok := strings.CutPrefix(name, prefix); ok && d != "" {
			return d, true
		}
	}
	return "", false
}

// ParseScale checks --scale.
func ParseScale(s float64) error {
	if math.IsNaN(s) || s <= 0 || s > MaxScale {
		return fmt.Errorf("--scale %v: want a number above 0 and at most %d (1 is the default size, %d the incident's)", s, MaxScale, 32)
	}
	return nil
}

// New plans profile name for p. An unknown name wraps ErrUnknown.
func New(name string, p Params) (*Plan, error) {
	if err := ParseScale(p.Scale); err != nil {
		return nil, err
	}
	if p.Runtime <= 0 {
		return nil, fmt.Errorf("--runtime %v: want a positive duration", p.Runtime)
	}
	if p.NumCPU <= 0 {
		p.NumCPU = 1
	}
	// fio job files are line-based: a path with a line break would end
	// its option (render refuses it; this says why first).
	if strings.ContainsAny(p.Dir+p.Device, "\n\r") {
		return nil, fmt.Errorf("the target path %q contains a line break, which an fio job file cannot hold", p.Dir+p.Device)
	}
	// fio cuts a line at ';' or '#' (comments) and splits directory= and
	// filename= at ':' ('\:' escapes it, jobPath does): a cut or split
	// path would send fio's files outside the run's directory.
	if strings.ContainsAny(p.Dir+p.Device, ";#\\") {
		return nil, fmt.Errorf("the target path %q contains ';', '#' or '\\', which an fio job file cannot hold: use another path", p.Dir+p.Device)
	}
	p.Dir, p.Device = jobPath(p.Dir), jobPath(p.Device)
	switch {
	case p.Device != "" && (name == SearchIndex || strings.HasPrefix(name, FioPrefix) || isReplay(name)):
		return nil, fmt.Errorf("profile %s needs a directory (--dir), not a device", name)
	case isReplay(name):
		return replayPlan(name, p)
	case name == SearchIndex:
		return searchIndex(p)
	case name == DBCommit:
		return dbCommit(p)
	case name == TelemetryIngest:
		return telemetryIngest(p)
	case strings.HasPrefix(name, FioPrefix) && len(name) > len(FioPrefix):
		return fioFile(name, p)
	case strings.HasPrefix(name, LabPrefix):
		return labJob(name, p)
	}
	return nil, fmt.Errorf("%w %q: use one of %s", ErrUnknown, name, strings.Join(Names, ", "))
}

const (
	kib = 1 << 10
	mib = 1 << 20
	gib = 1 << 30
)

func clampInt(v float64, lo, hi int) int {
	n := int(math.Round(v))
	return min(max(n, lo), hi)
}

func clampBytes(v float64, lo, hi, align int64) int64 {
	n := int64(math.Round(v/float64(align))) * align
	return min(max(n, lo), hi) / align * align
}

// size spells bytes as fio does.
func size(n int64) string {
	switch {
	case n%gib == 0:
		return strconv.FormatInt(n/gib, 10) + "g"
	case n%mib == 0:
		return strconv.FormatInt(n/mib, 10) + "m"
	case n%kib == 0:
		return strconv.FormatInt(n/kib, 10) + "k"
	}
	return strconv.FormatInt(n, 10)
}

func secs(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + "ms" }

func render(f fio.File) []byte {
	b, err := f.Render()
	if err != nil {
		// Plans are built from constants, numbers and a path New checked.
		panic(err)
	}
	return b
}

// searchIndex is the incident's fio pair: writers laying down new index
// files with psync 4 MiB writes while readers mmap-read a blob at random
// (4 KiB-1 MiB), plus the native loader loading each finished file.
func searchIndex(p Params) (*Plan, error) {
	s := p.Scale
	writers := clampInt(4*s, 1, 30)
	perWriter := clampBytes(64*mib*s, 8*mib, 2*gib, mib)
	files := 4
	fileSize := perWriter / int64(files) / mib * mib
	bs := min(int64(4*mib), fileSize)
	readers := clampInt(8*s, 1, 8)
	// The blob grows faster than the rest so that scale 32 is the
	// incident's 50 GiB: 256 MiB × s^(log 200 / log 32).
	blob := clampBytes(256*mib*math.Pow(s, math.Log(200)/math.Log(32)), 16*mib, 50*gib, mib)
	f := fio.File{
		Global: []fio.Option{{Key: "directory", Value: p.Dir}, {Key: "group_reporting"}, {Key: "log_avg_msec", Value: "1000"},
			{Key: "runtime", Value: secs(p.Runtime)}, {Key: "invalidate", Value: "1"}},
		Jobs: []fio.Section{
			{Name: "writers", Options: []fio.Option{{Key: "rw", Value: "write"}, {Key: "ioengine", Value: "psync"}, {Key: "bs", Value: size(bs)},
				{Key: "numjobs", Value: strconv.Itoa(writers)}, {Key: "nrfiles", Value: strconv.Itoa(files)}, {Key: "filesize", Value: size(fileSize)},
				{Key: "file_service_type", Value: "sequential"}, {Key: "fallocate", Value: "none"},
				{Key: "write_bw_log", Value: "writers"}, {Key: "write_iops_log", Value: "writers"}}},
			{Name: "readers", Options: []fio.Option{{Key: "new_group"}, {Key: "rw", Value: "randread"}, {Key: "ioengine", Value: "mmap"},
				{Key: "bsrange", Value: "4k-1m"}, {Key: "numjobs", Value: strconv.Itoa(readers)}, {Key: "filename", Value: "blob"},
				{Key: "size", Value: size(blob)}, {Key: "time_based"},
				{Key: "write_bw_log", Value: "readers"}, {Key: "write_iops_log", Value: "readers"}}},
		},
	}
	pl := &Plan{Profile: SearchIndex, slowLoad: p.SlowLoad,
		Settings: map[string]string{"writers": strconv.Itoa(writers), "writer_bytes": size(perWriter), "files_per_writer": strconv.Itoa(files),
			"file_size": size(fileSize), "write_bs": size(bs), "readers": strconv.Itoa(readers), "read_bs": "4k-1m", "blob": size(blob),
			"loads_per_sec_max": "4", "slow_load": p.SlowLoad.String()},
		SpaceBytes: uint64(int64(writers)*perWriter + blob),
		Phases: []PhasePlan{{Name: "pair", JobFile: render(f), Expected: p.Runtime + layoutTime(blob),
			logs:   []string{"writers", "readers"},
			Loader: &indexload.Options{Dir: loaderDir(p.Dir), Prefix: "writers.", FileSize: fileSize, MaxRate: 4, Evict: true}}},
	}
	return pl, nil
}

// jobPath escapes ':' in a directory= or filename= value (fio splits
// both at ':', HOWTO "filename"). search-index's loader gets the escaped
// Dir back unescaped (loaderDir).
func jobPath(p string) string { return strings.ReplaceAll(p, ":", `\:`) }

func loaderDir(p string) string { return strings.ReplaceAll(p, `\:`, ":") }

// where places a profile's files: in the run's directory, or on the
// device itself.
func where(p Params) []fio.Option {
	if p.Device != "" {
		return []fio.Option{{Key: "filename", Value: p.Device}}
	}
	return []fio.Option{{Key: "directory", Value: p.Dir}}
}

// layoutTime is a guess of fio laying out n bytes (progress only).
func layoutTime(n int64) time.Duration {
	return time.Duration(float64(n) / (200 * mib) * float64(time.Second))
}

// dbCommit is the PostgreSQL story's job (4 KiB direct random read/write,
// one job) and commits: 8 KiB writes each followed by fdatasync, one job
// and N jobs.
func dbCommit(p Params) (*Plan, error) {
	s := p.Scale
	fileSize := clampBytes(64*mib*s, 16*mib, 16*gib, mib)
	walSize := clampBytes(32*mib*s, 8*mib, 4*gib, mib)
	n := clampInt(float64(2*p.NumCPU)*math.Max(1, s), 2, 64)
	global := append(where(p), fio.Option{Key: "group_reporting"}, fio.Option{Key: "log_avg_msec", Value: "1000"},
		fio.Option{Key: "runtime", Value: secs(p.Runtime)}, fio.Option{Key: "time_based"}, fio.Option{Key: "ioengine", Value: "psync"})
	directFile := []fio.Option{{Key: "filename", Value: "db"}}
	if p.Device != "" {
		directFile = nil // the device, from global
	}
	direct := fio.File{Global: global, Jobs: []fio.Section{{Name: "direct", Options: append([]fio.Option{{Key: "rw", Value: "randrw"},
		{Key: "rwmixread", Value: "50"}, {Key: "bs", Value: "4k"}, {Key: "direct", Value: "1"}, {Key: "size", Value: size(fileSize)},
		{Key: "write_bw_log", Value: "direct"}, {Key: "write_iops_log", Value: "direct"}}, directFile...)}}}
	commit := func(jobs int) fio.File {
		opts := []fio.Option{{Key: "rw", Value: "write"},
			{Key: "bs", Value: "8k"}, {Key: "fdatasync", Value: "1"}, {Key: "size", Value: size(walSize)}, {Key: "numjobs", Value: strconv.Itoa(jobs)},
			{Key: "write_bw_log", Value: "commit"}, {Key: "write_iops_log", Value: "commit"}}
		if p.Device != "" {
			// Each job its own region after the database's.
			opts = append(opts, fio.Option{Key: "offset", Value: size(fileSize)}, fio.Option{Key: "offset_increment", Value: size(walSize)})
		}
		return fio.File{Global: global, Jobs: []fio.Section{{Name: "commit", Options: opts}}}
	}
	return &Plan{Profile: DBCommit,
		Settings: map[string]string{"direct_file": size(fileSize), "direct_bs": "4k", "direct_rwmixread": "50", "commit_bs": "8k",
			"wal_size": size(walSize), "commit_jobs_n": strconv.Itoa(n)},
		SpaceBytes: uint64(fileSize + int64(n)*walSize),
		Phases: []PhasePlan{
			{Name: "direct-4k", JobFile: render(direct), Expected: p.Runtime + layoutTime(fileSize), logs: []string{"direct"}},
			{Name: "commit-1", JobFile: render(commit(1)), Expected: p.Runtime + layoutTime(walSize), logs: []string{"commit"}},
			{Name: "commit-N", JobFile: render(commit(n)), Expected: p.Runtime + layoutTime(int64(n)*walSize), logs: []string{"commit"}},
		}}, nil
}

// telemetryIngest appends 64 KiB records sequentially with a checkpoint
// fsync every N MiB.
func telemetryIngest(p Params) (*Plan, error) {
	s := p.Scale
	fileSize := clampBytes(256*mib*s, 32*mib, 64*gib, mib)
	const bs = 64 * kib
	checkpoint := int64(8 * mib)
	opts := []fio.Option{{Key: "rw", Value: "write"}, {Key: "bs", Value: size(bs)},
		{Key: "fsync", Value: strconv.FormatInt(checkpoint/bs, 10)}, {Key: "size", Value: size(fileSize)},
		{Key: "write_bw_log", Value: "ingest"}, {Key: "write_iops_log", Value: "ingest"}}
	if p.Device == "" {
		opts = append(opts, fio.Option{Key: "fallocate", Value: "none"}, fio.Option{Key: "filename", Value: "ingest"})
	}
	f := fio.File{Global: append(where(p), fio.Option{Key: "group_reporting"}, fio.Option{Key: "log_avg_msec", Value: "1000"},
		fio.Option{Key: "runtime", Value: secs(p.Runtime)}, fio.Option{Key: "time_based"}, fio.Option{Key: "ioengine", Value: "psync"}),
		Jobs: []fio.Section{{Name: "ingest", Options: opts}}}
	return &Plan{Profile: TelemetryIngest,
		Settings:   map[string]string{"append_bs": size(bs), "checkpoint_every": size(checkpoint), "file_size": size(fileSize)},
		SpaceBytes: uint64(fileSize),
		Phases:     []PhasePlan{{Name: "ingest", JobFile: render(f), Expected: p.Runtime, logs: []string{"ingest"}}}}, nil
}

// fioFile runs a user's job file as written, in the run's directory. Every
// option that names a file must stay inside it (slowpath removes only its
// own directory), and nothing may run a program, touch a device or the
// network (fio.CheckJobFile, docs/bench.md). Its size cannot be known
// beforehand (SpaceBytes 0: fio's own checks).
func fioFile(name string, p Params) (*Plan, error) {
	if len(bytes.TrimSpace(p.JobFile)) == 0 {
		return nil, fmt.Errorf("profile %s: the job file is empty", name)
	}
	dir := loaderDir(p.Dir)
	if _, err := os.Stat(dir); err != nil {
		dir = "" // bench export's placeholder: the lexical checks only
	}
	if _, err := fio.CheckJobFile(p.JobFile, dir); err != nil {
		return nil, fmt.Errorf("profile %s: %w", name, err)
	}
	return &Plan{Profile: name, Settings: map[string]string{"job_file": strings.TrimPrefix(name, FioPrefix)},
		Phases: []PhasePlan{{Name: "fio", JobFile: p.JobFile, Expected: p.Runtime}}}, nil
}

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

// LoadTimes summarises the loader's loads (search-index only).
func (pl *Plan) LoadTimes(loads []benchresult.Load) *benchresult.LoadTimes {
	if pl.Profile != SearchIndex {
		return nil
	}
	return indexload.Summarise(loads, pl.slowLoad)
}

// Figures derives the headline figures (docs/bench.md lists them).
func (pl *Plan) Figures(phases []benchresult.Phase, lt *benchresult.LoadTimes) []benchresult.Figure {
	var out []benchresult.Figure
	add := func(phase, name string, v float64, unit, better string) {
		out = append(out, benchresult.Figure{Name: name, Phase: phase, Value: v, Unit: unit, Better: better})
	}
	pct := func(s *benchresult.Stream, p float64) (float64, bool) {
		if s == nil || s.Latency == nil {
			return 0, false
		}
		for _, q := range s.Latency.Percentiles {
			if q.P == p {
				return float64(q.ValueNS), true
			}
		}
		if s.Latency.Histogram != nil {
			v, ok := s.Latency.Histogram.Percentile(p)
			return float64(v), ok
		}
		return 0, false
	}
	addPct := func(phase, name string, s *benchresult.Stream, p float64) {
		if v, ok := pct(s, p); ok {
			add(phase, name, v, benchresult.UnitNanoseconds, benchresult.LowerIsBetter)
		}
	}
	for _, ph := range phases {
		find := func(name, op string) *benchresult.Stream {
			for i := range ph.Streams {
				if ph.Streams[i].Name == name && ph.Streams[i].Op == op {
					return &ph.Streams[i]
				}
			}
			return nil
		}
		switch pl.Profile {
		case SearchIndex:
			if r := find("readers", "read"); r != nil {
				add(ph.Name, "read_iops", r.OpsPerSec, benchresult.UnitIOPS, benchresult.HigherIsBetter)
				add(ph.Name, "read_bytes_per_sec", r.BytesPerSec, benchresult.UnitBytesPerSec, benchresult.HigherIsBetter)
				addPct(ph.Name, "read_p50", r, 50)
				addPct(ph.Name, "read_p99", r, 99)
				addPct(ph.Name, "read_p999", r, 99.9)
			}
			if w := find("writers", "write"); w != nil {
				add(ph.Name, "write_bytes_per_sec", w.BytesPerSec, benchresult.UnitBytesPerSec, benchresult.HigherIsBetter)
			}
			if lt != nil {
				add(ph.Name, "loads", float64(lt.Count), benchresult.UnitCount, benchresult.NoBetter)
				add(ph.Name, "slow_loads", float64(lt.Slow), benchresult.UnitCount, benchresult.LowerIsBetter)
				if lt.Count > 0 {
					add(ph.Name, "load_p50", float64(lt.P50NS), benchresult.UnitNanoseconds, benchresult.LowerIsBetter)
					add(ph.Name, "load_p99", float64(lt.P99NS), benchresult.UnitNanoseconds, benchresult.LowerIsBetter)
					add(ph.Name, "load_max", float64(lt.MaxNS), benchresult.UnitNanoseconds, benchresult.LowerIsBetter)
					add(ph.Name, "load_bytes_per_sec", lt.PageBytesPerSec, benchresult.UnitBytesPerSec, benchresult.HigherIsBetter)
				}
			}
		case DBCommit:
			if ph.Name == "direct-4k" {
				r, w := find("direct", "read"), find("direct", "write")
				if r != nil {
					add(ph.Name, "read_iops", r.OpsPerSec, benchresult.UnitIOPS, benchresult.HigherIsBetter)
					addPct(ph.Name, "read_p99", r, 99)
				}
				if w != nil {
					add(ph.Name, "write_iops", w.OpsPerSec, benchresult.UnitIOPS, benchresult.HigherIsBetter)
					addPct(ph.Name, "write_p99", w, 99)
				}
				continue
			}
			w, s := find("commit", "write"), find("commit", "sync")
			if w != nil {
				add(ph.Name, "commit_ops_per_sec", w.OpsPerSec, benchresult.UnitOpsPerSec, benchresult.HigherIsBetter)
				addPct(ph.Name, "write_p99", w, 99)
			}
			addPct(ph.Name, "commit_p50", s, 50)
			addPct(ph.Name, "commit_p99", s, 99)
			addPct(ph.Name, "commit_p999", s, 99.9)
		case TelemetryIngest:
			w, s := find("ingest", "write"), find("ingest", "sync")
			if w != nil {
				add(ph.Name, "append_ops_per_sec", w.OpsPerSec, benchresult.UnitOpsPerSec, benchresult.HigherIsBetter)
				add(ph.Name, "append_bytes_per_sec", w.BytesPerSec, benchresult.UnitBytesPerSec, benchresult.HigherIsBetter)
			}
			if s != nil {
				add(ph.Name, "checkpoints", float64(s.Ops), benchresult.UnitCount, benchresult.NoBetter)
				addPct(ph.Name, "checkpoint_p50", s, 50)
				// The declared primary and guard (MetricsOf).
				addPct(ph.Name, "checkpoint_p99", s, 99)
				addPct(ph.Name, "checkpoint_p999", s, 99.9)
				if s.Latency != nil {
					add(ph.Name, "checkpoint_max", float64(s.Latency.MaxNS), benchresult.UnitNanoseconds, benchresult.LowerIsBetter)
				}
			}
		default: // fio:FILE: every group, by its name
			for _, s := range ph.Streams {
				if s.Op != "read" && s.Op != "write" {
					continue
				}
				p := s.Name
				add(p, s.Op+"_iops", s.OpsPerSec, benchresult.UnitIOPS, benchresult.HigherIsBetter)
				add(p, s.Op+"_bytes_per_sec", s.BytesPerSec, benchresult.UnitBytesPerSec, benchresult.HigherIsBetter)
				addPct(p, s.Op+"_p99", &s, 99)
			}
		}
	}
	if strings.HasPrefix(pl.Profile, FioPrefix) || strings.HasPrefix(pl.Profile, LabPrefix) || isReplay(pl.Profile) {
		out = append(out, fioTotals(phases)...)
	}
	return out
}

// fioTotals are a job file's declared primary and guard figures (MetricsOf):
// IOPS summed over every read and write stream, and the p99 and p99.9 of
// all their I/Os merged. They carry no phase, so their row names do not
// depend on the job file's group names.
func fioTotals(phases []benchresult.Phase) []benchresult.Figure {
	var iops float64
	var hs []*benchresult.Histogram
	n := 0
	for _, ph := range phases {
		for _, s := range ph.Streams {
			if s.Op != "read" && s.Op != "write" {
				continue
			}
			n++
			iops += s.OpsPerSec
			if s.Latency != nil && s.Latency.Histogram != nil {
				hs = append(hs, s.Latency.Histogram)
			}
		}
	}
	if n == 0 {
		return nil
	}
	out := []benchresult.Figure{{Name: "total_iops", Value: iops, Unit: benchresult.UnitIOPS, Better: benchresult.HigherIsBetter}}
	if len(hs) == n {
		h := benchresult.Merge(hs...)
		for _, q := range []struct {
			name string
			p    float64
		}{{"total_p99", 99}, {"total_p999", 99.9}} {
			if v, ok := h.Percentile(q.p); ok {
				out = append(out, benchresult.Figure{Name: q.name, Value: float64(v), Unit: benchresult.UnitNanoseconds, Better: benchresult.LowerIsBetter})
			}
		}
	}
	return out
}
