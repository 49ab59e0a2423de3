package fleetcmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/slowpath/slowpath/internal/canary"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/fleetverdict"
	"github.com/slowpath/slowpath/internal/report/verdictreport"
	"github.com/slowpath/slowpath/internal/stats"
)

// VerdictOptions are the flags of `slowpath fleet verdict`.
type VerdictOptions struct {
	Prometheus     string
	Change         string
	By, NodeLabel  string
	Metrics        []string
	FindingSeries  bool
	Window, Rate   time.Duration
	Alpha          float64
	ChangedAt      string
	Canary         string
	Apply          bool
	Kubeconfig     string
	Format, FailOn string
	Timeout        time.Duration

	// Kube makes the client --apply uses; tests give a fake clientset.
	Kube func(kubeconfig string) (dynamic.Interface, error)
	// Now is the evaluation time; time.Now when nil.
	Now func() time.Time

	// ByGiven is set when --by was on the command line (not its default).
	ByGiven bool

	series    []fleetverdict.Series
	canary    fix.Canary
	changedAt time.Time
}

// Gates of --fail-on.
const (
	failNone     = "none"
	failRollback = "rollback"
	failHold     = "hold"
)

// NewCmdVerdict builds `fleet verdict`; runF replaces the action in tests.
func NewCmdVerdict(env *clienv.Env, runF func(context.Context, *VerdictOptions) error) *cobra.Command {
	o := &VerdictOptions{}
	cmd := &cobra.Command{
		Use:   "verdict --prometheus URL --change ID",
		Short: "Decide a canary rollout of a node setting per group: promote, hold or roll back",
		Long: `Verdict judges a node setting that runs on canary nodes first (fix --apply on
some nodes, or the DaemonSet of fix --format kubernetes --canary): the nodes
running change ID are those whose agent exports slowpath_fix_applied{id=ID},
since the time it carries. Per group of --by, each node's mean of every series
over --window before the change and over --window after it (starting
--rate-interval after the last canary changed): the canaries' changes against
the other nodes' changes (difference in differences per node, so a node's
level and a fleet-wide drift cancel), tested with compare's Mann-Whitney U
across nodes.

The series are the finding's own by default (backlog drops per second for
net.backlog-drops, ring drops for net.ring-undersized, time squeezes for
net.time-squeeze, the dm-crypt added await for the crypt flags), and any you
name with --metric NAME[,higher|lower][,primary|guard]=PROMQL: an instant query
with one series per node (keep --node-label), $__rate_interval standing for
--rate-interval. Yours are guards, higher is better, unless you say.

  pool-a (8 nodes, 4 canaries): promote: backlog_drops_per_second significantly better on the canaries, no guard worse
  pool-b (8 nodes, 4 canaries): roll back: significantly worse on the canaries: indexing_docs_per_second

Promote: a primary better, no series worse. Roll back: any series worse.
Hold: no significant change yet, too few canaries (how many would decide), or
the window after the change not over. With --canary LABEL=VALUE the label
changes are printed (promote labels the group's other nodes, roll back
unlabels the canaries); --apply makes them through the Kubernetes API of the
kubeconfig, each printed before it is made. --node-label must then carry the
Kubernetes node name.

Exit status: 0, or 1 when --fail-on rollback (a group rolls back) or
--fail-on hold (a group does not promote) is met, 2 on error.`,
		Example: `  slowpath fleet verdict --prometheus http://prometheus:9090 --change net.backlog-drops \
    --by node_pool --node-label node --window 30m \
    --metric 'indexing_docs_per_second=sum by (node) (rate(indexed_docs_total[$__rate_interval]))' \
    --canary slowpath.dev/canary=net-backlog
  slowpath fleet verdict ... --format html > verdict.html
  slowpath fleet verdict ... --canary slowpath.dev/canary=net-backlog --apply`,
		Args: cobra.NoArgs,
		RunE: clienv.Action(o, func([]string) error { return o.validate() }, runF,
			func(ctx context.Context) error { return RunVerdict(ctx, env, o) }),
	}
	f := cmd.Flags()
	// A --by typed on the command line must name a label some node has; the
	// default may be absent (a fleet outside a cloud: one group).
	cmd.PreRun = func(*cobra.Command, []string) { o.ByGiven = f.Changed("by") }
	f.StringVar(&o.Prometheus, "prometheus", "", "Prometheus base `URL` (http://host:9090)")
	f.StringVar(&o.Change, "change", "", "the change: the check `ID` whose fix the canaries run (slowpath_fix_applied{id})")
	f.StringVar(&o.By, "by", "instance_type", "group nodes by this Prometheus `LABEL`")
	f.StringVar(&o.NodeLabel, "node-label", "node", "the Prometheus `LABEL` that names a node in every series (deploy/kubernetes's ServiceMonitor sets node; instance for static targets)")
	f.StringArrayVar(&o.Metrics, "metric", nil, "a series of your own: `NAME[,higher|lower][,primary|guard]=PROMQL` (repeatable)")
	f.BoolVar(&o.FindingSeries, "finding-series", true, "test the finding's own series first (false: only --metric)")
	f.DurationVar(&o.Window, "window", time.Hour, "length of the window before and after the change")
	f.DurationVar(&o.Rate, "rate-interval", time.Minute, "range of the rates ($__rate_interval), and the gap after the change")
	f.Float64Var(&o.Alpha, "alpha", stats.DefaultAlpha, "significance level")
	f.StringVar(&o.ChangedAt, "changed-at", "", "change `TIME` (RFC 3339) of every canary, for state files that recorded none")
	f.StringVar(&o.Canary, "canary", "", "the canary `LABEL=VALUE` of fix --format kubernetes --canary: print the label changes")
	f.BoolVar(&o.Apply, "apply", false, "make the label changes through the Kubernetes API (needs --canary)")
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig `FILE` for --apply (default: $KUBECONFIG, ~/.kube/config)")
	verdictFormats.AddFlag(f, &o.Format)
	f.StringVar(&o.FailOn, "fail-on", failNone, "exit 1 when a group's outcome is `WHAT`: rollback, hold (anything but promote) or none")
	f.DurationVar(&o.Timeout, "timeout", 30*time.Second, "time allowed for the queries")
	return cmd
}

