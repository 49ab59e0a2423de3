// Package fixcmd implements `slowpath fix`: plan the host-level fix of each
// finding, and on request apply it, verify it, roll it back and persist it.
package fixcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/cli/collectcmd"
	"github.com/slowpath/slowpath/internal/collect"
	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/fix/apply"
	"github.com/slowpath/slowpath/internal/model/netmodel"
	"github.com/slowpath/slowpath/internal/report"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// DefaultWatch is how long counters are watched after a change.
const DefaultWatch = 10 * time.Second

// Options are the flags of `slowpath fix`.
type Options struct {
	From      string
	Format    string
	Only      []string
	Apply     bool
	Rollback  bool
	Persist   bool
	Force     bool
	Watch     time.Duration
	StatePath string
	K8s       fix.KubernetesOptions
	Collect   collect.Options
	Prove     ProveOptions
}

// NewCmdFix builds the command; runF replaces the action in tests.
func NewCmdFix(env *clienv.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{}
	cmd := &cobra.Command{
		Use:   "fix",
		Short: "Plan, apply, verify, roll back and persist the fix of each finding",
		Long: `Fix prints a plan: for each finding with a host-level fix, the runtime change
(sysctl, NIC ring, dm-crypt flags), the files that keep it (an /etc/sysctl.d
drop-in, a udev rule, /etc/crypttab options) and cloud-level changes as the
exact CLI, which slowpath never runs.

--apply makes the runtime changes in plan order, recording each previous
value in a state file; a step that fails rolls back the steps before it.
The counters a network fix should lower are sampled over --watch (at least
2s) before the change and over an equal window after it: a change whose
finding is still there or whose counters rose beyond the noise margin is
rolled back; one whose counters fell beyond it is "verified"; anything else,
and every dm-crypt change (no counter measures it), is kept as "applied, not
proven". Applying twice changes nothing the second time. --rollback restores
what the state file records (only settings that still hold the value
slowpath set, unless --force). --persist writes the files, listing each.

With --from, --apply and --persist are refused unless the snapshot is of
this host: the same boot id, or the same machine id and every device the
plan touches here with the same ifindex or dm device number and uuid.
Printing the plan of another host's snapshot is always allowed.

--apply --prove PROFILE|fio:FILE --dir DIR measures instead: for each
change on the storage path of DIR (dm-crypt flags; and any entry named with
--only), the workload runs on DIR --runs times with the change off and on,
interleaved, and the change is kept only when the profile's primary metric
is significantly better and no guard metric (p99.9, CPU per I/O) is
significantly worse; otherwise it is rolled back with the reason. Each
comparison is printed as compare prints it (--html writes it too).
Interrupted, the change under measurement is undone and nothing else is
applied. Network changes keep their counter verification.

Exit status: 0 done, 1 a change was rolled back after verification, 2 error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Collect.FS = env.FS
			o.Collect.Version = env.Version
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return run(cmd.Context(), env, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.From, "from", "", "plan from a saved snapshot `FILE` instead of this host")
	f.StringVar(&o.Format, "format", "shell", "plan format: "+strings.Join(fix.Formats, ", "))
	f.StringSliceVar(&o.Only, "only", nil, "only the findings of these check `ID`s (repeat or comma-separate)")
	f.BoolVar(&o.Apply, "apply", false, "apply the runtime changes, verify them and roll back what did not help")
	f.BoolVar(&o.Rollback, "rollback", false, "restore everything the state file records")
	f.BoolVar(&o.Persist, "persist", false, "write the persistent files (sysctl.d, udev, crypttab)")
	f.BoolVar(&o.Force, "force", false, "with --rollback, restore settings even if they changed since slowpath set them")
	f.DurationVar(&o.Watch, "watch", DefaultWatch, "how long to watch the counters after applying")
	f.StringVar(&o.StatePath, "state", apply.DefaultStatePath, "state `FILE` recording what slowpath changed")
	f.StringVar(&o.K8s.Namespace, "k8s-namespace", "kube-system", "namespace of the DaemonSet (--format kubernetes)")
	f.StringVar(&o.K8s.Image, "k8s-image", "docker.io/library/busybox:1.36", "image of the init container; it needs sh and chroot (--format kubernetes)")
	o.Prove.addFlags(f)
	collectcmd.AddCollectFlags(f, &o.Collect)
	return cmd
}

func usageErr(err error) error { return &clienv.ExitError{Code: clienv.ExitUsage, Err: err} }

func run(ctx context.Context, env *clienv.Env, o *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if !slices.Contains(fix.Formats, o.Format) {
		return usageErr(fmt.Errorf("unknown --format %q: use %s", o.Format, strings.Join(fix.Formats, ", ")))
	}
	if o.Rollback && (o.Apply || o.Persist) {
		return usageErr(errors.New("--rollback cannot be combined with --apply or --persist"))
	}
	if o.Watch < 0 {
		return usageErr(errors.New("--watch must not be negative"))
	}
	if o.Apply && o.Watch < fix.MinWatch*time.Second {
		return usageErr(fmt.Errorf("--watch %s is too short to verify a change: --apply needs at least %ds (two counter samples that far apart)", o.Watch, fix.MinWatch))
	}
	w, err := o.Prove.validate(o)
	if err != nil {
		return usageErr(err)
	}
	if o.Rollback {
		a, err := apply.Open(apply.Live(o.Collect.FS), o.StatePath, env.Stderr)
		if err != nil {
			return usageErr(err)
		}
		defer a.Close()
		if err := a.Rollback(o.Force); err != nil {
			return usageErr(fmt.Errorf("rollback: %w", err))
		}
		fmt.Fprintln(env.Stderr, "rollback done: nothing recorded remains")
		return nil
	}
	s, r, err := load(ctx, o)
	if err != nil {
		return err
	}
	plan, err := fix.Build(s, r.Findings, fix.Options{Only: o.Only})
	if err != nil {
		return usageErr(err)
	}
	// A snapshot from elsewhere (a ticket, another node) names devices
	// that may be other devices here: its plan is only printed unless the
	// snapshot is shown to be of this host (docs/fix.md).
	if o.From != "" && (o.Apply || o.Persist) {
		if err := apply.CheckSameHost(s, apply.Live(o.Collect.FS), plan); err != nil {
			return usageErr(fmt.Errorf("fix --from %s with --apply or --persist: %w; run slowpath fix on this host without --from (it collects this host), or drop --apply and --persist to only print the plan", o.From, err))
		}
	}
	if err := fix.WriteWith(env.Stdout, plan, o.Format, o.K8s); err != nil {
		return usageErr(err)
	}
	if !o.Apply && !o.Persist {
		return nil
	}
	a, err := apply.Open(apply.Live(o.Collect.FS), o.StatePath, env.Stderr)
	if err != nil {
		return usageErr(err)
	}
	defer a.Close()
	entries := plan.Entries
	rolledBack := false
	switch {
	case o.Apply && o.Prove.Workload != "":
		if entries, rolledBack, err = proveAndApply(ctx, env, a, o, w, s, plan); err != nil {
			return usageErr(err)
		}
	case o.Apply:
		if entries, rolledBack, err = applyAndVerify(ctx, env.Stderr, a, o, plan); err != nil {
			return usageErr(err)
		}
	}
	if o.Persist {
		for _, e := range entries {
			ps, err := a.Persist(e)
			for _, p := range ps {
				switch {
				case p.Skipped != "":
					fmt.Fprintf(env.Stderr, "%s: not written: %s\n", p.ID, p.Skipped)
				case p.Changed:
					fmt.Fprintf(env.Stderr, "%s: wrote %s\n", p.ID, p.Path)
				default:
					fmt.Fprintf(env.Stderr, "%s: %s already up to date\n", p.ID, p.Path)
				}
			}
			if err != nil {
				return usageErr(fmt.Errorf("persist %s: %w", e.ID, err))
			}
			for _, m := range e.Manual {
				fmt.Fprintf(env.Stderr, "%s: to keep it, run by hand: %s\n", e.ID, m)
			}
		}
	}
	if rolledBack {
		return &clienv.ExitError{Code: clienv.ExitFindings}
	}
	return nil
}

// load returns the snapshot and its analysis, from --from or this host.
func load(ctx context.Context, o *Options) (*snapshot.Snapshot, *report.Report, error) {
	s, err := collectcmd.Snapshot(ctx, o.From, o.Collect)
	if err != nil {
		return nil, nil, err
	}
	r, err := analyze.Run(s, check.Config{})
	if err != nil {
		return nil, nil, usageErr(err)
	}
	return s, r, nil
}

// applyAndVerify samples the watched counters of the plan's network
// entries over a --watch window, applies the entries in order (a failing
// step rolls back every change of this run), then collects again over an
// equal window and judges each entry (fix.Verify): rolled back when its
// finding remains or its counters rose beyond the noise margin, verified
// only when its counters fell beyond it, otherwise kept as "applied, not
// proven". It returns the entries that hold.
func applyAndVerify(ctx context.Context, log io.Writer, a *apply.Applier, o *Options, plan *fix.Plan) ([]fix.Entry, bool, error) {
	// Verify on the live host, also when the plan came from a snapshot.
	// An interrupt (Ctrl-C, SIGTERM) during the watch leaves the changes
	// unverified: they are rolled back rather than left behind.
	sctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	co := o.Collect
	co.Net.Interval = o.Watch
	var before *netmodel.Model
	if slices.ContainsFunc(plan.Entries, func(e fix.Entry) bool { return len(e.Steps) > 0 && fix.Watched(e) }) {
		// The window before the change, as long as the one after it: a
		// rate over 1 s against one over 10 s mixes noise of two sizes.
		fmt.Fprintf(log, "sampling the counters for %s before the change\n", o.Watch)
		r, err := analyze.Run(collect.Run(sctx, co), check.Config{})
		if sctx.Err() != nil {
			return nil, false, errors.New("interrupted before any change: nothing changed")
		}
		if err != nil {
			return nil, false, err
		}
		before = r.Network
	}
	var applied []fix.Entry
	var changedKeys []string
	for _, e := range plan.Entries {
		if len(e.Steps) == 0 {
			if e.NotApplicable != "" {
				fmt.Fprintf(log, "%s on %s: not applicable here: %s\n", e.ID, e.Subject, e.NotApplicable)
			}
			continue
		}
		outs, err := a.ApplyEntry(e)
		if err != nil {
			// ApplyEntry undid this entry's earlier steps; undo the
			// entries before it too, last first.
			slices.Reverse(changedKeys)
			if uerr := a.Undo(changedKeys, false); uerr != nil {
				return nil, false, fmt.Errorf("%s on %s: %w; rolling back earlier entries failed: %w", e.ID, e.Subject, err, uerr)
			}
			if len(changedKeys) > 0 {
				fmt.Fprintf(log, "rolled back the earlier entries: %s\n", strings.Join(changedKeys, ", "))
			}
			return nil, false, fmt.Errorf("%s on %s: %w", e.ID, e.Subject, err)
		}
		for _, out := range outs {
			if out.Changed {
				changedKeys = append(changedKeys, out.Key)
			}
		}
		applied = append(applied, e)
	}
	if len(changedKeys) == 0 {
		fmt.Fprintln(log, "nothing changed: every setting already has the planned value")
		return applied, false, nil
	}
	fmt.Fprintf(log, "verifying: collecting again, counters watched for %s\n", o.Watch)
	snap := collect.Run(sctx, co)
	if sctx.Err() != nil {
		slices.Reverse(changedKeys)
		if err := a.Undo(changedKeys, false); err != nil {
			return nil, false, fmt.Errorf("interrupted before verification; rolling back failed: %w (run slowpath fix --rollback)", err)
		}
		return nil, false, fmt.Errorf("interrupted before verification: rolled back %s", strings.Join(changedKeys, ", "))
	}
	after, err := analyze.Run(snap, check.Config{})
	if err != nil {
		return nil, false, err
	}
	var kept []fix.Entry
	var unproven []string
	storage := false
	rolledBack := false
	for _, e := range applied {
		v := fix.Verify(e, before, after.Findings, after.Network)
		if v.Counters != "" {
			fmt.Fprintf(log, "%s: %s\n", e.ID, v.Counters)
		}
		switch v.Status {
		case fix.Verified:
			fmt.Fprintf(log, "%s on %s: verified\n", e.ID, e.Subject)
			kept = append(kept, e)
			continue
		case fix.NotProven:
			fmt.Fprintf(log, "%s on %s: applied, not proven: %s\n", e.ID, e.Subject, v.Why)
			unproven = append(unproven, e.ID+" on "+e.Subject)
			storage = storage || !fix.Watched(e)
			kept = append(kept, e)
			continue
		}
		fmt.Fprintf(log, "%s on %s: rolling back, %s\n", e.ID, e.Subject, v.Why)
		if err := a.UndoEntry(e.ID, e.Subject); err != nil {
			return nil, true, fmt.Errorf("roll back %s: %w", e.ID, err)
		}
		rolledBack = true
	}
	if len(unproven) > 0 {
		fmt.Fprintf(log, "applied, not proven (kept; slowpath fix --rollback undoes them): %s\n", strings.Join(unproven, ", "))
		if storage {
			fmt.Fprintf(log, "storage changes: %s\n", fix.ProveHint)
		}
	}
	return kept, rolledBack, nil
}
