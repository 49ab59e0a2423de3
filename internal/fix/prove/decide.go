// Package prove decides, by measurement, whether a live change to this
// host helped: the workload runs with one plan entry off and on,
// interleaved (internal/experiment), the runs are compared
// (internal/comparison), and Decide keeps the change only when the
// primary metric is significantly better and no guard metric is
// significantly worse. Toggle is the live side: it applies one entry
// through internal/fix/apply and undoes exactly that.
package prove

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/stats"
)

// Criteria name the rows of a comparison a decision reads.
type Criteria struct {
	// Primary are the metrics the change is judged on (a profile's
	// primary metrics). Tested at alpha with Holm's correction across
	// them: with two primaries, two chances to look better.
	Primary []string
	// Guards must not get significantly worse (CPU per I/O, p99.9).
	// Tested at alpha without correction: a correction would make a
	// slowdown easier to miss, and missing one is the costly error here.
	Guards []string
}

// MetricVerdict is what the runs say about one metric, on versus off.
type MetricVerdict struct {
	Metric string  `json:"metric"`
	Role   string  `json:"role"` // "primary" or "guard"
	Off    float64 `json:"off_median"`
	On     float64 `json:"on_median"`
	// DeltaPct is (on/off − 1)·100; absent when off is 0.
	DeltaPct *float64 `json:"delta_pct,omitempty"`
	// Runs are the runs per side, off and on.
	Runs   [2]int            `json:"runs"`
	Better comparison.Better `json:"better"`
	P      float64           `json:"p"`
	// Level is the level P was held to (alpha, or Holm's share of it).
	Level float64 `json:"level"`
	// Change is "better" or "worse" when P ≤ Level and the medians
	// differ in the metric's direction; "" otherwise.
	Change string `json:"change,omitempty"`
	// TooFewRuns: these run counts cannot reach Level whatever the data.
	TooFewRuns bool `json:"too_few_runs,omitempty"`
}

// Decision is keep or roll back, and why.
type Decision struct {
	Keep    bool            `json:"keep"`
	Reason  string          `json:"reason"`
	Metrics []MetricVerdict `json:"metrics"`
}

// ErrNoMetric marks a criterion the comparison has no row for.
var ErrNoMetric = errors.New("the runs did not measure")

// Decide judges r, a comparison whose first side is the change off and
// whose second is it on. Keep only when at least one primary metric is
// significantly better, none is significantly worse, and no guard is
// significantly worse; otherwise roll back and say why: "guard X worse",
// "primary X worse", "too few runs", or "no significant difference".
func Decide(r *comparison.Result, c Criteria) (Decision, error) {
	if r == nil || len(r.Sides) != 2 {
		return Decision{}, errors.New("a decision needs a comparison of two sides: the change off, then on")
	}
	if len(c.Primary) == 0 {
		return Decision{}, errors.New("no primary metric to decide on")
	}
	alpha := r.Alpha
	if alpha == 0 {
		alpha = stats.DefaultAlpha
	}
	var prim, guards []MetricVerdict
	for _, m := range c.Primary {
		v, err := verdictOf(r, m, "primary")
		if err != nil {
			return Decision{}, err
		}
		prim = append(prim, v)
	}
	holm(prim, alpha)
	for _, m := range c.Guards {
		v, err := verdictOf(r, m, "guard")
		if err != nil {
			return Decision{}, err
		}
		v.Level = alpha
		judge(&v)
		guards = append(guards, v)
	}
	for i := range prim {
		judge(&prim[i])
	}
	d := Decision{Metrics: append(slices.Clone(prim), guards...)}
	var worse, better []string
	var few []MetricVerdict
	for _, v := range guards {
		if v.Change == "worse" {
			worse = append(worse, "guard "+describe(v)+" worse")
		}
	}
	for _, v := range prim {
		switch {
		case v.Change == "worse":
			worse = append(worse, "primary "+describe(v)+" worse")
		case v.Change == "better":
			better = append(better, describe(v))
		case v.TooFewRuns:
			few = append(few, v)
		}
	}
	switch {
	case len(worse) > 0:
		d.Reason = strings.Join(worse, "; ")
	case len(better) > 0:
		d.Keep, d.Reason = true, "significantly better: "+strings.Join(better, "; ")
	case len(few) > 0:
		f := few[0]
		d.Reason = fmt.Sprintf("too few runs for a verdict on %s: %d and %d runs cannot reach p ≤ %.3g; run at least %d per side (--runs)",
			f.Metric, f.Runs[0], f.Runs[1], f.Level, MinRuns(alpha, len(c.Primary)))
	default:
		var ps []string
		for _, v := range prim {
			ps = append(ps, describe(v))
		}
		d.Reason = "no significant difference: " + strings.Join(ps, "; ")
	}
	return d, nil
}

