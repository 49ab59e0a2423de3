// Package fixcmd implements `slowpath fix`: plan the host-level fix of each
// finding, and on request apply it, verify it, roll it back and persist it.
package fixcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/cli/collectcmd"
	"github.com/slowpath/slowpath/internal/collect"
	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/fix/apply"
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
	// Canary: --canary LABEL=VALUE, --canary-nodes, --by (--format
	// kubernetes).
	Canary      string
	CanaryNodes int
	CanaryBy    string
	Collect     collect.Options
	Prove       ProveOptions
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
		RunE: clienv.Action(o, func([]string) error { o.Collect.FS, o.Collect.Version = env.FS, env.Version; return nil }, runF,
			func(ctx context.Context) error { return run(ctx, env, o) }),
	}
	f := cmd.Flags()
	f.StringVar(&o.From, "from", "", "plan from a saved snapshot `FILE` instead of this host")
	formats.AddFlag(f, &o.Format)
	f.StringSliceVar(&o.Only, "only", nil, "only the findings of these check `ID`s (repeat or comma-separate)")
	f.BoolVar(&o.Apply, "apply", false, "apply the runtime changes, verify them and roll back what did not help")
	f.BoolVar(&o.Rollback, "rollback", false, "restore everything the state file records")
	f.BoolVar(&o.Persist, "persist", false, "write the persistent files (sysctl.d, udev, crypttab)")
	f.BoolVar(&o.Force, "force", false, "with --rollback, restore settings even if they changed since slowpath set them")
	f.DurationVar(&o.Watch, "watch", DefaultWatch, "how long to watch the counters after applying")
	f.StringVar(&o.StatePath, "state", apply.DefaultStatePath, "state `FILE` recording what slowpath changed")
	f.StringVar(&o.K8s.Namespace, "k8s-namespace", "kube-system", "namespace of the DaemonSet (--format kubernetes)")
	f.StringVar(&o.K8s.Image, "k8s-image", "docker.io/library/busybox:1.36", "image of the init container; it needs sh and chroot (--format kubernetes)")
	f.StringVar(&o.Canary, "canary", "", "run the DaemonSet only on nodes labelled `LABEL=VALUE` (--format kubernetes; docs/fix.md, \"Canary\")")
	f.IntVar(&o.CanaryNodes, "canary-nodes", 0, "with --canary: also print the commands that label `N` random nodes of each --by group")
	f.StringVar(&o.CanaryBy, "by", "", "with --canary-nodes: the node `LABEL` whose values are the groups (e.g. topology.kubernetes.io/zone)")
	o.Prove.addFlags(f)
	collectcmd.AddCollectFlags(f, &o.Collect)
	return cmd
}

// formats are fix's --format values: the plan renderings, which its
// usage line calls plan formats.
var formats = clienv.Formats{Names: fix.Formats, Default: "shell", Usage: "plan format: " + strings.Join(fix.Formats, ", ")}

