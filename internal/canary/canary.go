// Package canary decides a node setting's canary verdict for one group of
// a fleet: promote, hold or roll back. It is pure: each node's mean of a
// metric over a window before and after the change in, a verdict out.
//
// The design (issue 31): a node's change is its own after against its own
// before (the difference, or with Metric.Relative its share of the
// before), so a node's level (its load, its hardware) cancels; the canaries'
// changes are then tested against the other nodes' changes of the same
// group over the same windows (difference in differences per node), so a
// fleet-wide drift (a traffic peak, a deploy) cancels too. The test is
// compare's: Mann-Whitney U over nodes instead of runs (internal/stats),
// primary metrics in their declared order (fixed sequence), guards each at
// alpha.
package canary

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/stats"
)

// Roles of a metric in the verdict, as compare's.
const (
	RolePrimary = "primary" // decides promote; any significantly worse rolls back
	RoleGuard   = "guard"   // significantly worse rolls back
)

// Outcomes of a group's verdict.
const (
	Promote  = "promote"
	Hold     = "hold"
	Rollback = "roll back"
)

// Node is one node's mean of a metric over the window before the change
// and the window after it.
type Node struct {
	Name          string
	Canary        bool
	Before, After float64
}

// Metric is one series over a group's nodes.
type Metric struct {
	Name           string
	Role           string
	HigherIsBetter bool
	// Relative takes a node's change as a share of its own before,
	// (after - before) / |before|, instead of the difference: where nodes'
	// levels differ by multiples (load, size) a fleet-wide drift moves each
	// by its own level, and the absolute changes of canaries and others
	// overlap although every canary fell by the same share. A node with
	// nothing before changes by 0 if nothing after either, else by +Inf or
	// -Inf: the U test ranks it beyond every finite change.
	Relative bool
	// Nodes are the group's nodes; one without values (NaN before and
	// after) is listed too, so that a set of nodes without data is told
	// from a group without such nodes (too few for the test).
	Nodes []Node
}

// MetricResult is one metric's test.
type MetricResult struct {
	Metric             string
	Role               string
	Canaries, Controls int
	// CanaryChange and ControlChange are the median per-node change (after
	// minus before) of each set, NaN for a set without values; Effect is
	// their difference, the difference in differences (NaN unless both).
	CanaryChange, ControlChange, Effect float64
	Comparison                          stats.Comparison
	// AdjustedP: fixed sequence over the primaries, P itself for a guard;
	// NaN for a primary after one that stopped the sequence (not
	// significant, or not testable): it was not tested.
	AdjustedP float64
	// NoData says which nodes had no values although the group has them
	// ("any node of the group", "the canaries", "the other nodes"); "" when
	// both sets have values, or when a set is empty because the group has
	// no such nodes (too few nodes, not missing data).
	NoData string
	// Change is "better", "worse" or "" (not significant, or not tested).
	Change string
}

// Verdict is one group's.
type Verdict struct {
	Group   string
	Outcome string
	Reason  string
	Metrics []MetricResult
	// NeedCanaries, on a hold for too few nodes, is how many canaries the
	// first metric that could not be tested needs, with its other nodes as
	// they are, before the U test can reach alpha (4 against 4 at 0.05, 8
	// against 2); -1 when more than 50 would.
	NeedCanaries int
}

