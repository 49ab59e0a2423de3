package comparison

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/stats"
	"github.com/slowpath/slowpath/internal/units"
)

// FormatCell prints a cell's median and the half-width of its interval
// relative to the median, as benchstat's "± 3%".
func FormatCell(c Cell, unit string) string {
	if c.N == 0 {
		return "-"
	}
	s := units.Format(c.Median, unit)
	if c.Lo != nil && c.Hi != nil && c.Median != 0 {
		rel := math.Max(*c.Hi/c.Median-1, 1-*c.Lo/c.Median) * 100
		s += fmt.Sprintf(" ±%.0f%%", math.Abs(rel))
	}
	return s
}

// FormatDelta prints a cell's change against the first side with its
// verdict after the row's adjustment: "+20.0% (p=0.008)", "~ (p=0.310)"
// (the test could have found a difference and did not), "cannot decide:
// needs 5 runs per side (adjusted p=0.086)" (no outcome of these runs could be
// significant after the row's correction), or "-" when either side lacks
// the metric. When the adjustment changed p, both are shown.
func FormatDelta(c Cell) string {
	cmp := c.Comparison
	if cmp == nil {
		return "-"
	}
	p := formatP(cmp.P)
	if c.AdjustedP != nil && formatP(*c.AdjustedP) != p {
		p += ", adjusted " + formatP(*c.AdjustedP)
	}
	verdict := cmp.Verdict
	if c.Verdict != nil {
		verdict = *c.Verdict
	}
	switch verdict {
	case stats.Significant:
		d := "?"
		if c.DeltaPct != nil {
			d = fmt.Sprintf("%+.1f%%", *c.DeltaPct)
		}
		return fmt.Sprintf("%s (%s)", d, p)
	case stats.TooFewRuns:
		// The runs each side has are in the column heads; the p shown is
		// the one the verdict used, after the row's adjustment.
		s := "cannot decide: " + RunsNeeded(c.RunsToDecide)
		if c.AdjustedP != nil {
			s += " (adjusted " + formatP(*c.AdjustedP) + ")"
		}
		return s
	case stats.NoDifference:
		return fmt.Sprintf("~ (%s)", p)
	default:
		return "-"
	}
}

// RunsNeeded says how many runs per side would decide a cell
// (Cell.RunsToDecide).
func RunsNeeded(n int) string {
	switch {
	case n > 0:
		return fmt.Sprintf("needs %d runs per side", n)
	case n < 0:
		return "needs more than 50 runs per side"
	}
	return "needs more runs"
}

func formatP(p float64) string {
	if p < 0.001 {
		return "p<0.001"
	}
	return fmt.Sprintf("p=%.3f", p)
}

// RowLabel is a row's metric name with its role when it has one declared:
// "commit-1 commit_p99 (primary)", "cpu_per_io (guard)".
func RowLabel(row Row) string {
	switch row.Role {
	case RolePrimary, RoleGuard:
		return row.Metric + " (" + row.Role + ")"
	}
	return row.Metric
}

// VerdictLine says a side's verdict on the primary metrics in one line.
func VerdictLine(v SideVerdict) string {
	s := fmt.Sprintf("%s vs %s: %s", v.Side, v.Versus, v.Outcome)
	if len(v.Decided) > 0 {
		s += " (significant: " + strings.Join(v.Decided, ", ") + ")"
	}
	if len(v.GuardsWorse) > 0 {
		s += "; guard worse: " + strings.Join(v.GuardsWorse, ", ")
	}
	return s
}

// Verdicts are the sides' verdicts on the primary metrics, one line each,
// for above the table; none when no primary metric was declared.
func Verdicts(r *Result) []string {
	var lines []string
	for _, v := range r.Verdicts {
		if v.Outcome != OutcomeNoPrimary {
			lines = append(lines, VerdictLine(v))
		}
	}
	return lines
}

// Legend says what the table's statistics are, from the result itself (the
// alpha, confidence and run counts used), so a reader knows what "~",
// "adjusted" and "too few runs" mean without the docs.
func Legend(r *Result) []string {
	var lines []string
	if len(r.Primary) > 0 {
		lines = append(lines, fmt.Sprintf("Verdict on the primary metrics %s: Mann-Whitney U over runs, each at alpha %g once the one before it was significant (a fixed sequence).",
			strings.Join(r.Primary, ", then "), r.Alpha))
	} else {
		lines = append(lines, "No primary metric declared for these results: no overall verdict, every row is secondary.")
	}
	if len(r.Guards) > 0 {
		lines = append(lines, fmt.Sprintf("Guards %s: each at alpha %g uncorrected, so a harm is not corrected away.", strings.Join(r.Guards, ", "), r.Alpha))
	}
	var fam []string
	for _, v := range r.Verdicts {
		fam = append(fam, fmt.Sprintf("%d for %s", v.Secondary, v.Side))
	}
	verdict := fmt.Sprintf("%d runs per side", r.MinRuns)
	if r.MinRuns == 0 {
		verdict = "more than 50 runs per side at this alpha"
	}
	lines = append(lines, fmt.Sprintf("Other rows are secondary: Holm-corrected over the rows each side could test (%s); \"adjusted p\" is the corrected one, the verdict is on it. \"~\": the test could have found a difference and did not; \"cannot decide\": no outcome of these runs could be significant for the row after its correction, and the cell says how many runs per side could; with equal sides an uncorrected verdict needs %s (%s).",
		strings.Join(fam, ", "), verdict, runCounts(r)))
	need := fmt.Sprintf("%d runs per side", r.MinRunsForInterval)
	if r.MinRunsForInterval == 0 {
		need = "more than 100 runs per side"
	}
	interval := fmt.Sprintf("Cells: median across runs; ±: its %g%% confidence interval, which needs %s", r.Confidence*100, need)
	var with []string
	for _, s := range r.Sides {
		if s.Runs >= r.MinRunsForInterval && r.MinRunsForInterval > 0 {
			with = append(with, s.Name)
		}
	}
	switch {
	case len(with) == len(r.Sides):
		interval += " (every side has them)."
	case len(with) == 0:
		interval += " (no side has them)."
	default:
		interval += " (" + strings.Join(with, ", ") + " only)."
	}
	return append(lines, interval)
}

// runCounts lists the sides' run counts: "5, 5 and 1 runs".
func runCounts(r *Result) string {
	var n []string
	for _, s := range r.Sides {
		n = append(n, strconv.Itoa(s.Runs))
	}
	if len(n) < 2 {
		return strings.Join(n, "") + " runs here"
	}
	return "here " + strings.Join(n[:len(n)-1], ", ") + " and " + n[len(n)-1] + " runs"
}
