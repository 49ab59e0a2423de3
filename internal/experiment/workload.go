// Package experiment is slowpath's one experiment engine: RunWorkload runs
// one workload (a profile of internal/workload/profile: the built-in
// profiles, fio:FILE, and any kind profile.New learns) on a directory or a
// block device and returns its bench result, with where the time went and
// the encryption tax; Run schedules sides × runs of one workload,
// interleaved, each side with its own setup and undo, and returns every
// side's results and comparison side. bench, compare --profile, lab crypt
// and fix --prove are front ends of it: they wire flags to these types and
// print what comes back.
package experiment

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/collect/sampler"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/workload/profile"
	"github.com/slowpath/slowpath/internal/workload/replay"
)

// DefaultSlowLoad is search-index's default slow-load threshold: the
// incident's alarm.
const DefaultSlowLoad = 10 * time.Millisecond

// Workload is what every run of an experiment runs. Zero fields take the
// defaults bench's flags have.
type Workload struct {
	// Profile is the profile's name as it appears in the result:
	// search-index, db-commit, telemetry-ingest or fio:NAME (see
	// ParseWorkload), or any other kind profile.New plans.
	Profile string
	// JobFile is the job file of a fio:NAME profile.
	JobFile []byte
	// Capture is the capture of a replay:NAME, replay-afap:NAME or
	// replay-span:NAME profile (ParseWorkload loads it).
	Capture  *replay.Source
	Scale    float64       // 1 when zero
	Runtime  time.Duration // profile.DefaultRuntime when zero
	SlowLoad time.Duration // DefaultSlowLoad when zero
	// Interval is the where-the-time-went sampling period
	// (sampler.DefaultInterval when zero).
	Interval time.Duration
	// Fidelity records a replay's own block requests while it runs, for
	// the result's fidelity table (bench does). Off for a comparison unless
	// asked: the recorder's eBPF programs and its reader take CPU that lands
	// in the replay's figures, and a comparison shows no fidelity (on the
	// VM lab's one CPU the recorder doubled the replay's p99 and turned a
	// p99.9 verdict: docs/replay.md).
	Fidelity bool
}

// ParseWorkload turns a profile argument into a Workload with default
// sizes (profile.Resolve): fio:PATH reads the job file, checks that it can
// be confined to the run's directory and names the profile fio:BASE;
// replay:DIR loads the capture. An unknown name wraps profile.ErrUnknown.
func ParseWorkload(arg string) (Workload, error) {
	a, err := profile.Resolve(arg)
	if err != nil {
		return Workload{}, err
	}
	return Workload{Profile: a.Name, JobFile: a.JobFile, Capture: a.Capture}, nil
}

// withDefaults fills zero fields and checks the rest.
func (w Workload) withDefaults() (Workload, error) {
	if w.Profile == "" {
		return w, errors.New("the workload has no profile: give one of " + strings.Join(profile.Names(), ", "))
	}
	if w.Scale == 0 {
		w.Scale = 1
	}
	if w.Runtime == 0 {
		w.Runtime = profile.DefaultRuntime
	}
	if w.SlowLoad == 0 {
		w.SlowLoad = DefaultSlowLoad
	}
	if w.Interval == 0 {
		w.Interval = sampler.DefaultInterval
	}
	if err := profile.ParseScale(w.Scale); err != nil {
		return w, err
	}
	if w.Runtime < 0 {
		return w, fmt.Errorf("runtime %v: want a positive duration", w.Runtime)
	}
	if w.Interval < 100*time.Millisecond {
		return w, fmt.Errorf("sampling interval %v: want at least 100ms", w.Interval)
	}
	return w, nil
}

// Target is where a run writes: a new subdirectory of Dir (removed after
// the run), or the block device Device itself, which the caller has the
// user's consent to overwrite. Exactly one is set.
type Target struct {
	Dir    string
	Device string
	// Created says the caller made Device for this experiment (lab
	// crypt's mapping on its own ramdisk), so the policy that refuses a
	// device in use by what the host shows (a dm or md stack, a
	// filesystem signature, mounts, the root disk) does not apply. The
	// exclusive claim still does: a device anything else holds open
	// exclusively, a mount included, is refused; only a created device
	// held by a dm or md device (lab crypt's plain ramdisk under its own
	// mappings) runs unclaimed.
	Created bool
}

// String is the target as given, for progress lines.
func (t Target) String() string {
	if t.Device != "" {
		return t.Device
	}
	return t.Dir
}

// Env is what a run needs from its surroundings; commands fill it from
// their own environment and flags.
type Env struct {
	FS      hostfs.FS
	Version string // slowpath's version, recorded in the result
	Cloud   cloud.Options
	// Cipher, when set, is the cipher's cost for the encryption tax
	// (bench --cipher-limit, ReadCipherLimit) instead of a measurement
	// after the run; CipherEmulated says it was taken on an emulated CPU.
	Cipher         *benchresult.Cipher
	CipherEmulated bool
	// NumCPU is the CPU count the profiles size their jobs by and the tax
	// divides by; runtime.NumCPU() when zero.
	NumCPU int
	Hooks  Hooks
}

// Hooks follow one run; every field may be nil.
type Hooks struct {
	// Planned is called once the workload is planned and about to start
	// (a progress bar's total is the sum of the phases' Expected).
	Planned func(*profile.Plan)
	// Phase is called as phase i starts.
	Phase func(i int, name string)
	// Done is called when the workload ended, ok when it completed.
	Done func(ok bool)
}

func (e Env) numCPU() int {
	if e.NumCPU > 0 {
		return e.NumCPU
	}
	return runtime.NumCPU()
}

// whereFigures turns the sampler's answer into run-wide figures.
func whereFigures(w *benchresult.WhereTime) []benchresult.Figure {
	var out []benchresult.Figure
	if w == nil {
		return out
	}
	for _, d := range w.Devices {
		if d.AwaitNS >= 0 {
			out = append(out, benchresult.Figure{Name: "await." + d.Device, Value: math.Round(d.AwaitNS), Unit: benchresult.UnitNanoseconds, Better: benchresult.LowerIsBetter})
		}
		out = append(out,
			benchresult.Figure{Name: "util." + d.Device, Value: round2(d.UtilPercent), Unit: benchresult.UnitPercent},
			benchresult.Figure{Name: "queue_depth." + d.Device, Value: round2(d.QueueDepth), Unit: benchresult.UnitRequests})
	}
	for _, g := range w.Threads {
		out = append(out, benchresult.Figure{Name: "cpu." + g.Group, Value: g.CPUs, Unit: benchresult.UnitCPUs, Better: benchresult.LowerIsBetter})
	}
	return out
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }
