// Package fleetcmd implements `slowpath fleet`: it wires the flags to
// internal/fleet (findings across nodes, read from Prometheus, grouped by a
// label such as the instance type or node pool) and, with --tax, to
// internal/fleettax; internal/report/fleetreport and taxreport render them.
package fleetcmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/fleet"
	"github.com/slowpath/slowpath/internal/fleettax"
	"github.com/slowpath/slowpath/internal/report/fleetreport"
	"github.com/slowpath/slowpath/internal/report/taxreport"
)

// Options are the flags of `slowpath fleet`.
type Options struct {
	Prometheus string
	By         string
	Format     string
	Timeout    time.Duration
	Tax        bool
	// ByGiven is set when --by was on the command line (not its default).
	ByGiven bool
}

// NewCmdFleet builds the command; runF replaces the action in tests.
func NewCmdFleet(env *clienv.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{}
	cmd := &cobra.Command{
		Use:   "fleet --prometheus URL",
		Short: "Summarise findings across nodes from Prometheus, grouped by a label",
		Long: `Fleet asks Prometheus, which scrapes 'slowpath agent' on every node, which
checks fire where, and groups the nodes by a label: one of slowpath_node_info's
(cloud, instance_type, region, kernel) or any target label Prometheus attached
(a node pool or zone from Kubernetes service discovery).

  Standard_E16d_v5: 12 nodes
    warning   storage.stacked-encryption  /mnt/data  12/12 nodes

--tax reads the encryption tax instead, from the recording rules of
deploy/kubernetes/prometheusrule.yaml: per group, the await the dm-crypt
layers add per I/O against what the cipher costs, the spread of their ratio
and the nodes at both ends (docs/agent.md, "The encryption tax").

  Standard_E16d_v5 (12 nodes): encryption adds 17.6 ms per I/O, 2678x the cipher's cost (6.55 µs)`,
		Example: `  slowpath fleet --prometheus http://prometheus:9090
  slowpath fleet --prometheus http://prometheus:9090 --by node_pool --format json
  slowpath fleet --tax --prometheus http://prometheus:9090 --by instance_type --format markdown`,
		Args: cobra.NoArgs,
		RunE: clienv.Action(o, func([]string) error { return o.validate() }, runF,
			func(ctx context.Context) error { return run(ctx, env, o) }),
	}
	f := cmd.Flags()
	// As fleet verdict's: a --by typed must name a label some node has.
	cmd.PreRun = func(*cobra.Command, []string) { o.ByGiven = f.Changed("by") }
	f.StringVar(&o.Prometheus, "prometheus", "", "Prometheus base `URL` (http://host:9090)")
	f.StringVar(&o.By, "by", "instance_type", "group nodes by this `LABEL`")
	formats.AddFlag(f, &o.Format)
	f.BoolVar(&o.Tax, "tax", false, "summarise the encryption tax per group (needs the recording rules of deploy/kubernetes/prometheusrule.yaml)")
	f.DurationVar(&o.Timeout, "timeout", 30*time.Second, "time allowed for the queries")
	cmd.AddCommand(NewCmdVerdict(env, nil))
	return cmd
}

func run(ctx context.Context, env *clienv.Env, o *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	client, err := api.NewClient(api.Config{Address: o.Prometheus})
	if err != nil {
		return fmt.Errorf("prometheus client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if o.Tax {
		return runTax(ctx, env, o, v1.NewAPI(client))
	}
	s, err := fleet.Query(ctx, v1.NewAPI(client), o.By, o.ByGiven, time.Now())
	if err != nil {
		return err
	}
	if o.Format == "json" {
		return clienv.EncodeJSON(env.Stdout, fleet.FormatVersion, s, true)
	}
	return fleetreport.WriteText(env.Stdout, s)
}

func runTax(ctx context.Context, env *clienv.Env, o *Options, a v1.API) error {
	s, err := fleettax.Query(ctx, a, o.By, o.ByGiven, time.Now())
	if err != nil {
		return err
	}
	switch o.Format {
	case "json":
		return clienv.EncodeJSON(env.Stdout, fleettax.FormatVersion, s, true)
	case "markdown":
		return taxreport.WriteMarkdown(env.Stdout, s)
	}
	return taxreport.WriteText(env.Stdout, s)
}

// formats are fleet's --format values, markdown only with --tax.
var formats = clienv.Formats{Names: []string{"text", "json", "markdown"}, Default: "text",
	Usage: "output format: text, json, or markdown with --tax"}

// validate checks the flags before anything runs.
func (o *Options) validate() error {
	if o.Prometheus == "" {
		return errors.New("--prometheus URL is required")
	}
	if err := formats.Check(o.Format); err != nil {
		return err
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout %v: want a time above 0 for the queries", o.Timeout)
	}
	if o.Format == "markdown" && !o.Tax {
		return errors.New("--format markdown is for --tax: use text or json")
	}
	return nil
}