// verdictFormats are fleet verdict's --format values.
var verdictFormats = clienv.Formats{Names: []string{"text", "json", "markdown", "html"}, Default: "text"}

// validate checks the flags before anything runs.
func (o *VerdictOptions) validate() error {
	if o.Prometheus == "" {
		return errors.New("--prometheus URL is required")
	}
	if o.Change == "" {
		return errors.New("--change ID is required: the check id whose fix the canaries run (slowpath_fix_applied{id})")
	}
	if !slices.ContainsFunc(check.All(), func(c check.Check) bool { return c.ID == o.Change }) {
		return fmt.Errorf("--change %s: no such check (see docs/checks.md)", o.Change)
	}
	if err := verdictFormats.Check(o.Format); err != nil {
		return err
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout %v: want a time above 0 for the queries", o.Timeout)
	}
	switch o.FailOn {
	case failNone, failRollback, failHold:
	default:
		return fmt.Errorf("--fail-on %q: use rollback, hold or none", o.FailOn)
	}
	o.series = nil
	if o.FindingSeries {
		s, ok := fleetverdict.FindingSeries(o.Change, o.NodeLabel)
		if !ok {
			return fmt.Errorf("%s has no series of its own (those that have: %s): name yours with --metric NAME,primary=PROMQL, or pass --finding-series=false", o.Change, strings.Join(fleetverdict.FindingIDs(), ", "))
		}
		o.series = append(o.series, s)
	}
	for _, m := range o.Metrics {
		s, err := fleetverdict.ParseSeries(m)
		if err != nil {
			return err
		}
		o.series = append(o.series, s)
	}
	if o.ChangedAt != "" {
		t, err := time.Parse(time.RFC3339, o.ChangedAt)
		if err != nil {
			return fmt.Errorf("--changed-at %q: want RFC 3339 (2026-11-27T10:00:00Z)", o.ChangedAt)
		}
		o.changedAt = t
	}
	if o.Canary != "" {
		c, err := fix.ParseCanary(o.Canary)
		if err != nil {
			return err
		}
		o.canary = c
	} else if o.Apply {
		return errors.New("--apply needs --canary LABEL=VALUE: the label whose changes promote or roll back")
	}
	if o.Apply && o.Format != "text" {
		return errors.New("--apply prints each label change as it makes it: use --format text")
	}
	return o.verdictOptions(time.Time{}).Validate()
}

