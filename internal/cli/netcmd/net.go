// Package netcmd implements `slowpath net`: the network data-path model, and
// its subcommands watch (live drop-counter rates) and drops (drop reasons
// attributed by eBPF).
package netcmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/cli/netcmd/dropscmd"
	"github.com/slowpath/slowpath/internal/cli/netcmd/watchcmd"
	"github.com/slowpath/slowpath/internal/collect/network"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/model/netmodel"
	"github.com/slowpath/slowpath/internal/report"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Options are the flags of `slowpath net`.
type Options struct {
	From        string
	Format      string
	LiveSources hostfs.LiveSources
	Net         network.Options
}

// NewCmdNet builds `slowpath net` and its subcommands; runF replaces the
// action in tests.
func NewCmdNet(env *clienv.Env, runF ...func(context.Context, *Options) error) *cobra.Command {
	o := &Options{}
	var stand func(context.Context, *Options) error
	if len(runF) > 0 {
		stand = runF[0]
	}
	cmd := &cobra.Command{
		Use:   "net",
		Short: "Show the network data path: NICs, rings, backlog, socket buffers, drops",
		Long: `Net reads this host's interfaces (driver, ring sizes, queues, IRQs), the
receive-path sysctls and every drop counter twice (--net-interval apart), and
prints them grouped by layer: ring, driver, backlog, budget, socket, qdisc.
With --from it prints the network model of a saved snapshot.`,
		Args: cobra.NoArgs,
		RunE: clienv.Action(o, nil, stand, func(ctx context.Context) error { return run(ctx, env, o) }),
	}
	cmd.Flags().StringVar(&o.From, "from", "", "print the network model of a saved snapshot `FILE`")
	formats.AddFlag(cmd.Flags(), &o.Format)
	cmd.Flags().Var(&o.LiveSources, "live-sources", hostfs.FlagUsage)
	o.Net.AddFlags(cmd.Flags())
	cmd.AddCommand(watchcmd.NewCmdWatch(env, nil), dropscmd.NewCmdDrops(env, nil))
	return cmd
}

// formats are net's --format values.
var formats = clienv.Formats{Names: []string{"text", "json", "markdown"}, Default: "text"}

func run(ctx context.Context, env *clienv.Env, o *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := formats.Check(o.Format); err != nil {
		return clienv.Usage(err)
	}
	var s *snapshot.Snapshot
	if o.From != "" {
		var err error
		if s, err = snapshot.Load(o.From); err != nil {
			return clienv.Usage(err)
		}
	} else {
		s = &snapshot.Snapshot{Manifest: snapshot.Manifest{FormatVersion: snapshot.FormatVersion, CollectedAt: time.Now().UTC()}}
		network.Collect(ctx, env.FS.WithLiveSources(o.LiveSources), o.Net, s)
		for _, e := range s.Manifest.Errors {
			fmt.Fprintf(env.Stderr, "slowpath: not collected: %s %s: %s\n", e.Collector, e.Path, e.Message)
		}
	}
	m, err := netmodel.Build(s)
	if err != nil {
		return clienv.Usage(err)
	}
	switch o.Format {
	case "json":
		return clienv.EncodeJSON(env.Stdout, 1, m, true)
	case "markdown":
		return report.WriteNetworkMarkdown(env.Stdout, m)
	}
	return report.WriteNetwork(env.Stdout, m, report.Options{Color: env.Color()})
}