func run(ctx context.Context, env *clienv.Env, o *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := formats.Check(o.Format); err != nil {
		return clienv.Usage(err)
	}
	if o.Rollback && (o.Apply || o.Persist) {
		return clienv.Usage(errors.New("--rollback cannot be combined with --apply or --persist"))
	}
	if o.Watch < 0 {
		return clienv.Usage(errors.New("--watch must not be negative"))
	}
	if o.Apply && o.Watch < fix.MinWatch*time.Second {
		return clienv.Usage(fmt.Errorf("--watch %s is too short to verify a change: --apply needs at least %ds (two counter samples that far apart)", o.Watch, fix.MinWatch))
	}
	w, err := o.Prove.validate(o)
	if err != nil {
		return clienv.Usage(err)
	}
	if err := o.canary(); err != nil {
		return clienv.Usage(err)
	}
	if o.Rollback {
		// A missing state file records nothing: saying "rollback done"
		// would hide a wrong --state or a rollback already made.
		state := o.StatePath
		if state == "" {
			state = apply.DefaultStatePath
		}
		if _, err := os.Stat(state); errors.Is(err, fs.ErrNotExist) {
			return clienv.Usage(fmt.Errorf("rollback: no state file %s: nothing slowpath applied is recorded there (already rolled back, or --state names another file)", state))
		} else if err != nil {
			return clienv.Usage(fmt.Errorf("rollback: %w", err))
		}
		a, err := apply.Open(apply.Live(o.Collect.FS), o.StatePath, env.Stderr)
		if err != nil {
			return clienv.Usage(err)
		}
		defer a.Close()
		if err := a.Rollback(o.Force); err != nil {
			return clienv.Usage(fmt.Errorf("rollback: %w", err))
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
		return clienv.Usage(err)
	}
	// A snapshot from elsewhere (a ticket, another node) names devices
	// that may be other devices here: its plan is only printed unless the
	// snapshot is shown to be of this host (docs/fix.md).
	if o.From != "" && (o.Apply || o.Persist) {
		if err := apply.CheckSameHost(s, apply.Live(o.Collect.FS), plan); err != nil {
			return clienv.Usage(fmt.Errorf("fix --from %s with --apply or --persist: %w; run slowpath fix on this host without --from (it collects this host), or drop --apply and --persist to only print the plan", o.From, err))
		}
	}
	if err := fix.WriteWith(env.Stdout, plan, o.Format, o.K8s); err != nil {
		return clienv.Usage(err)
	}
	if !o.Apply && !o.Persist {
		return nil
	}
	a, err := apply.Open(apply.Live(o.Collect.FS), o.StatePath, env.Stderr)
	if err != nil {
		return clienv.Usage(err)
	}
	defer a.Close()
	entries := plan.Entries
	rolledBack := false
	switch {
	case o.Apply && o.Prove.Workload != "":
		if entries, rolledBack, err = proveAndApply(ctx, env, a, o, w, s, plan); err != nil {
			return clienv.Usage(err)
		}
	case o.Apply:
		if entries, rolledBack, err = applyAndVerify(ctx, env.Stderr, a, o, plan); err != nil {
			return clienv.Usage(err)
		}
	}
	if o.Persist {
		if err := persist(env.Stderr, a, entries); err != nil {
			return clienv.Usage(err)
		}
	}
	if rolledBack {
		return &clienv.ExitError{Code: clienv.ExitFindings}
	}
	return nil
}

// persist writes the files of entries and says what each write did.
func persist(log io.Writer, a *apply.Applier, entries []fix.Entry) error {
	for _, e := range entries {
		ps, err := a.Persist(e)
		for _, p := range ps {
			switch {
			case p.Skipped != "":
				fmt.Fprintf(log, "%s: not written: %s\n", p.ID, p.Skipped)
			case p.Changed:
				fmt.Fprintf(log, "%s: wrote %s\n", p.ID, p.Path)
			default:
				fmt.Fprintf(log, "%s: %s already up to date\n", p.ID, p.Path)
			}
		}
		if err != nil {
			return fmt.Errorf("persist %s: %w", e.ID, err)
		}
		for _, m := range e.Manual {
			fmt.Fprintf(log, "%s: to keep it, run by hand: %s\n", e.ID, m)
		}
	}
	return nil
}

// load returns the snapshot and its analysis, from --from or this host.
func load(ctx context.Context, o *Options) (*snapshot.Snapshot, *analyze.Report, error) {
	s, err := collectcmd.Snapshot(ctx, o.From, o.Collect)
	if err != nil {
		return nil, nil, err
	}
	r, err := analyze.Run(s, check.Config{})
	if err != nil {
		return nil, nil, clienv.Usage(err)
	}
	return s, r, nil
}

// applyAndVerify runs the apply → verify → rollback transaction
// (apply.ApplyAndVerify) on the live host, also when the plan came from a
// snapshot: each window collects this host with the counters watched
// for --watch. Ctrl-C or SIGTERM during a window rolls the changes back
// instead of killing fix with them applied. It prints the transaction's
// events to log and returns the entries that hold.
func applyAndVerify(ctx context.Context, log io.Writer, a *apply.Applier, o *Options, plan *fix.Plan) ([]fix.Entry, bool, error) {
	ctx, stop := clienv.Interruptible(ctx)
	defer stop()
	co := o.Collect
	co.Net.Interval = o.Watch
	r, err := a.ApplyAndVerify(ctx, plan, apply.Verification{
		Watch: o.Watch,
		Observe: func(ctx context.Context) (apply.Observation, error) {
			r, err := analyze.Run(collect.Run(ctx, co), check.Config{})
			if err != nil {
				return apply.Observation{}, err
			}
			return apply.Observation{Findings: r.Findings, Network: r.Network}, nil
		},
		Event: func(e apply.Event) { fmt.Fprintln(log, e) },
	})
	return r.Kept, r.RolledBack, err
}

// canary reads the canary flags into o.K8s.Canary.
func (o *Options) canary() error {
	if o.Canary == "" {
		if o.CanaryNodes != 0 || o.CanaryBy != "" {
			return errors.New("--canary-nodes and --by need --canary LABEL=VALUE")
		}
		return nil
	}
	if o.Format != "kubernetes" {
		return fmt.Errorf("--canary applies to --format kubernetes (the DaemonSet), not %s", o.Format)
	}
	c, err := fix.ParseCanary(o.Canary)
	if err != nil {
		return err
	}
	c.Nodes, c.By = o.CanaryNodes, o.CanaryBy
	if err := c.Validate(); err != nil {
		return err
	}
	o.K8s.Canary = &c
	return nil
}
