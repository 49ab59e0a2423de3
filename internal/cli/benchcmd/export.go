package benchcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/experiment"
	"github.com/slowpath/slowpath/internal/report/benchreport"
	"github.com/slowpath/slowpath/internal/stdfile"
	"github.com/slowpath/slowpath/internal/workload/profile"
	"github.com/slowpath/slowpath/internal/workload/replay"
)

// ExportOptions are the flags of `slowpath bench export`.
type ExportOptions struct {
	Profile  string
	Output   string
	Scale    float64
	Runtime  time.Duration
	SlowLoad time.Duration
	Result   string
}

func newCmdExport(env *clienv.Env, runF func(context.Context, *ExportOptions) error) *cobra.Command {
	o := &ExportOptions{}
	cmd := &cobra.Command{
		Use:   "export PROFILE -o DIR",
		Short: "Write a reproduction that runs without slowpath: fio job files, a POSIX sh script, a README, the environment and this machine's result",
		Args:  cobra.ExactArgs(1),
		RunE: clienv.Action(o, func(args []string) error { o.Profile = args[0]; return nil }, runF,
			func(context.Context) error { return runExport(env, o) }),
	}
	f := cmd.Flags()
	f.StringVarP(&o.Output, "output", "o", "", "write the reproduction into the new directory `DIR`")
	f.Float64Var(&o.Scale, "scale", 1, "as for bench")
	f.DurationVar(&o.Runtime, "runtime", profile.DefaultRuntime, "as for bench")
	f.DurationVar(&o.SlowLoad, "slow-load", 10*time.Millisecond, "as for bench")
	f.StringVar(&o.Result, "result", "", "include this machine's result `FILE` (from bench -o) and its environment")
	_ = cmd.MarkFlagRequired("output")
	return cmd
}

func runExport(env *clienv.Env, o *ExportOptions) error {
	if err := profile.ParseScale(o.Scale); err != nil {
		return clienv.Usage(err)
	}
	if o.Runtime <= 0 {
		return clienv.Usage(fmt.Errorf("--runtime %v: want a positive duration", o.Runtime))
	}
	if !known(o.Profile) {
		return clienv.Usage(profile.Unknown(o.Profile))
	}
	w, err := experiment.ParseWorkload(o.Profile)
	if err != nil {
		return clienv.Usage(err)
	}
	if w.Capture != nil {
		if strings.HasPrefix(o.Profile, profile.ReplaySpanPrefix) {
			// run.sh replays with fio's afap and timed jobs; a span replay
			// is slowpath's own choice of which threads repeat.
			return clienv.Usage(fmt.Errorf("bench export %s: a span replay is not exported; export replay:DIR (run.sh writes its afap and fio-timed jobs)", o.Profile))
		}
		return exportReplay(env, o, w)
	}
	jobFile := w.JobFile
	// run.sh replaces the placeholder by its directory: in a user's job
	// file it would turn a checked relative path into another one
	// ("..@DIR@/x" is one name here, "../tmp/..." there).
	if bytes.Contains(jobFile, []byte(profile.ExportDir)) {
		return clienv.Usage(fmt.Errorf("profile %s: the job file holds %s, which bench export uses as the directory's placeholder: remove it", o.Profile, profile.ExportDir))
	}
	name := w.Profile
	plan, err := profile.New(name, profile.Params{Scale: o.Scale, Runtime: o.Runtime, Dir: profile.ExportDir, SlowLoad: o.SlowLoad,
		JobFile: jobFile, NumCPU: runtime.NumCPU()})
	if err != nil {
		return clienv.Usage(err)
	}
	if plan.Native() {
		return clienv.Usage(fmt.Errorf("bench export %s: this profile runs a database server and its client, not fio job files: run slowpath bench %s where you want it reproduced (docs/bench.md, Database profiles)", o.Profile, o.Profile))
	}
	var (
		res      *benchresult.Result
		resBytes []byte // copied as it was read, stdin included
	)
	if o.Result != "" {
		if resBytes, err = stdfile.ReadFile(o.Result); err != nil {
			return clienv.Usage(err)
		}
		if res, err = benchresult.Read(bytes.NewReader(resBytes)); err != nil {
			return clienv.Usage(fmt.Errorf("--result %s: %w", stdfile.Name(o.Result), err))
		}
		if res.Profile != name {
			return clienv.Usage(fmt.Errorf("--result %s is a %s run, not %s", stdfile.Name(o.Result), res.Profile, name))
		}
	}
	if err := os.Mkdir(o.Output, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return clienv.Usage(fmt.Errorf("-o %s exists: give a new directory", o.Output))
		}
		return clienv.Usage(err)
	}
	files, jobNames := profile.ExportFiles(plan)
	files["README.md"] = benchreport.ExportREADME(benchreport.Export{Plan: plan, Jobs: jobNames, Scale: o.Scale, Runtime: o.Runtime, Result: res})
	if res != nil {
		files["result.json"] = resBytes
	}
	if err := writeFiles(o.Output, files); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "wrote %s: %s, run.sh, README.md%s\n", o.Output, strings.Join(jobNames, ", "), map[bool]string{true: ", result.json"}[res != nil])
	return nil
}

// exportReplay writes a capture's replay: its iologs, both fio job files
// and run.sh (replay.ExportFiles), and a README (benchreport.ReplayREADME).
func exportReplay(env *clienv.Env, o *ExportOptions, w experiment.Workload) error {
	files, err := replay.ExportFiles(w.Profile, w.Capture.Trace)
	if err != nil {
		return err
	}
	if o.Result != "" {
		return clienv.Usage(fmt.Errorf("--result: a replay's export carries no result (give the bench result file alongside it)"))
	}
	if err := os.Mkdir(o.Output, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return clienv.Usage(fmt.Errorf("-o %s exists: give a new directory", o.Output))
		}
		return clienv.Usage(err)
	}
	files["README.md"] = benchreport.ReplayREADME(w.Profile, w.Capture.Trace)
	if err := writeFiles(o.Output, files); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "wrote %s: %s, %s, %d iologs, run.sh, README.md\n", o.Output, replay.ExportAFAPJob, replay.ExportTimedJob, len(files)-4)
	return nil
}

// writeFiles writes files into dir, just created. Every file lands inside
// it: names are slowpath's own (pseudonyms, fixed names), and the writes
// go through an os.Root of the directory.
func writeFiles(dir string, files map[string][]byte) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for n, b := range files {
		if !filepath.IsLocal(n) || filepath.Base(n) != n {
			return fmt.Errorf("export file name %q would leave %s", n, dir)
		}
		mode := os.FileMode(0o644)
		if n == "run.sh" {
			mode = 0o755
		}
		if err := writeIn(root, n, b, mode); err != nil {
			return fmt.Errorf("write %s: %w", filepath.Join(dir, n), err)
		}
	}
	return nil
}

func writeIn(root *os.Root, name string, b []byte, mode os.FileMode) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
