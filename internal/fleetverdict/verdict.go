// Package fleetverdict reads a node setting's canary rollout from
// Prometheus and gives each node group's verdict: which nodes run the
// change (slowpath_fix_applied{id}), since when, and each node's mean of
// every series over a window before the change and one after it, decided
// by internal/canary (difference in differences per node, U test of the
// canaries against the group's other nodes). What `slowpath fleet verdict`
// prints (rendered by internal/report/verdictreport); the label changes
// that promote or roll back are actions.go's.
package fleetverdict

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/slowpath/slowpath/internal/canary"
	"github.com/slowpath/slowpath/internal/fleet"
	"github.com/slowpath/slowpath/internal/stats"
)

// Options say which change to judge and how.
type Options struct {
	Change string // the check id of slowpath_fix_applied
	// By groups the nodes (a label of their series: instance_type, a node
	// pool); NodeLabel names a node in every series, the user's own too.
	By, NodeLabel string
	// ByGiven says the user named By: when no node has it, that is a
	// mistyped label (an error naming the labels there are), where the
	// default only puts every node in one group.
	ByGiven bool
	// Window is each side's length; the window after starts RateInterval
	// after the last canary changed, so no rate in it reaches back before
	// the change.
	Window, RateInterval time.Duration
	Alpha                float64
	// Series are tested in order; the first primary decides promote.
	Series []Series
	// ChangedAt, when set, is the change time of every canary instead of
	// the times slowpath_fix_applied carries.
	ChangedAt time.Time
	Now       time.Time
}

// Report is the JSON form of `slowpath fleet verdict` (docs/json.md).
type Report struct {
	Change       string    `json:"change"`
	By           string    `json:"by"`
	NodeLabel    string    `json:"node_label"`
	Window       string    `json:"window"`
	RateInterval string    `json:"rate_interval"`
	Alpha        float64   `json:"alpha"`
	EvaluatedAt  time.Time `json:"evaluated_at"`
	Series       []Series  `json:"series"`
	Groups       []Group   `json:"groups"`
	// Unchanged are the groups where no node runs the change.
	Unchanged []string `json:"groups_without_canaries"`
}

// Group is one group's verdict.
type Group struct {
	Value    string   `json:"value"`
	Nodes    int      `json:"nodes"`
	Canaries []string `json:"canaries"`
	// Others are the group's nodes that do not run the change: the
	// controls, and the nodes a promote labels.
	Others []string `json:"others"`
	// FirstChange and LastChange bound the canaries' change times: the
	// earliest setting of any canary, the latest of any.
	FirstChange time.Time `json:"first_change"`
	LastChange  time.Time `json:"last_change"`
	Before      Span      `json:"before"`
	After       Span      `json:"after"`
	Outcome     string    `json:"outcome"` // promote, hold, roll back
	Reason      string    `json:"reason"`
	// NeedCanaries is set on a hold for too few nodes (see canary.Verdict).
	NeedCanaries int      `json:"need_canaries,omitempty"`
	Metrics      []Metric `json:"metrics"`
	Actions      []Action `json:"actions"`
}

// GroupName names a group in output: its value, or for nodes without the
// label "(no LABEL)". The renderers (internal/report/verdictreport) and
// fleet verdict's --fail-on message name groups with it.
func GroupName(by, v string) string {
	if v == "" {
		return "(no " + by + ")"
	}
	return v
}

// Span is a window [From, To].
type Span struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// Metric is one series' test in a group, with every node's means.
type Metric struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	Better   string `json:"better"`
	Canaries int    `json:"canaries"`
	Controls int    `json:"controls"`
	// CanaryChange is the canaries' median change, each node's after
	// against its own before as a share of it ((after - before) / before:
	// -0.9 is a fall of 90%); ControlChange the same of the other nodes;
	// Effect their difference, the difference in differences. Null when
	// not a finite number (a node from nothing to something is +Inf).
	CanaryChange  *float64 `json:"canary_change"`
	ControlChange *float64 `json:"control_change"`
	Effect        *float64 `json:"effect"`
	P             float64  `json:"p"`
	// AdjustedP is null for a primary that the fixed sequence did not reach.
	AdjustedP *float64 `json:"adjusted_p"`
	// Test is significant (after the fixed sequence for a primary: Change
	// is then set), no significant difference, too few runs, no data, or
	// NotTested.
	Test   string `json:"test"`
	Change string `json:"change"` // better, worse or ""
	Nodes  []Node `json:"nodes"`
}