func (o *VerdictOptions) verdictOptions(now time.Time) fleetverdict.Options {
	return fleetverdict.Options{Change: o.Change, By: o.By, ByGiven: o.ByGiven, NodeLabel: o.NodeLabel, Window: o.Window, RateInterval: o.Rate,
		Alpha: o.Alpha, Series: o.series, ChangedAt: o.changedAt, Now: now}
}

// RunVerdict is the command's action on validated options.
func RunVerdict(ctx context.Context, env *clienv.Env, o *VerdictOptions) error {
	client, err := api.NewClient(api.Config{Address: o.Prometheus})
	if err != nil {
		return fmt.Errorf("prometheus client: %w", err)
	}
	now := time.Now()
	if o.Now != nil {
		now = o.Now()
	}
	qctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	r, err := fleetverdict.Query(qctx, v1.NewAPI(client), o.verdictOptions(now))
	if err != nil {
		return err
	}
	if o.Canary != "" {
		if err := fleetverdict.Plan(r, o.canary); err != nil {
			return err
		}
	}
	switch o.Format {
	case "json":
		err = clienv.EncodeJSON(env.Stdout, fleetverdict.FormatVersion, r, true)
	case "markdown":
		err = verdictreport.WriteMarkdown(env.Stdout, r)
	case "html":
		err = verdictreport.WriteHTML(env.Stdout, r)
	default:
		err = verdictreport.WriteText(env.Stdout, r)
	}
	if err != nil {
		return err
	}
	if o.Apply {
		if err := apply(ctx, env, o, r); err != nil {
			return err
		}
	}
	return gate(o.FailOn, r)
}

func apply(ctx context.Context, env *clienv.Env, o *VerdictOptions, r *fleetverdict.Report) error {
	n := 0
	for _, g := range r.Groups {
		n += len(g.Actions)
	}
	if n == 0 {
		fmt.Fprintln(env.Stdout, "\n--apply: no label to change (no group promotes or rolls back)")
		return nil
	}
	mk := o.Kube
	if mk == nil {
		mk = kubeClient
	}
	kc, err := mk(o.Kubeconfig)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "\n--apply: %d label changes\n", n)
	return fleetverdict.Apply(ctx, env.Stdout, kc, r, o.canary)
}

// kubeClient is client-go's client for the kubeconfig (kubectl's rules:
// the file given, else $KUBECONFIG, else ~/.kube/config).
func kubeClient(path string) (dynamic.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return dynamic.NewForConfig(cfg)
}

func gate(failOn string, r *fleetverdict.Report) error {
	var hit []string
	for _, g := range r.Groups {
		if failOn == failRollback && g.Outcome == canary.Rollback || failOn == failHold && g.Outcome != canary.Promote {
			hit = append(hit, fmt.Sprintf("%s %s", fleetverdict.GroupName(r.By, g.Value), g.Outcome))
		}
	}
	if len(hit) == 0 {
		return nil
	}
	return &clienv.ExitError{Code: clienv.ExitFindings, Err: fmt.Errorf("--fail-on %s: %s", failOn, strings.Join(hit, ", "))}
}
