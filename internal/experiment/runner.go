package experiment

import (
	"context"
	"errors"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/collect/host"
	"github.com/slowpath/slowpath/internal/collect/sampler"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/workload/profile"
	"github.com/slowpath/slowpath/internal/workload/replay"
)

// ErrInterrupted is wrapped by RunWorkload's error when ctx was cancelled
// during the run: the result it returns then is partial.
var ErrInterrupted = errors.New("interrupted: the result is partial; the run's files were removed")

// RunWorkload runs w once on t and returns its result. Before the run
// starts (the workload planned, fio found, the target prepared and with
// room enough) an error comes with a nil result. Once it started, the
// result is returned whatever happens: StatusComplete, StatusFailed with
// the error, or StatusInterrupted when ctx was cancelled (the error then
// wraps ErrInterrupted). The run's own directory is removed however it
// ends; failing to remove it is returned with a complete result.
func RunWorkload(ctx context.Context, env Env, w Workload, t Target) (*benchresult.Result, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	w, err := w.withDefaults()
	if err != nil {
		return nil, err
	}
	// fio, or a database profile's server and client: named before
	// anything runs.
	if err := profile.CheckTools(ctx, w.Profile); err != nil {
		return nil, err
	}
	tg, err := prepareTarget(env.FS, t)
	if err != nil {
		return nil, err
	}
	// From here on the run's directory exists: it is removed however the
	// run ends, a panic included.
	defer tg.cleanup()

	cpus := env.numCPU()
	plan, err := profile.New(w.Profile, profile.Params{Scale: w.Scale, Runtime: w.Runtime, Dir: tg.workDir, Device: tg.device,
		SlowLoad: w.SlowLoad, JobFile: w.JobFile, Capture: w.Capture, NumCPU: cpus})
	if err != nil {
		return nil, err
	}
	remedy := "lower --scale"
	if w.Capture != nil {
		remedy = "a replay writes its capture's files at their sizes: replay on a larger filesystem"
	}
	if err := tg.checkSpace(plan.SpaceBytes, remedy); err != nil {
		return nil, err
	}
	envFacts := environment(ctx, env.FS, env.Cloud, tg)
	start := time.Now()
	// The plan's name: a family member that runs a variant of a profile
	// (mariadb-oltp:encrypted) names its results after the profile, so
	// compare takes them as sides of one comparison.
	res := &benchresult.Result{SlowpathVersion: env.Version, Profile: plan.Profile, Started: start.UTC(), Environment: envFacts,
		Parameters: benchresult.Parameters{Scale: w.Scale, RuntimeNS: int64(w.Runtime), Target: tg.given, TargetKind: tg.kind,
			Settings: plan.Settings}}
	if plan.IndexLoads() {
		res.Parameters.SlowLoadNS = int64(w.SlowLoad)
	}
	if w.JobFile != nil {
		res.Parameters.JobFile = string(w.JobFile)
	}
	res.Engine = plan.Engine

	smp, err := sampler.Start(sampler.Options{FS: env.FS, Devices: tg.devices, Interval: w.Interval, Start: start})
	if err != nil {
		return nil, err
	}
	// A replay records its own block requests to compare them with the
	// capture's (its fidelity), when asked (Workload.Fidelity).
	if w.Fidelity {
		plan.Recorder = replay.RecordBlocks
	}
	h := env.Hooks
	if h.Planned != nil {
		h.Planned(plan)
	}
	phases, loads, runErr := plan.Run(ctx, tg.phaseDir, profile.Hooks{Start: start, FioStarted: smp.AddWorkload, FioExited: smp.AddWorkloadCPU, Phase: h.Phase,
		ServiceCPU: func(pid int) (time.Duration, error) { return sampler.TreeCPU(env.FS, pid) }})
	if h.Done != nil {
		h.Done(runErr == nil)
	}
	res.WhereTime = smp.Stop()
	res.DurationNS = int64(time.Since(start))
	res.Phases = phases
	res.LoadTimes = plan.LoadTimes(loads)
	res.Fidelity = plan.Fidelity()
	res.Figures = append(plan.Figures(phases, res.LoadTimes), whereFigures(res.WhereTime)...)
	res.Status = benchresult.StatusComplete
	interrupted := runErr != nil && ctx.Err() != nil
	switch {
	case interrupted:
		res.Status = benchresult.StatusInterrupted
		res.Error = "interrupted by a signal: partial result"
	case runErr != nil:
		res.Status = benchresult.StatusFailed
		res.Error = runErr.Error()
	}
	// The encryption tax, after the workload so the cipher measurement
	// takes no CPU from it; only for a path through dm-crypt.
	if tp := res.Environment.Target; tp != nil {
		if cs := findCrypt(storagemodel.FromRecord(tp.Storage)); cs != nil {
			c, cerr := cipherFor(ctx, env.FS, env.Cipher, cs, interrupted)
			res.EncryptionTax = assessTax(res.WhereTime, cs, c, cerr, cpus, env.CipherEmulated || host.Emulated(env.FS))
		}
	}
	if cerr := tg.cleanup(); cerr != nil && runErr == nil {
		runErr = cerr
	}
	if interrupted {
		return res, ErrInterrupted
	}
	return res, runErr
}