// FormatVersion is the format_version of Report's JSON (docs/json.md).
// 2: Test is the one answer (NotTested, and no significant difference
// after the fixed sequence), where 1, printed without format_version, gave
// the raw test's verdict.
const FormatVersion = 2

// NotTested is a primary's Test when an earlier primary stopped the fixed
// sequence (it was not significant, or could not be tested): its own p
// tests nothing, and AdjustedP is null.
const NotTested = "not tested"

// Node is one node's means; null where its series had no value.
type Node struct {
	Name   string   `json:"name"`
	Canary bool     `json:"canary"`
	Before *float64 `json:"before"`
	After  *float64 `json:"after"`
}

var checkID = regexp.MustCompile(`^[a-z0-9]+(\.[a-z0-9-]+)+$`)

// Validate checks the options before any query.
func (o Options) Validate() error {
	// The id goes into a PromQL string: a check id's characters only.
	if !checkID.MatchString(o.Change) {
		return fmt.Errorf("--change %q: not a check id (docs/checks.md)", o.Change)
	}
	if err := CheckLabelName("--by", o.By); err != nil {
		return err
	}
	if err := CheckLabelName("--node-label", o.NodeLabel); err != nil {
		return err
	}
	if o.By == o.NodeLabel {
		return fmt.Errorf("--by %s is the node label: a group of one node cannot be split into canaries and others", o.By)
	}
	if o.Window < 2*time.Second || o.RateInterval < time.Second {
		return fmt.Errorf("--window %v and --rate-interval %v: want at least 2s and 1s", o.Window, o.RateInterval)
	}
	if !(o.Alpha > 0 && o.Alpha < 1) {
		return fmt.Errorf("--alpha %v: want between 0 and 1", o.Alpha)
	}
	if !slices.ContainsFunc(o.Series, func(s Series) bool { return s.Role == canary.RolePrimary }) {
		return fmt.Errorf("no primary series for %s: name one with --metric NAME,primary=PROMQL", o.Change)
	}
	seen := map[string]bool{}
	for _, s := range o.Series {
		if seen[s.Name] {
			return fmt.Errorf("two series named %q", s.Name)
		}
		seen[s.Name] = true
	}
	return nil
}

// Query reads the rollout of o.Change from Prometheus and decides each
// group that has canaries.
func Query(ctx context.Context, a v1.API, o Options) (*Report, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	r := &Report{Change: o.Change, By: o.By, NodeLabel: o.NodeLabel, Window: model.Duration(o.Window).String(),
		RateInterval: model.Duration(o.RateInterval).String(), Alpha: o.Alpha, EvaluatedAt: o.Now.UTC(),
		Series: o.Series, Groups: []Group{}, Unchanged: []string{}}
	info, err := fleet.Vector(ctx, a, "slowpath_node_info", o.Now)
	if err != nil {
		return nil, err
	}
	if len(info) == 0 {
		return nil, errors.New("no slowpath_node_info series in Prometheus: is it scraping `slowpath agent` (see deploy/kubernetes/)?")
	}
	nodes := fleet.GroupNodes(info, fleet.NodeOptions{By: o.By, Label: o.NodeLabel})
	if len(nodes.Unnamed) > 0 {
		return nil, fmt.Errorf("slowpath_node_info %s has no label %q: pass --node-label with the label that names a node in every series (docs/fleet.md, \"Canary verdicts\")", nodes.Unnamed[0], o.NodeLabel)
	}
	groupOf, members := nodes.Group, nodes.Members
	if o.ByGiven {
		if err := fleet.CheckBy(o.By, info); err != nil {
			return nil, err
		}
	}
	canaries, err := changeTimes(ctx, a, o, groupOf)
	if err != nil {
		return nil, err
	}
	groups := make([]string, 0, len(members))
	for g := range members {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	for _, g := range groups {
		if len(canaries[g]) == 0 {
			r.Unchanged = append(r.Unchanged, g)
			continue
		}
		grp, err := decideGroup(ctx, a, o, g, members[g], canaries[g], groupOf)
		if err != nil {
			return nil, err
		}
		r.Groups = append(r.Groups, grp)
	}
	if len(r.Groups) == 0 {
		return nil, fmt.Errorf("no node runs %s: no slowpath_fix_applied{id=%q} series among the %d nodes of slowpath_node_info (label canaries and apply it first: docs/fleet.md)", o.Change, o.Change, len(groupOf))
	}
	return r, nil
}

// changeTimes are the canaries of every group with each one's first and
// last change time: its settings of the change may have been made at
// different times (a ring per interface), and the window before must end
// before the first, the window after start after the last.
func changeTimes(ctx context.Context, a v1.API, o Options, groupOf map[string]string) (map[string]map[string]Span, error) {
	vec, err := fleet.Vector(ctx, a, fmt.Sprintf(`slowpath_fix_applied{id=%q}`, o.Change), o.Now)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]Span{} // group → node → first and last change
	for _, s := range vec {
		n := string(s.Metric[model.LabelName(o.NodeLabel)])
		g, ok := groupOf[n]
		if !ok {
			continue // no slowpath_node_info: not a node this verdict can place
		}
		at := o.ChangedAt
		if at.IsZero() {
			if s.Value <= 0 {
				return nil, fmt.Errorf("node %s runs %s but its slowpath_fix_applied has no time (a state file or marker from before slowpath recorded it): pass --changed-at", n, o.Change)
			}
			at = time.Unix(int64(s.Value), 0)
		}
		at = at.UTC()
		if out[g] == nil {
			out[g] = map[string]Span{}
		}
		sp, seen := out[g][n]
		if !seen || at.Before(sp.From) {
			sp.From = at
		}
		if !seen || at.After(sp.To) {
			sp.To = at
		}
		out[g][n] = sp
	}
	return out, nil
}

