// Package fleet reads the findings of every node from Prometheus (which
// scraped every node's `slowpath agent`) and summarises them per node
// group: what `slowpath fleet` prints (rendered by internal/report/fleetreport).
// The encryption tax per group is internal/fleettax's.
package fleet

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/slowpath/slowpath/internal/check"
)

// FormatVersion is the format_version of Summary's JSON (docs/json.md).
const FormatVersion = 1

// Summary is the JSON form of `slowpath fleet` (docs/json.md).
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

// Vector runs the instant query q at at and wants a vector back. Warnings
// mean a partial answer; what it holds still counts. fleettax's queries
// use it too.
func Vector(ctx context.Context, a v1.API, q string, at time.Time) (model.Vector, error) {
	v, _, _, err := a.Query(ctx, q, at)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", q, err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("query %s: got %s, want a vector", q, v.Type())
	}
	return vec, nil
}

// Query reads every node's slowpath_node_info and firing findings and
// groups them by the label by; byGiven says the user named it (CheckBy).
func Query(ctx context.Context, a v1.API, by string, byGiven bool, at time.Time) (*Summary, error) {
	info, err := Vector(ctx, a, "slowpath_node_info", at)
	if err != nil {
		return nil, err
	}
	if len(info) == 0 {
		return nil, fmt.Errorf("no slowpath_node_info series in Prometheus: is it scraping `slowpath agent` (see deploy/kubernetes/)?")
	}
	if byGiven {
		if err := CheckBy(by, info); err != nil {
			return nil, err
		}
	}
	firing, err := Vector(ctx, a, "slowpath_finding == 1", at)
	if err != nil {
		return nil, err
	}
	return Summarize(by, info, firing), nil
}

// CheckBy refuses a --by the user typed that no node's info series has:
// grouped by it, every node would fall in one group "" and a mistyped
// label would read as a fleet without it. Only a --by given is checked;
// the default (instance_type) may be absent, a fleet outside a cloud, and
// then groups every node as one. fleet, fleet --tax and fleet verdict
// share it.
func CheckBy(by string, info model.Vector) error {
	var labels []string
	for _, smp := range info {
		if _, ok := smp.Metric[model.LabelName(by)]; ok {
			return nil
		}
		for l := range smp.Metric {
			if l != model.MetricNameLabel {
				labels = append(labels, string(l))
			}
		}
	}
	slices.Sort(labels)
	return fmt.Errorf("--by %s: no node's slowpath_node_info has the label %s; labels it has: %s", by, by, strings.Join(slices.Compact(labels), ", "))
}

// NodeOptions say how GroupNodes names the nodes and groups them.
type NodeOptions struct {
	// By is the label whose value groups the nodes; a node whose info
	// series lacks it is in the group "" (Prometheus drops empty labels,
	// so "" and absent are one).
	By string
	// Label names a node by the value of one label. "" names it by its
	// scrape target (job and instance), which Prometheus attaches to every
	// series a target exposes, so a finding or a mount finds its node:
	// fleet and fleet --tax. fleet --verdict names the label: its series
	// are the user's PromQL aggregated per node by that label alone, with
	// job and instance gone.
	Label string
}

// Nodes are the fleet's nodes, from their slowpath_node_info series,
// grouped by one label.
type Nodes struct {
	label string
	// Group is each node's group, by its name (Node).
	Group map[string]string
	// Members are each group's nodes, once each, in the order of the
	// info series.
	Members map[string][]string
	// Unnamed are the info series that lack the Label: nodes that cannot
	// be named, left out of the groups (fleet --verdict refuses them).
	Unnamed []model.Metric
}

// GroupNodes groups the nodes of the slowpath_node_info series info as o
// says: the one grouping of fleet, fleet --tax and fleet --verdict. A node
// with two info series (its labels changed within Prometheus's lookback)
// is counted once, in the group of the first.
func GroupNodes(info model.Vector, o NodeOptions) *Nodes {
	ns := &Nodes{label: o.Label, Group: map[string]string{}, Members: map[string][]string{}}
	for _, smp := range info {
		if _, ok := smp.Metric[model.LabelName(o.Label)]; o.Label != "" && !ok {
			ns.Unnamed = append(ns.Unnamed, smp.Metric)
			continue
		}
		n := ns.Node(smp.Metric)
		if _, dup := ns.Group[n]; dup {
			continue
		}
		ns.Add(n, string(smp.Metric[model.LabelName(o.By)]))
	}
	return ns
}

// Node names the node of m, a series of any kind, as GroupNodes names
// the nodes: its Label's value, or its job and instance (joined by
// model.SeparatorByte, which no UTF-8 label value holds).
func (ns *Nodes) Node(m model.Metric) string {
	if ns.label != "" {
		return string(m[model.LabelName(ns.label)])
	}
	return string(m[model.JobLabel]) + string([]byte{model.SeparatorByte}) + string(m[model.InstanceLabel])
}

// Add puts node n in group g: for a node the caller found in other
// series (its info series missing) and placed by their labels.
func (ns *Nodes) Add(n, g string) {
	ns.Group[n] = g
	ns.Members[g] = append(ns.Members[g], n)
}

// Summarize groups the nodes of the slowpath_node_info series info by
// their label by, and counts per group on how many nodes each (check,
// severity, subject) of the firing slowpath_finding series fires. Groups
// are in label order; findings worst severity first, then most nodes.
func Summarize(by string, info, firing model.Vector) *Summary {
	nodes := GroupNodes(info, NodeOptions{By: by})
	type key struct{ group, id, sev, subject string }
	counts := map[key]map[string]bool{}
	for _, smp := range firing {
		n := nodes.Node(smp.Metric)
		g, ok := nodes.Group[n]
		if !ok {
			// A node whose info series is missing: its finding series
			// carries the target labels too.
			g = string(smp.Metric[model.LabelName(by)])
			nodes.Add(n, g)
		}
		k := key{g, string(smp.Metric["id"]), string(smp.Metric["severity"]), string(smp.Metric["subject"])}
		if counts[k] == nil {
			counts[k] = map[string]bool{}
		}
		counts[k][n] = true
	}
	s := &Summary{By: by, Groups: []Group{}}
	for g, ns := range nodes.Members {
		s.Groups = append(s.Groups, Group{Value: g, Nodes: len(ns), Findings: []GroupCount{}})
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
	return s
}