// Decide gives the verdict of one group at level alpha. Metrics are tested
// in their order; at least one must be primary. A node without a finite
// before and after is left out of that metric.
func Decide(group string, metrics []Metric, alpha float64) (Verdict, error) {
	v := Verdict{Group: group}
	if !(alpha > 0 && alpha < 1) {
		return v, fmt.Errorf("alpha %v outside (0, 1)", alpha)
	}
	if !slices.ContainsFunc(metrics, func(m Metric) bool { return m.Role == RolePrimary }) {
		return v, errors.New("no primary metric: name at least one series that decides the verdict")
	}
	var primaryP []float64
	var primaryAt []int
	for _, m := range metrics {
		if m.Role != RolePrimary && m.Role != RoleGuard {
			return v, fmt.Errorf("metric %q: role %q, want %s or %s", m.Name, m.Role, RolePrimary, RoleGuard)
		}
		r, err := test(m, alpha)
		if err != nil {
			return v, err
		}
		if m.Role == RolePrimary {
			primaryP = append(primaryP, r.Comparison.P)
			primaryAt = append(primaryAt, len(v.Metrics))
		}
		v.Metrics = append(v.Metrics, r)
	}
	stopped := false
	for i, p := range stats.FixedSequence(primaryP) {
		r := &v.Metrics[primaryAt[i]]
		if stopped {
			// The fixed sequence looks at a primary only once every earlier
			// one was significant; its p is not a test of anything.
			continue
		}
		r.AdjustedP = p
		stopped = !testable(r.Comparison) || p > alpha
	}
	var worse, noData, tooFew []string
	for i := range v.Metrics {
		r := &v.Metrics[i]
		if testable(r.Comparison) && r.AdjustedP <= alpha {
			// The direction the test saw: U above half the pairs means the
			// canaries' changes were the larger ones.
			r.Change = direction(r.Comparison.U-float64(r.Canaries*r.Controls)/2, metrics[i].HigherIsBetter)
		}
		if r.Change == "worse" {
			worse = append(worse, r.Metric)
		}
		switch {
		case r.NoData != "":
			noData = append(noData, fmt.Sprintf("%s has no values on %s", r.Metric, r.NoData))
		case !testable(r.Comparison):
			need := needCanaries(r.Controls, alpha)
			if len(tooFew) == 0 {
				v.NeedCanaries = need
			}
			tooFew = append(tooFew, fmt.Sprintf("%s: %d canaries and %d others, which needs %s", r.Metric, r.Canaries, r.Controls, needText(need)))
		}
	}
	first := v.Metrics[primaryAt[0]]
	switch {
	case len(worse) > 0:
		v.Outcome, v.Reason = Rollback, "significantly worse on the canaries: "+strings.Join(worse, ", ")
	case len(noData) > 0 || len(tooFew) > 0:
		var why []string
		if len(noData) > 0 {
			why = append(why, "no data: "+strings.Join(noData, ", "))
		}
		if len(tooFew) > 0 {
			why = append(why, fmt.Sprintf("too few nodes for a verdict at alpha %g: %s", alpha, strings.Join(tooFew, "; ")))
		}
		v.Outcome, v.Reason = Hold, strings.Join(why, "; ")
	case first.Change == "better":
		v.Outcome, v.Reason = Promote, fmt.Sprintf("%s significantly better on the canaries, no guard worse", first.Metric)
	default:
		v.Outcome, v.Reason = Hold, fmt.Sprintf("no significant change of %s yet (p %.3g): a longer window or more canaries", first.Metric, first.AdjustedP)
	}
	return v, nil
}

// test runs one metric's U test of the canaries' changes against the
// others'.
func test(m Metric, alpha float64) (MetricResult, error) {
	r := MetricResult{Metric: m.Name, Role: m.Role, AdjustedP: math.NaN()}
	var canary, control []float64
	var canaryNodes, controlNodes int
	seen := map[string]bool{}
	for _, n := range m.Nodes {
		if seen[n.Name] {
			return r, fmt.Errorf("metric %q: node %q twice", m.Name, n.Name)
		}
		seen[n.Name] = true
		if n.Canary {
			canaryNodes++
		} else {
			controlNodes++
		}
		d := change(n, m.Relative)
		if math.IsNaN(d) {
			continue
		}
		if n.Canary {
			canary = append(canary, d)
		} else {
			control = append(control, d)
		}
	}
	r.Canaries, r.Controls = len(canary), len(control)
	r.Comparison = stats.Compare(canary, control, alpha)
	// A set without values has no median: NaN, not a change of 0.
	r.CanaryChange, r.ControlChange, r.Effect = math.NaN(), math.NaN(), math.NaN()
	if len(canary) > 0 {
		r.CanaryChange = stats.Median(canary)
	}
	if len(control) > 0 {
		r.ControlChange = stats.Median(control)
	}
	if len(canary) > 0 && len(control) > 0 {
		r.Effect = r.CanaryChange - r.ControlChange
	}
	switch {
	case len(canary) == 0 && len(control) == 0:
		r.NoData = "any node of the group"
	case len(canary) == 0 && canaryNodes > 0:
		r.NoData = "the canaries"
	case len(control) == 0 && controlNodes > 0:
		r.NoData = "the other nodes"
	}
	if m.Role == RoleGuard {
		r.AdjustedP = r.Comparison.P
	}
	return r, nil
}

// testable says whether a comparison could be significant: both sets
// have values, enough of them to reach alpha.
func testable(c stats.Comparison) bool {
	return c.Verdict != stats.TooFewRuns && c.Verdict != stats.NoData
}

// change is a node's after against its before; NaN when either is not a
// finite number.
func change(n Node, relative bool) float64 {
	if math.IsNaN(n.Before) || math.IsInf(n.Before, 0) || math.IsNaN(n.After) || math.IsInf(n.After, 0) {
		return math.NaN()
	}
	d := n.After - n.Before
	if !relative {
		return d
	}
	if n.Before == 0 {
		if d == 0 {
			return 0
		}
		return math.Inf(int(math.Copysign(1, d)))
	}
	return d / math.Abs(n.Before)
}

func direction(larger float64, higherIsBetter bool) string {
	switch {
	case larger == 0:
		return ""
	case (larger > 0) == higherIsBetter:
		return "better"
	default:
		return "worse"
	}
}

// needCanaries is the fewest canaries that, against controls other nodes,
// the U test could find significant at alpha; -1 when more than 50.
func needCanaries(controls int, alpha float64) int {
	for k := 1; k <= 50; k++ {
		if stats.MinP(k, controls) <= alpha {
			return k
		}
	}
	return -1
}

func needText(n int) string {
	if n < 0 {
		return "more than 50 canaries: label more of the group's nodes as others first"
	}
	return fmt.Sprintf("at least %d canaries", n)
}