// decideGroup reads the windows of one group and decides it. A series
// without values, or whose values name no node of slowpath_node_info at
// all (it names nodes another way), is an error, not a hold everywhere;
// one without values for this group's nodes holds it (no data), and the
// other groups go on.
func decideGroup(ctx context.Context, a v1.API, o Options, value string, nodes []string, changed map[string]Span, groupOf map[string]string) (Group, error) {
	g := Group{Value: value, Nodes: len(nodes), Metrics: []Metric{}, Actions: []Action{}, Others: []string{}}
	canaries := map[string]bool{}
	for n, sp := range changed {
		g.Canaries = append(g.Canaries, n)
		canaries[n] = true
		if g.FirstChange.IsZero() || sp.From.Before(g.FirstChange) {
			g.FirstChange = sp.From
		}
		if sp.To.After(g.LastChange) {
			g.LastChange = sp.To
		}
	}
	slices.Sort(g.Canaries)
	slices.Sort(nodes)
	for _, n := range nodes {
		if _, c := changed[n]; !c {
			g.Others = append(g.Others, n)
		}
	}
	gap := o.RateInterval
	for _, s := range o.Series {
		gap = max(gap, s.Lookback)
	}
	g.Before = Span{g.FirstChange.Add(-o.Window), g.FirstChange}
	g.After = Span{g.LastChange.Add(gap), g.LastChange.Add(gap + o.Window)}
	if g.After.To.After(o.Now) {
		g.Outcome = canary.Hold
		g.Reason = fmt.Sprintf("the window after the change ends at %s, in %s: run the verdict again then", g.After.To.Format(time.RFC3339), o.until(g.After.To))
		return g, nil
	}
	var windows []Windows
	for _, s := range o.Series {
		before, err := means(ctx, a, o, s, g.Before.To)
		if err != nil {
			return g, err
		}
		after, err := means(ctx, a, o, s, g.After.To)
		if err != nil {
			return g, err
		}
		named := keys(before, after)
		if len(named) == 0 {
			// No node of the fleet has it: a query that names nothing (a
			// wrong metric or label), not a group without the service.
			return g, fmt.Errorf("series %s: no values for any node in the windows before and after %s's change (%s to %s): run its query in Prometheus (%s)",
				s.Name, GroupName(o.By, value), g.Before.From.Format(time.RFC3339), g.After.To.Format(time.RFC3339), s.Expr)
		}
		if !slices.ContainsFunc(named, func(n string) bool { _, ok := groupOf[n]; return ok }) {
			return g, fmt.Errorf("series %s: none of its series names a node of slowpath_node_info by %s (it has e.g. %s=%q): every series must name nodes the same way, see --node-label",
				s.Name, o.NodeLabel, o.NodeLabel, named[0])
		}
		windows = append(windows, Windows{Before: before, After: after})
	}
	return g, Decide(&g, nodes, canaries, o.Series, windows, o.Alpha)
}

