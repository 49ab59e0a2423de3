// Package profile holds slowpath bench's workloads, one file per profile
// or family, each registered in init (registry.go,
// docs/adding-a-profile.md): the incident-shaped profiles (search-index,
// db-commit, telemetry-ingest), any fio job file (fio:FILE), replays of a
// capture (replay:DIR, replay-afap:DIR, replay-span:DIR) and lab crypt's fio jobs on a raw
// device (lab:NAME). Each is planned as fio job files plus, for
// search-index, the native index loader. A plan runs in a directory the
// caller owns and returns its phases as benchresult types; figures are
// derived from them.
package profile

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/workload/fio"
	"github.com/slowpath/slowpath/internal/workload/indexload"
	"github.com/slowpath/slowpath/internal/workload/replay"
)

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
	// Device is a block device to run on instead of Dir's files (the
	// profiles that need a Device; the caller has checked it is
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
	// SpaceBytes is what the run writes at most: the free-space check,
	// and lab crypt's backing size. SpaceNote says what it is made of,
	// where that depends on the machine.
	SpaceBytes uint64
	SpaceNote  string
	// Recorder, when set, records the block trace of a replay (the
	// replay's fidelity); the caller sets it before Run.
	Recorder BlockRecorder
	// Engine is the database server a database profile ran and the
	// encryption it did of its own files (pgbench, mariadb-oltp); nil
	// for the fio profiles.
	Engine   *snapshot.Engine
	kind     Profile
	loader   bool // the index loader runs: LoadTimes
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
	// Native, when set, is the phase: slowpath's own code in pdir (the
	// database profiles: a server, its load and its clients).
	Native func(ctx context.Context, pdir string, h Hooks) (benchresult.Phase, error)
	logs   []string // fio log prefixes written by the job file
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
	k, ok := Lookup(name)
	if !ok {
		return nil, unknown(name)
	}
	switch needs := k.Spec().Needs; {
	case p.Device != "" && needs&Device == 0:
		return nil, fmt.Errorf("profile %s needs a directory (--dir), not a device", name)
	case p.Device == "" && needs&Dir == 0:
		return nil, fmt.Errorf("profile %s needs a block device, not a directory", name)
	}
	pl, err := k.Plan(name, p)
	if err != nil {
		return nil, err
	}
	pl.kind = k
	return pl, nil
}

// Native reports whether a phase of the plan is slowpath's own code
// rather than fio (the database profiles): bench export cannot write it
// as fio job files.
func (pl *Plan) Native() bool {
	for _, ph := range pl.Phases {
		if ph.Native != nil {
			return true
		}
	}
	return false
}

// Figures derives the headline figures (docs/bench.md lists them).
func (pl *Plan) Figures(phases []benchresult.Phase, lt *benchresult.LoadTimes) []benchresult.Figure {
	return pl.kind.Figures(phases, lt)
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
