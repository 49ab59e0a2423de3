package fixcmd

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/experiment"
	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/fix/apply"
	"github.com/slowpath/slowpath/internal/fix/prove"
	"github.com/slowpath/slowpath/internal/report/comparereport"
	"github.com/slowpath/slowpath/internal/report/htmlreport"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/stats"
)

// ProveOptions are the flags of fix --apply --prove.
type ProveOptions struct {
	Workload string // PROFILE or fio:FILE
	Dir      string
	Runs     int
	HTML     string
	Alpha    float64
	Runtime  time.Duration
	Scale    float64
}

func (p *ProveOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&p.Workload, "prove", "", "with --apply, measure each storage change with this workload (`PROFILE` or fio:FILE) off and on, keep it only when it helped")
	f.StringVar(&p.Dir, "dir", "", "with --prove, the `DIR` the workload runs in (its storage path decides which changes it measures)")
	f.IntVar(&p.Runs, "runs", 0, "with --prove, runs per side (default: the fewest that can reach a verdict at --alpha, 4 at 0.05)")
	f.StringVar(&p.HTML, "html", "", "with --prove, write each change's comparison as HTML to `FILE` (FILE-N.html for several)")
	f.Float64Var(&p.Alpha, "alpha", stats.DefaultAlpha, "with --prove, significance level of the verdict")
	f.DurationVar(&p.Runtime, "runtime", 0, "with --prove, the workload's runtime per run (default: bench's)")
	f.Float64Var(&p.Scale, "scale", 0, "with --prove, the workload's scale (default: bench's)")
}

// validate checks the --prove flags; the workload is parsed (a job file
// read and checked) before anything changes.
func (p *ProveOptions) validate(o *Options) (experiment.Workload, error) {
	if p.Workload == "" {
		for _, f := range []struct {
			name string
			set  bool
		}{{"--dir", p.Dir != ""}, {"--runs", p.Runs != 0}, {"--html", p.HTML != ""}, {"--runtime", p.Runtime != 0}, {"--scale", p.Scale != 0}} {
			if f.set {
				return experiment.Workload{}, fmt.Errorf("%s needs --prove PROFILE", f.name)
			}
		}
		return experiment.Workload{}, nil
	}
	if !o.Apply {
		return experiment.Workload{}, errors.New("--prove needs --apply: it applies each change to measure it")
	}
	if p.Dir == "" {
		return experiment.Workload{}, errors.New("--prove needs --dir DIR: the directory the workload runs in")
	}
	if !(p.Alpha > 0 && p.Alpha < 1) {
		return experiment.Workload{}, fmt.Errorf("--alpha %v outside (0, 1)", p.Alpha)
	}
	if n := stats.MinRunsForVerdict(p.Alpha); p.Runs != 0 && p.Runs < n {
		return experiment.Workload{}, fmt.Errorf("--runs %d cannot reach a verdict at --alpha %g: the Mann-Whitney U test needs at least %d runs per side", p.Runs, p.Alpha, n)
	}
	w, err := experiment.ParseWorkload(p.Workload)
	if err != nil {
		return experiment.Workload{}, fmt.Errorf("--prove: %w", err)
	}
	w.Runtime, w.Scale = p.Runtime, p.Scale
	return w, nil
}

