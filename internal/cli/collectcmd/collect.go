// Package collectcmd implements `slowpath collect`: save everything the analysis
// reads so that `slowpath doctor --from FILE` can replay it elsewhere.
package collectcmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/collect"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/stdfile"
)

// Options are the flags of `slowpath collect`.
type Options struct {
	Output  string
	Collect collect.Options
}

// AddCollectFlags registers the flags that shape a live collection; doctor
// shares them so a live doctor and collect+doctor --from see the same host.
func AddCollectFlags(fs *pflag.FlagSet, o *collect.Options) {
	o.AddFlags(fs)
}

// NewCmdCollect builds the command; runF replaces the action in tests.
func NewCmdCollect(env *clienv.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{}
	cmd := &cobra.Command{
		Use:   "collect -o FILE",
		Short: "Save a snapshot of this host (storage, network, cloud) for analysis elsewhere",
		Long: `Collect reads /proc, /sys, device-mapper and instance metadata and writes a
snapshot: a .tar.gz archive when FILE ends in .tar.gz or .tgz, JSON under any
other name, or JSON on stdout with -o - (doctor --from - reads it). Key material in
dm-crypt tables is removed before anything is written.`,
		Args: cobra.NoArgs,
		RunE: clienv.Action(o, func([]string) error { o.Collect.FS, o.Collect.Version = env.FS, env.Version; return nil }, runF,
			func(ctx context.Context) error { return run(ctx, env, o) }),
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "write the snapshot to `FILE` (.tar.gz or .tgz: an archive; any other name: JSON); - for JSON on stdout")
	_ = cmd.MarkFlagRequired("output")
	AddCollectFlags(cmd.Flags(), &o.Collect)
	return cmd
}

func run(ctx context.Context, env *clienv.Env, o *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	s, err := Snapshot(ctx, "", o.Collect)
	if err != nil {
		return err
	}
	if o.Output == stdfile.Dash {
		return snapshot.Encode(env.Stdout, s)
	}
	if err := snapshot.Save(o.Output, s); err != nil {
		return &clienv.ExitError{Code: clienv.ExitUsage, Err: err}
	}
	fmt.Fprintf(env.Stderr, "wrote %s (%d item(s) not collected)\n", o.Output, len(s.Manifest.Errors))
	return nil
}

// Snapshot loads the snapshot saved at from, or collects this host when
// from is empty: what doctor and fix analyse. Both obey the same rules
// (snapshot.Validate: Load validates, and so does this after collecting),
// so a live host and a replayed snapshot are refused alike. Errors are
// usage errors (exit 2).
func Snapshot(ctx context.Context, from string, o collect.Options) (*snapshot.Snapshot, error) {
	// The flags' values are checked with --from too: one that is wrong is
	// wrong whatever reads it.
	if err := o.Validate(); err != nil {
		return nil, &clienv.ExitError{Code: clienv.ExitUsage, Err: err}
	}
	if from != "" {
		s, err := snapshot.Load(from)
		if err != nil {
			return nil, &clienv.ExitError{Code: clienv.ExitUsage, Err: err}
		}
		return s, nil
	}
	s := collect.Run(ctx, o)
	if err := s.Validate(); err != nil {
		return nil, &clienv.ExitError{Code: clienv.ExitUsage, Err: fmt.Errorf("collect: %w: this host reports a value slowpath refuses (docs/snapshot.md, section Validation); please report it", err)}
	}
	return s, nil
}