func verdictOf(r *comparison.Result, metric, role string) (MetricVerdict, error) {
	i := slices.IndexFunc(r.Rows, func(row comparison.Row) bool { return row.Metric == metric })
	if i < 0 {
		return MetricVerdict{}, fmt.Errorf("%s metric %s: %w it (the workload has no such figure)", role, metric, ErrNoMetric)
	}
	row := r.Rows[i]
	off, on := row.Cells[0], row.Cells[1]
	if off.N == 0 || on.N == 0 || on.Comparison == nil {
		return MetricVerdict{}, fmt.Errorf("%s metric %s: %w it on both sides (%d and %d runs)", role, metric, ErrNoMetric, off.N, on.N)
	}
	return MetricVerdict{Metric: metric, Role: role, Off: off.Median, On: on.Median, DeltaPct: on.DeltaPct,
		Runs: [2]int{off.N, on.N}, Better: row.Better, P: on.Comparison.P}, nil
}

// judge sets Change and TooFewRuns of v from its P and Level.
func judge(v *MetricVerdict) {
	if stats.MinP(v.Runs[0], v.Runs[1]) > v.Level {
		v.TooFewRuns = true
		return
	}
	if v.P > v.Level || v.On == v.Off {
		return
	}
	switch v.Better {
	case comparison.HigherIsBetter:
		v.Change = map[bool]string{true: "better", false: "worse"}[v.On > v.Off]
	case comparison.LowerIsBetter:
		v.Change = map[bool]string{true: "better", false: "worse"}[v.On < v.Off]
	}
}

// holm sets the Level of each primary verdict by Holm's step-down
// procedure: sorted by p, the k-th smallest is held to alpha/(m−k+1)
// until one fails; those after it are held to the level that failed, so
// they fail too.
func holm(vs []MetricVerdict, alpha float64) {
	idx := make([]int, len(vs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmpFloat(vs[a].P, vs[b].P) })
	m := len(vs)
	stopped := false
	level := alpha / float64(m)
	for k, i := range idx {
		if !stopped {
			level = alpha / float64(m-k)
			if vs[i].P > level {
				stopped = true
			}
		}
		vs[i].Level = level
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// describe is "commit_p99 -31.2% (p=0.029)".
func describe(v MetricVerdict) string {
	d := ""
	if v.DeltaPct != nil && !math.IsNaN(*v.DeltaPct) {
		d = fmt.Sprintf(" %+.1f%%", *v.DeltaPct)
	}
	return fmt.Sprintf("%s%s (p=%.2g)", v.Metric, d, v.P)
}

// MinRuns is the smallest number of runs per side for which the exact
// Mann-Whitney U test of primaries primary metrics (Holm: the first is
// held to alpha/primaries) can reach significance at all: 4 at alpha
// 0.05 with one primary (MinP 0.029), 5 with two (0.0079 ≤ 0.025).
func MinRuns(alpha float64, primaries int) int {
	if primaries < 1 {
		primaries = 1
	}
	for n := 1; n < 1000; n++ {
		if stats.MinP(n, n) <= alpha/float64(primaries) {
			return n
		}
	}
	return 1000
}
