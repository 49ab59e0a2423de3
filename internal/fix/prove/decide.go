// Package prove decides, by measurement, whether a live change to this
// host helped: the workload runs with one plan entry off and on,
// interleaved through the experiment engine (internal/experiment), the
// runs are compared (internal/comparison, with the profile's primary and
// guard metrics), and the change is kept only when the comparison's
// verdict proves it (comparison.SideVerdict.Proven). Toggle is the live
// side: it applies one entry through internal/fix/apply and undoes
// exactly that.
package prove

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/stats"
)

// Decision is keep or roll back, and why.
type Decision struct {
	Keep bool `json:"keep"`
	// Outcome is the comparison's verdict on the primary metrics
	// (comparison.Outcome*).
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
}

// Decide reads the verdict of r, a comparison whose first side is the
// change off and whose second is it on, made with the profile's primary
// and guard metrics. The change is kept only when the primary metrics are
// significantly better (a fixed sequence at alpha, comparison) and no
// guard is significantly worse; otherwise the reason names what decided:
// "guard X worse", "primary X worse", "no significant difference", "too
// few runs". Decide computes no statistic: it reads the comparison's.
func Decide(r *comparison.Result) (Decision, error) {
	if r == nil || len(r.Sides) != 2 || len(r.Verdicts) != 1 {
		return Decision{}, errors.New("a decision needs a comparison of two sides: the change off, then on")
	}
	v := r.Verdicts[0]
	d := Decision{Keep: v.Proven(), Outcome: v.Outcome}
	rows := map[string]comparison.Row{}
	for _, row := range r.Rows {
		rows[row.Metric] = row
	}
	list := func(names []string) string {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = describe(rows[n])
		}
		return strings.Join(out, "; ")
	}
	var worse []string
	for _, g := range v.GuardsWorse {
		worse = append(worse, "guard "+describe(rows[g])+" worse")
	}
	switch v.Outcome {
	case comparison.OutcomeBetter:
		if len(worse) == 0 {
			d.Reason = "significantly better: " + list(v.Decided)
			return d, nil
		}
		d.Reason = strings.Join(worse, "; ") + " (primary better: " + list(v.Decided) + ")"
	case comparison.OutcomeWorse:
		d.Reason = strings.Join(append([]string{"primary " + list(v.Decided) + " worse"}, worse...), "; ")
	case comparison.OutcomeMixed:
		d.Reason = strings.Join(append([]string{"primary metrics disagree: " + list(v.Decided)}, worse...), "; ")
	case comparison.OutcomeNoDifference:
		d.Reason = strings.Join(append([]string{"no significant difference: " + list(v.Tested)}, worse...), "; ")
	case comparison.OutcomeTooFewRuns:
		n := [2]int{}
		if len(v.Tested) > 0 {
			c := rows[v.Tested[0]].Cells
			n = [2]int{c[0].N, c[1].N}
		}
		d.Reason = fmt.Sprintf("too few runs for a verdict: %d and %d runs cannot reach p ≤ %g; run at least %d per side (--runs)",
			n[0], n[1], r.Alpha, stats.MinRunsForVerdict(r.Alpha))
	default:
		d.Reason = "no primary metric measured on both sides: nothing to decide on"
	}
	return d, nil
}

// describe is "commit-1 commit_p99 -31.2% (p=0.029)", with the p the
// verdict used (adjusted for the row's role).
func describe(row comparison.Row) string {
	if len(row.Cells) < 2 {
		return row.Metric
	}
	c := row.Cells[1]
	d := ""
	if c.DeltaPct != nil && !math.IsNaN(*c.DeltaPct) {
		d = fmt.Sprintf(" %+.1f%%", *c.DeltaPct)
	}
	p := ""
	switch {
	case c.AdjustedP != nil:
		p = fmt.Sprintf(" (p=%.2g)", *c.AdjustedP)
	case c.Comparison != nil:
		p = fmt.Sprintf(" (p=%.2g)", c.Comparison.P)
	}
	return row.Metric + d + p
}

// DefaultRuns is the runs per side --prove makes when not told: the
// fewest for which the U test can reach alpha at all (4 at 0.05: two
// completely separated samples of 4 give p = 0.029; 3 give 0.1), and
// never fewer than 4.
func DefaultRuns(alpha float64) int {
	return max(4, stats.MinRunsForVerdict(alpha))
}