// proveAndApply measures each entry the workload exercises (prove.Select)
// and applies those proven to help; network entries go through the
// counter verification of applyAndVerify afterwards. It returns the
// entries that hold and whether one was rolled back.
func proveAndApply(ctx context.Context, env *clienv.Env, a *apply.Applier, o *Options, w experiment.Workload, s *snapshot.Snapshot, plan *fix.Plan) ([]fix.Entry, bool, error) {
	log := env.Stderr
	path, err := prove.PathForDir(s, o.Prove.Dir)
	if err != nil {
		return nil, false, err
	}
	for _, e := range plan.Entries {
		if len(e.Steps) == 0 && e.NotApplicable != "" {
			fmt.Fprintf(log, "%s on %s: not applicable here: %s\n", e.ID, e.Subject, e.NotApplicable)
		}
		if e.ByHand != "" {
			fmt.Fprintf(log, "%s on %s: by hand, not applied or proved (no setting slowpath changes)\n", e.ID, e.Subject)
		}
	}
	measure, skipped := prove.Select(plan, path, o.Only)
	var network []fix.Entry
	for _, sk := range skipped {
		if sk.Counters {
			network = append(network, sk.Entry)
			continue
		}
		fmt.Fprintf(log, "%s on %s: not applied: %s\n", sk.Entry.ID, sk.Entry.Subject, sk.Why)
	}
	if len(measure) == 0 {
		fmt.Fprintf(log, "nothing to prove: no change in the plan is on the storage path of %s\n", o.Prove.Dir)
	}
	// Interrupted (Ctrl-C, SIGTERM), the run in progress stops, the
	// entry's undo restores it, and nothing else is applied.
	sctx, stop := clienv.Interruptible(ctx)
	defer stop()
	xenv := experiment.Env{FS: o.Collect.FS, Version: o.Collect.Version, Cloud: o.Collect.Cloud}
	runs := o.Prove.Runs
	if runs == 0 {
		runs = prove.DefaultRuns(o.Prove.Alpha)
	}
	po := prove.Options{Workload: w, Dir: o.Prove.Dir, Runs: runs, Alpha: o.Prove.Alpha, Env: xenv,
		Progress: func(e fix.Entry, ri experiment.RunInfo) {
			if ri.Index == 1 {
				fmt.Fprintf(log, "proving %s on %s: %s on %s, %d runs off and %d on, interleaved\n", e.ID, e.Subject, w.Profile, o.Prove.Dir, runs, runs)
			}
			fmt.Fprintf(log, "  %s\n", ri)
		}}
	n := 0
	proofs, err := prove.Run(sctx, a, measure, po, func(p *prove.Proof) error {
		n++
		e := p.Entry
		fmt.Fprintf(env.Stdout, "\n== %s on %s: off vs on, %s\n", e.ID, e.Subject, w.Profile)
		if err := comparereport.Write(env.Stdout, p.Result, "text"); err != nil {
			return err
		}
		if o.Prove.HTML != "" {
			name := htmlName(o.Prove.HTML, n, len(measure))
			if err := htmlreport.WriteCompareFile(name, p.Result, p.Sides); err != nil {
				return err
			}
			fmt.Fprintf(log, "%s on %s: comparison written to %s\n", e.ID, e.Subject, name)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, experiment.ErrInterrupted) || sctx.Err() != nil {
			return nil, false, fmt.Errorf("interrupted while proving: %w; the change under measurement is undone and nothing was applied", err)
		}
		return nil, false, fmt.Errorf("prove: %w; the change under measurement is undone and nothing was applied", err)
	}
	var kept []fix.Entry
	rolledBack := false
	for _, p := range proofs {
		e := p.Entry
		if !p.Applied {
			fmt.Fprintf(log, "%s on %s: rolled back: %s\n", e.ID, e.Subject, p.Decision.Reason)
			rolledBack = true
			continue
		}
		fmt.Fprintf(log, "%s on %s: kept, proven by measurement: %s\n", e.ID, e.Subject, p.Decision.Reason)
		kept = append(kept, e)
	}
	if len(network) > 0 {
		nk, nrb, err := applyAndVerify(ctx, log, a, o, &fix.Plan{Kernel: plan.Kernel, Entries: network})
		if err != nil {
			return kept, rolledBack, err
		}
		kept, rolledBack = append(kept, nk...), rolledBack || nrb
	}
	return kept, rolledBack, nil
}

// htmlName is FILE for one comparison, FILE-N.EXT for several.
func htmlName(path string, n, of int) string {
	if of == 1 {
		return path
	}
	ext := filepath.Ext(path)
	return fmt.Sprintf("%s-%d%s", strings.TrimSuffix(path, ext), n, ext)
}
