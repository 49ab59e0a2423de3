// Package benchcmd implements `slowpath bench`: incident-shaped workloads
// (internal/workload/profile) on a directory, with where the time went
// (internal/collect/sampler), a summary table (internal/report/benchreport)
// and a result file (internal/benchresult); `bench export` writes a
// reproduction that runs without slowpath.
package benchcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/collect/sampler"
	"github.com/slowpath/slowpath/internal/experiment"
	"github.com/slowpath/slowpath/internal/report/benchreport"
	"github.com/slowpath/slowpath/internal/stdfile"
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
	// Format is text (the summary), markdown (the summary as Markdown) or
	// json (the result on stdout, as -o writes it, with format_version
	// first).
	Format   string
	Interval time.Duration
	Cloud    cloud.Options
	// CipherLimit is a `lab crypto-limit --format json` file to take the
	// cipher's cost from instead of measuring it after the run.
	CipherLimit string
	// Signals are the signals that interrupt a run; none: SIGINT and
	// SIGTERM (clienv.Interruptible).
	Signals []os.Signal
}

// NewCmdBench builds the command; runF replaces the action in tests.
func NewCmdBench(env *clienv.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{}
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
  pgbench           a throwaway PostgreSQL 15 cluster on DIR under pgbench: tps,
                    latency percentiles, the server's CPU per transaction
  mariadb-oltp      a throwaway MariaDB server on DIR under sysbench oltp_read_write;
                    mariadb-oltp:encrypted with MariaDB's own encryption on
  replay:DIR        a capture (slowpath capture) replayed on its captured schedule
                    by slowpath's own replayer (docs/replay.md)
  replay-afap:DIR   the same capture, each thread's operations back to back, by fio
  replay-span:DIR   replay-afap, the threads busy at the capture's end repeating
                    their operations for as long as they were busy

Bench creates one subdirectory in DIR and removes it on success, error,
SIGINT and SIGTERM (an interrupted run still prints and saves what it measured).
It evicts only its own files from the page cache. docs/bench.md describes the
result file.

Exit status: 0 done, 2 usage or runtime error or interrupted.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("give one profile (%d given): use one of %s", len(args), strings.Join(profile.Names(), ", "))
			}
			return nil
		},
		RunE: clienv.Action(o, func(args []string) error { o.Profile = args[0]; return nil }, runF,
			func(ctx context.Context) error { return run(ctx, env, o) }),
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "dir", "", "run in a new subdirectory of `DIR` (removed afterwards)")
	f.StringVar(&o.Device, "device", "", "run on the block device `DEV` itself (db-commit, telemetry-ingest, fio:FILE; needs --destroy-data)")
	f.BoolVar(&o.DestroyData, "destroy-data", false, "allow --device: its contents are overwritten")
	f.Float64Var(&o.Scale, "scale", 1, "size of the workload: 1 fits this machine in under a minute, 32 is the incident's size")
	f.DurationVar(&o.Runtime, "runtime", profile.DefaultRuntime, "timed part of each phase")
	f.DurationVar(&o.SlowLoad, "slow-load", 10*time.Millisecond, "search-index: loads above this are slow (the incident's alarm)")
	f.StringVarP(&o.Output, "output", "o", "", "write the result to `FILE` (JSON, docs/bench.md); - prints it on stdout, as --format json")
	formats.AddFlag(f, &o.Format)
	f.DurationVar(&o.Interval, "interval", sampler.DefaultInterval, "where-the-time-went sampling period")
	f.StringVar(&o.CipherLimit, "cipher-limit", "", "encryption tax: take the cipher's cost from `FILE` (slowpath lab crypto-limit --format json) instead of measuring it after the run")
	o.Cloud.AddFlags(f)
	cmd.AddCommand(newCmdExport(env, nil))
	return cmd
}

// formats are bench's --format values.
var formats = clienv.Formats{Names: []string{"text", "json", "markdown"}, Default: "text",
	Notes: map[string]string{"text": "a summary", "json": "the result, as -o writes it; the summary goes to stderr", "markdown": "the summary as Markdown tables"},
	Also:  []string{""}} // "": text