// Windows are one series' per-node means before and after the change.
type Windows struct{ Before, After map[string]float64 }

// Decide fills in g's verdict from every series' per-node means (windows
// in the order of series): the nodes in canaries are the canaries, the
// group's other nodes the controls. It is what Query does once the means
// are read, so the A/A test runs it on committed windows.
func Decide(g *Group, nodes []string, canaries map[string]bool, series []Series, windows []Windows, alpha float64) error {
	var metrics []canary.Metric
	for i, s := range series {
		w := windows[i]
		m := canary.Metric{Name: s.Name, Role: s.Role, HigherIsBetter: s.Better == Higher, Relative: true}
		for _, n := range nodes {
			// A node without values on either side is listed too: the
			// canary package tells missing data from too few nodes by it.
			b, okb := w.Before[n]
			f, oka := w.After[n]
			nan := math.NaN()
			if !okb {
				b = nan
			}
			if !oka {
				f = nan
			}
			m.Nodes = append(m.Nodes, canary.Node{Name: n, Canary: canaries[n], Before: b, After: f})
		}
		metrics = append(metrics, m)
	}
	v, err := canary.Decide(g.Value, metrics, alpha)
	if err != nil {
		return err
	}
	g.Outcome, g.Reason, g.NeedCanaries = v.Outcome, v.Reason, v.NeedCanaries
	for i, res := range v.Metrics {
		g.Metrics = append(g.Metrics, metricOf(series[i], res, metrics[i]))
	}
	return nil
}

// until says how long until t, in whole seconds.
func (o Options) until(t time.Time) time.Duration { return t.Sub(o.Now).Round(time.Second) }

// means is every node's mean of s over the window ending at end.
func means(ctx context.Context, a v1.API, o Options, s Series, end time.Time) (map[string]float64, error) {
	expr := strings.ReplaceAll(s.Expr, "$__rate_interval", model.Duration(o.RateInterval).String())
	q := fmt.Sprintf("avg_over_time((%s)[%s:])", expr, model.Duration(o.Window))
	vec, err := fleet.Vector(ctx, a, q, end)
	if err != nil {
		return nil, fmt.Errorf("series %s: %w", s.Name, err)
	}
	out := map[string]float64{}
	for _, smp := range vec {
		n, ok := smp.Metric[model.LabelName(o.NodeLabel)]
		if !ok {
			return nil, fmt.Errorf("series %s: %s has no label %q: aggregate per node, e.g. sum by (%s) (...)", s.Name, smp.Metric, o.NodeLabel, o.NodeLabel)
		}
		if _, dup := out[string(n)]; dup {
			return nil, fmt.Errorf("series %s: node %s has more than one series: aggregate per node, e.g. sum by (%s) (...)", s.Name, n, o.NodeLabel)
		}
		out[string(n)] = float64(smp.Value)
	}
	return out, nil
}

func metricOf(s Series, r canary.MetricResult, m canary.Metric) Metric {
	out := Metric{Name: s.Name, Role: s.Role, Better: s.Better, Canaries: r.Canaries, Controls: r.Controls,
		CanaryChange: finite(r.CanaryChange), ControlChange: finite(r.ControlChange), Effect: finite(r.Effect), P: r.Comparison.P,
		Test: r.Comparison.Verdict.String(), Change: r.Change, Nodes: []Node{}}
	if !math.IsNaN(r.AdjustedP) {
		p := r.AdjustedP
		out.AdjustedP = &p
	}
	// test is the one answer, the one text prints: the raw test's
	// verdict read beside adjusted_p null or above alpha was a second.
	switch {
	case out.AdjustedP == nil && s.Role == canary.RolePrimary:
		out.Test = NotTested
	case out.Test == stats.Significant.String() && r.Change == "":
		out.Test = stats.NoDifference.String()
	}
	for _, n := range m.Nodes {
		if math.IsNaN(n.Before) && math.IsNaN(n.After) {
			continue // no value in either window: not a node of this series
		}
		out.Nodes = append(out.Nodes, Node{Name: n.Name, Canary: n.Canary, Before: finite(n.Before), After: finite(n.After)})
	}
	return out
}

func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// keys are the nodes of both maps, sorted.
func keys(ms ...map[string]float64) []string {
	var out []string
	for _, m := range ms {
		for k := range m {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
