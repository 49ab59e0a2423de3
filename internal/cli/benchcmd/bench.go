// Package benchcmd implements `slowpath bench`: incident-shaped workloads
// (internal/workload/profile) on a directory, with where the time went
// (internal/collect/sampler), a summary table and a result file
// (internal/benchresult); `bench export` writes a reproduction that runs
// without slowpath.
package benchcmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/cli/labcmd"
	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/collect/sampler"
	"github.com/slowpath/slowpath/internal/workload/fio"
	"github.com/slowpath/slowpath/internal/workload/profile"
)

// Options are the flags of `slowpath bench`.
type Options struct {
	Profile     string
	Dir         string
	Device      string
	DestroyData bool
	Scale       float64
	Runtime     time.Duration
	SlowLoad    time.Duration
	Output      string
	Interval    time.Duration
	Cloud       cloud.Options
	// CipherLimit is a `lab crypto-limit --format json` file to take the
	// cipher's cost from instead of measuring it after the run.
	CipherLimit string
	// Signals are the signals that interrupt a run; SIGINT and SIGTERM.
	Signals []os.Signal
}

// NewCmdBench builds the command; runF replaces the action in tests.
func NewCmdBench(env *clienv.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Signals: []os.Signal{os.Interrupt, syscall.SIGTERM}}
	cmd := &cobra.Command{
		Use:   "bench PROFILE --dir DIR [--scale S] [--runtime D] [-o result.json]",
		Short: "Run an incident-shaped workload (search-index, db-commit, telemetry-ingest, fio:FILE) and say where the time went",
		Long: `Bench runs a workload shaped like a real incident on a directory and reports
what mattered, with where the time went: await, utilisation and queue depth of
every device on the directory's storage path, and CPU time of the workload and
of the kernel threads of an encrypted data path (kcryptd, dmcrypt_write,
kworkers, ksoftirqd). On a path through dm-crypt it ends with the encryption
tax: the await the dm-crypt layers added per I/O against what the cipher costs
on this CPU (measured after the run, or --cipher-limit FILE), and whether the
overhead is far above it (queueing in dm-crypt's workqueues, or a second
encryption layer).

Profiles:
  search-index      fio writers (psync 4 MiB) and mmap readers (4 KiB-1 MiB) plus
                    index load times: each finished file is mapped and read
  db-commit         4 KiB direct random read/write; 8 KiB writes with fdatasync
                    per commit, 1 and N jobs
  telemetry-ingest  64 KiB appends with a checkpoint fsync every 8 MiB
  fio:FILE          any fio job file (relative paths), run and reported the same way

Bench creates one subdirectory in DIR and removes it on success, error,
SIGINT and SIGTERM (an interrupted run still prints and saves what it measured).
It evicts only its own files from the page cache. docs/bench.md describes the
result file.

Exit status: 0 done, 2 usage or runtime error or interrupted.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Profile = args[0]
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return run(cmd.Context(), env, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "dir", "", "run in a new subdirectory of `DIR` (removed afterwards)")
	f.StringVar(&o.Device, "device", "", "run on the block device `DEV` itself (db-commit, telemetry-ingest, fio:FILE; needs --destroy-data)")
	f.BoolVar(&o.DestroyData, "destroy-data", false, "allow --device: its contents are overwritten")
	f.Float64Var(&o.Scale, "scale", 1, "size of the workload: 1 fits this machine in under a minute, 32 is the incident's size")
	f.DurationVar(&o.Runtime, "runtime", profile.DefaultRuntime, "timed part of each phase")
	f.DurationVar(&o.SlowLoad, "slow-load", 10*time.Millisecond, "search-index: loads above this are slow (the incident's alarm)")
	f.StringVarP(&o.Output, "output", "o", "", "write the result to `FILE` (JSON, docs/bench.md)")
	f.DurationVar(&o.Interval, "interval", sampler.DefaultInterval, "where-the-time-went sampling period")
	f.StringVar(&o.CipherLimit, "cipher-limit", "", "encryption tax: take the cipher's cost from `FILE` (slowpath lab crypto-limit --format json) instead of measuring it after the run")
	o.Cloud.AddFlags(f)
	cmd.AddCommand(newCmdExport(env, nil))
	return cmd
}

func usageErr(err error) error { return &clienv.ExitError{Code: clienv.ExitUsage, Err: err} }

// validate checks everything that needs no host access.
func (o *Options) validate() error {
	if err := profile.ParseScale(o.Scale); err != nil {
		return usageErr(err)
	}
	if o.Runtime <= 0 {
		return usageErr(fmt.Errorf("--runtime %v: want a positive duration", o.Runtime))
	}
	if o.Interval < 100*time.Millisecond {
		return usageErr(fmt.Errorf("--interval %v: want at least 100ms", o.Interval))
	}
	if !known(o.Profile) {
		return usageErr(fmt.Errorf("%w %q: use one of %s", profile.ErrUnknown, o.Profile, strings.Join(profile.Names, ", ")))
	}
	switch {
	case o.Dir == "" && o.Device == "":
		return usageErr(errors.New("give --dir DIR (or --device DEV --destroy-data)"))
	case o.Dir != "" && o.Device != "":
		return usageErr(errors.New("give --dir or --device, not both"))
	case o.Device != "" && !o.DestroyData:
		return usageErr(fmt.Errorf("--device %s overwrites the device: add --destroy-data if that is what you want", o.Device))
	case o.Device != "" && o.Profile == profile.SearchIndex:
		return usageErr(errors.New("search-index writes and loads files: it needs a filesystem (--dir)"))
	}
	return nil
}

func known(name string) bool {
	switch name {
	case profile.SearchIndex, profile.DBCommit, profile.TelemetryIngest:
		return true
	}
	return strings.HasPrefix(name, profile.FioPrefix) && len(name) > len(profile.FioPrefix)
}

func readJobFile(name string) ([]byte, error) {
	if !strings.HasPrefix(name, profile.FioPrefix) {
		return nil, nil
	}
	// The job file's base name becomes the profile's name in the result,
	// reports and bench export's run.sh: a label, checked first.
	if err := benchresult.ValidProfile(profile.FioPrefix + filepath.Base(strings.TrimPrefix(name, profile.FioPrefix))); err != nil {
		return nil, usageErr(err)
	}
	b, err := os.ReadFile(strings.TrimPrefix(name, profile.FioPrefix))
	if err != nil {
		return nil, usageErr(fmt.Errorf("profile %s: %w", name, err))
	}
	// Refused before anything is created or run: a job file that cannot
	// be confined to the run's directory (docs/bench.md).
	if _, err := fio.CheckJobFile(b, ""); err != nil {
		return nil, usageErr(fmt.Errorf("profile %s: %w", name, err))
	}
	return b, nil
}

func run(ctx context.Context, env *clienv.Env, o *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := o.validate(); err != nil {
		return err
	}
	jobFile, err := readJobFile(o.Profile)
	if err != nil {
		return err
	}
	var givenCipher *benchresult.Cipher
	var givenEmulated bool
	if o.CipherLimit != "" {
		if givenCipher, givenEmulated, err = readCipherLimit(o.CipherLimit); err != nil {
			return usageErr(err)
		}
	}
	if _, err := fio.Version(ctx); err != nil {
		return usageErr(err) // fio not found: apt-get install fio
	}
	t, err := prepareTarget(env, o)
	if err != nil {
		return err
	}
	// From here on the run's directory exists: it is removed however the
	// run ends (a panic included), and signals interrupt instead of kill.
	defer t.cleanup()
	sctx, stop := signal.NotifyContext(ctx, o.Signals...)
	defer stop()

	name := o.Profile
	if strings.HasPrefix(name, profile.FioPrefix) {
		name = profile.FioPrefix + filepath.Base(strings.TrimPrefix(name, profile.FioPrefix))
	}
	plan, err := profile.New(name, profile.Params{Scale: o.Scale, Runtime: o.Runtime, Dir: t.workDir, Device: t.device,
		SlowLoad: o.SlowLoad, JobFile: jobFile, NumCPU: runtime.NumCPU()})
	if err != nil {
		return usageErr(err)
	}
	if err := t.checkSpace(plan.SpaceBytes); err != nil {
		return err
	}
	envFacts := environment(ctx, env, o, t)
	start := time.Now()
	res := &benchresult.Result{SlowpathVersion: env.Version, Profile: name, Started: start.UTC(), Environment: envFacts,
		Parameters: benchresult.Parameters{Scale: o.Scale, RuntimeNS: int64(o.Runtime), Target: t.given, TargetKind: t.kind,
			Settings: plan.Settings}}
	if plan.Profile == profile.SearchIndex {
		res.Parameters.SlowLoadNS = int64(o.SlowLoad)
	}
	if jobFile != nil {
		res.Parameters.JobFile = string(jobFile)
	}

	smp, err := sampler.Start(sampler.Options{FS: env.FS, Devices: t.devices, Interval: o.Interval, Start: start})
	if err != nil {
		return err
	}
	bar := newProgress(env, plan)
	phases, loads, runErr := plan.Run(sctx, t.phaseDir, profile.Hooks{Start: start, FioStarted: smp.AddWorkload, FioExited: smp.AddWorkloadCPU, Phase: bar.phase})
	bar.done(runErr == nil)
	res.WhereTime = smp.Stop()
	res.DurationNS = int64(time.Since(start))
	res.Phases = phases
	res.LoadTimes = plan.LoadTimes(loads)
	res.Figures = append(plan.Figures(phases, res.LoadTimes), whereFigures(res.WhereTime)...)
	res.Status = benchresult.StatusComplete
	interrupted := runErr != nil && sctx.Err() != nil && ctx.Err() == nil
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
		if cs := findCrypt(tp.Storage); cs != nil {
			c, cerr := cipherFor(sctx, env.FS, givenCipher, cs, interrupted)
			res.EncryptionTax = assessTax(res.WhereTime, cs, c, cerr, runtime.NumCPU(), givenEmulated || labcmd.Emulated(env.FS))
		}
	}
	printSummary(env, res)
	if o.Output != "" {
		if err := benchresult.WriteFile(o.Output, res); err != nil {
			return err
		}
	}
	if cerr := t.cleanup(); cerr != nil && runErr == nil {
		runErr = cerr
	}
	if interrupted {
		return &clienv.ExitError{Code: clienv.ExitUsage, Err: errors.New("interrupted: the result above is partial; the run's files were removed")}
	}
	if runErr != nil {
		return &clienv.ExitError{Code: clienv.ExitUsage, Err: runErr}
	}
	return nil
}