// validate checks everything that needs no host access.
func (o *Options) validate() error {
	if err := profile.ParseScale(o.Scale); err != nil {
		return clienv.Usage(err)
	}
	if o.Runtime <= 0 {
		return clienv.Usage(fmt.Errorf("--runtime %v: want a positive duration", o.Runtime))
	}
	if err := formats.Check(o.Format); err != nil {
		return clienv.Usage(err)
	}
	if o.Interval < 100*time.Millisecond {
		return clienv.Usage(fmt.Errorf("--interval %v: want at least 100ms", o.Interval))
	}
	if !known(o.Profile) {
		return clienv.Usage(profile.Unknown(o.Profile))
	}
	switch {
	case o.Dir == "" && o.Device == "":
		return clienv.Usage(errors.New("give --dir DIR (or --device DEV --destroy-data)"))
	case o.Dir != "" && o.Device != "":
		return clienv.Usage(errors.New("give --dir or --device, not both"))
	case o.Device != "" && !o.DestroyData:
		return clienv.Usage(fmt.Errorf("--device %s overwrites the device: add --destroy-data if that is what you want", o.Device))
	case o.Device != "" && o.Profile == profile.SearchIndex:
		return clienv.Usage(errors.New("search-index writes and loads files: it needs a filesystem (--dir)"))
	}
	return nil
}

func known(name string) bool { return profile.Known(name) }

func run(ctx context.Context, env *clienv.Env, o *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := o.validate(); err != nil {
		return err
	}
	if err := o.Cloud.Validate(); err != nil {
		return clienv.Usage(err)
	}
	w, err := experiment.ParseWorkload(o.Profile)
	if err != nil {
		return clienv.Usage(err)
	}
	w.Scale, w.Runtime, w.SlowLoad, w.Interval = o.Scale, o.Runtime, o.SlowLoad, o.Interval
	// bench shows a replay's fidelity: it records the replay's requests.
	w.Fidelity = true
	xenv := experiment.Env{FS: env.FS, Version: env.Version, Cloud: o.Cloud}
	if o.CipherLimit != "" {
		if xenv.Cipher, xenv.CipherEmulated, err = experiment.ReadCipherLimit(o.CipherLimit); err != nil {
			return clienv.Usage(fmt.Errorf("--cipher-limit: %w", err))
		}
	}
	var pb *bar // the progress bar, made once the plan is known
	xenv.Hooks = experiment.Hooks{
		Planned: func(p *profile.Plan) { pb = newProgress(env, p) },
		Phase:   func(i int, name string) { pb.phase(i, name) },
		Done:    func(ok bool) { pb.done(ok) },
	}
	// Signals interrupt the run instead of killing it: the engine removes
	// the run's directory and returns what was measured.
	sctx, stop := clienv.Interruptible(ctx, o.Signals...)
	defer stop()
	res, err := experiment.RunWorkload(sctx, xenv, w, experiment.Target{Dir: o.Dir, Device: o.Device})
	if res == nil {
		return clienv.Usage(flagged(err))
	}
	// The result on stdout (--format json or -o -) puts the summary on
	// stderr, so stdout stays one JSON document. The summary is a table on
	// a terminal, tab-separated lines otherwise. A summary that cannot be
	// printed does not keep the result from its file.
	toStdout := o.Format == "json" || o.Output == stdfile.Dash
	summary, tabs := env.Stdout, !env.StdoutTTY
	if toStdout {
		summary, tabs = env.Stderr, true
	}
	if o.Format == "markdown" {
		_ = benchreport.WriteMarkdown(summary, res)
	} else {
		_ = benchreport.WriteSummary(summary, res, benchreport.SummaryOptions{Tabs: tabs})
	}
	if o.Output != "" && o.Output != stdfile.Dash {
		if werr := benchresult.WriteFile(o.Output, res); werr != nil {
			return werr
		}
	}
	if toStdout {
		if werr := printResult(env.Stdout, res); werr != nil {
			return werr
		}
	}
	if errors.Is(err, experiment.ErrInterrupted) {
		return &clienv.ExitError{Code: clienv.ExitUsage, Err: errors.New("interrupted: the result above is partial; the run's files were removed")}
	}
	if err != nil {
		return &clienv.ExitError{Code: clienv.ExitUsage, Err: err}
	}
	return nil
}

// printResult prints r as the result file holds it, with format_version
// (the result's schema_version) first, as every command's JSON on stdout.
func printResult(w io.Writer, r *benchresult.Result) error {
	var b bytes.Buffer
	if err := benchresult.Write(&b, r); err != nil {
		return err
	}
	return clienv.EncodeJSON(w, benchresult.SchemaVersion, json.RawMessage(b.Bytes()), true)
}

// flagged names a target the engine refused by its flag.
func flagged(err error) error {
	var te *experiment.TargetError
	if !errors.As(err, &te) {
		return err
	}
	return te.Named("--dir", "--device")
}
