// Package fleetcmd implements `slowpath fleet`: findings across nodes, read
// from Prometheus (which scraped every node's `slowpath agent`) through its
// HTTP API, grouped by a label such as the instance type or node pool.
package fleetcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/fleettax"
)

// Options are the flags of `slowpath fleet`.
type Options struct {
	Prometheus string
	By         string
	Format     string
	Timeout    time.Duration
	Tax        bool
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
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Prometheus == "" {
				return &clienv.ExitError{Code: clienv.ExitUsage, Err: fmt.Errorf("--prometheus URL is required")}
			}
			switch {
			case o.Format == "markdown" && !o.Tax:
				return &clienv.ExitError{Code: clienv.ExitUsage, Err: fmt.Errorf("--format markdown is for --tax: use text or json")}
			case o.Format != "text" && o.Format != "json" && o.Format != "markdown":
				return &clienv.ExitError{Code: clienv.ExitUsage, Err: fmt.Errorf("unknown --format %q: use text, json or (with --tax) markdown", o.Format)}
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			if err := run(cmd.Context(), env, o); err != nil {
				return &clienv.ExitError{Code: clienv.ExitUsage, Err: err}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Prometheus, "prometheus", "", "Prometheus base `URL` (http://host:9090)")
	f.StringVar(&o.By, "by", "instance_type", "group nodes by this `LABEL`")
	f.StringVar(&o.Format, "format", "text", "output format: text, json, or markdown with --tax")
	f.BoolVar(&o.Tax, "tax", false, "summarise the encryption tax per group (needs the recording rules of deploy/kubernetes/prometheusrule.yaml)")
	f.DurationVar(&o.Timeout, "timeout", 30*time.Second, "time allowed for the queries")
	return cmd
}

// Summary is the JSON form of `slowpath fleet`.
type Summary struct {
	By     string  `json:"by"`
	Groups []Group `json:"groups"`
}

// Group is the nodes sharing one value of the --by label.
type Group struct {
	Value    string       `json:"value"` // "" when the nodes lack the label
	Nodes    int          `json:"nodes"`
	Findings []GroupCount `json:"findings"`
}

// GroupCount is one check firing on one subject in Nodes of the group's nodes.
type GroupCount struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
	Subject  string `json:"subject"`
	Nodes    int    `json:"nodes"`
}

// node identifies a scrape target: the job and instance labels
// Prometheus attaches to every series of it.
type node struct{ job, instance string }

func nodeOf(m model.Metric) node {
	return node{string(m[model.JobLabel]), string(m[model.InstanceLabel])}
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
	s, err := Query(ctx, v1.NewAPI(client), o.By, time.Now())
	if err != nil {
		return err
	}
	if o.Format == "json" {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	return WriteText(env.Stdout, s)
}

// Query reads every node's slowpath_node_info and firing findings and
// groups them by the label by.
func Query(ctx context.Context, a v1.API, by string, at time.Time) (*Summary, error) {
	info, err := fleettax.Vector(ctx, a, "slowpath_node_info", at)
	if err != nil {
		return nil, err
	}
	if len(info) == 0 {
		return nil, fmt.Errorf("no slowpath_node_info series in Prometheus: is it scraping `slowpath agent` (see deploy/kubernetes/)?")
	}
	firing, err := fleettax.Vector(ctx, a, "slowpath_finding == 1", at)
	if err != nil {
		return nil, err
	}
	groupOf := map[node]string{}
	members := map[string]int{}
	for _, smp := range info {
		n := nodeOf(smp.Metric)
		g := string(smp.Metric[model.LabelName(by)])
		groupOf[n] = g
		members[g]++
	}
	type key struct{ group, id, sev, subject string }
	counts := map[key]map[node]bool{}
	for _, smp := range firing {
		n := nodeOf(smp.Metric)
		g, ok := groupOf[n]
		if !ok {
			// A node whose info series is missing: its finding series
			// carries the target labels too.
			g = string(smp.Metric[model.LabelName(by)])
			groupOf[n] = g
			members[g]++
		}
		k := key{g, string(smp.Metric["id"]), string(smp.Metric["severity"]), string(smp.Metric["subject"])}
		if counts[k] == nil {
			counts[k] = map[node]bool{}
		}
		counts[k][n] = true
	}
	s := &Summary{By: by, Groups: []Group{}}
	for g, n := range members {
		s.Groups = append(s.Groups, Group{Value: g, Nodes: n, Findings: []GroupCount{}})
	}
	sort.Slice(s.Groups, func(i, j int) bool { return s.Groups[i].Value < s.Groups[j].Value })
	byGroup := map[string]*Group{}
	for i := range s.Groups {
		byGroup[s.Groups[i].Value] = &s.Groups[i]
	}
	for k, nodes := range counts {
		g := byGroup[k.group]
		g.Findings = append(g.Findings, GroupCount{ID: k.id, Severity: k.sev, Subject: k.subject, Nodes: len(nodes)})
	}
	for _, g := range s.Groups {
		sort.Slice(g.Findings, func(i, j int) bool {
			a, b := g.Findings[i], g.Findings[j]
			sa, _ := check.ParseSeverity(a.Severity)
			sb, _ := check.ParseSeverity(b.Severity)
			if sa != sb {
				return sa > sb
			}
			if a.Nodes != b.Nodes {
				return a.Nodes > b.Nodes
			}
			if a.ID != b.ID {
				return a.ID < b.ID
			}
			return a.Subject < b.Subject
		})
	}
	return s, nil
}

// WriteText prints one block per group, worst findings first.
func WriteText(w io.Writer, s *Summary) error {
	for _, g := range s.Groups {
		name := g.Value
		if name == "" {
			name = "(no " + s.By + ")"
		}
		unit := "nodes"
		if g.Nodes == 1 {
			unit = "node"
		}
		if _, err := fmt.Fprintf(w, "%s: %d %s\n", name, g.Nodes, unit); err != nil {
			return err
		}
		if len(g.Findings) == 0 {
			fmt.Fprintln(w, "  no check fires")
		}
		for _, f := range g.Findings {
			subject := f.Subject
			if subject == "" {
				subject = "-"
			}
			fmt.Fprintf(w, "  %-8s  %-28s  %-20s  %d/%d nodes\n", f.Severity, f.ID, subject, f.Nodes, g.Nodes)
		}
	}
	return nil
}

func runTax(ctx context.Context, env *clienv.Env, o *Options, a v1.API) error {
	s, err := fleettax.Query(ctx, a, o.By, time.Now())
	if err != nil {
		return err
	}
	switch o.Format {
	case "json":
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	case "markdown":
		return fleettax.WriteMarkdown(env.Stdout, s)
	}
	return fleettax.WriteText(env.Stdout, s)
}
