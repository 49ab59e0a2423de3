// Package fleet reads the findings of every node from Prometheus (which
// scraped every node's `slowpath agent`) and summarises them per node
// group: what `slowpath fleet` prints. The encryption tax per group is
// internal/fleettax's.
package fleet

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/units"
)

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
// groups them by the label by.
func Query(ctx context.Context, a v1.API, by string, at time.Time) (*Summary, error) {
	info, err := Vector(ctx, a, "slowpath_node_info", at)
	if err != nil {
		return nil, err
	}
	if len(info) == 0 {
		return nil, fmt.Errorf("no slowpath_node_info series in Prometheus: is it scraping `slowpath agent` (see deploy/kubernetes/)?")
	}
	firing, err := Vector(ctx, a, "slowpath_finding == 1", at)
	if err != nil {
		return nil, err
	}
	return Summarize(by, info, firing), nil
}

// node identifies a scrape target: the job and instance labels
// Prometheus attaches to every series of it.
type node struct{ job, instance string }

func nodeOf(m model.Metric) node {
	return node{string(m[model.JobLabel]), string(m[model.InstanceLabel])}
}

// Summarize groups the nodes of the slowpath_node_info series info by
// their label by, and counts per group on how many nodes each (check,
// severity, subject) of the firing slowpath_finding series fires. Groups
// are in label order; findings worst severity first, then most nodes.
func Summarize(by string, info, firing model.Vector) *Summary {
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
	return s
}

// WriteText prints one block per group, worst findings first:
//
//	Standard_E16d_v5: 12 nodes
//	  warning   storage.stacked-encryption    /mnt/data             12/12 nodes
func WriteText(w io.Writer, s *Summary) error {
	for _, g := range s.Groups {
		name := g.Value
		if name == "" {
			name = "(no " + s.By + ")"
		}
		if _, err := fmt.Fprintf(w, "%s: %s\n", name, units.Plural(g.Nodes, "node")); err != nil {
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
