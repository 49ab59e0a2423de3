package comparison

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/stats"
)

// Units a Measure may carry.
const (
	UnitOpsPerSec   = "ops/s" // IOPS, ingest ops
	UnitBytesPerSec = "B/s"
	UnitSeconds     = "s"     // latencies and durations
	UnitCount       = "count" // e.g. slow loads
	UnitCPU         = "cpu"   // CPUs busy: 1 is one whole CPU
	UnitBytes       = "bytes"
	UnitPercent     = "%"
)

// sig3 prints v with three significant digits, no exponent.
func sig3(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// FormatValue prints v in unit the way the tables show it.
func FormatValue(v float64, unit string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "?"
	}
	a := math.Abs(v)
	switch unit {
	case UnitOpsPerSec:
		switch {
		case a >= 1e6:
			return sig3(v/1e6) + "M"
		case a >= 1e3:
			return sig3(v/1e3) + "k"
		default:
			return sig3(v)
		}
	case UnitBytesPerSec:
		for _, u := range []struct {
			div  float64
			name string
		}{{1 << 30, "GiB/s"}, {1 << 20, "MiB/s"}, {1 << 10, "KiB/s"}} {
			if a >= u.div {
				return sig3(v/u.div) + " " + u.name
			}
		}
		return sig3(v) + " B/s"
	case UnitSeconds:
		switch {
		case a >= 1:
			return sig3(v) + " s"
		case a >= 1e-3:
			return sig3(v*1e3) + " ms"
		case a >= 1e-6 || a == 0:
			return sig3(v*1e6) + " µs"
		default:
			return sig3(v*1e9) + " ns"
		}
	case UnitCount:
		if v == math.Trunc(v) {
			return strconv.FormatFloat(v, 'f', 0, 64)
		}
		return sig3(v)
	case UnitCPU:
		return sig3(v*100) + "% CPU"
	case UnitPercent:
		return sig3(v) + "%"
	case UnitBytes:
		for _, u := range []struct {
			div  float64
			name string
		}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
			if a >= u.div {
				return sig3(v/u.div) + " " + u.name
			}
		}
		return sig3(v) + " B"
	default:
		if unit == "" {
			return sig3(v)
		}
		return sig3(v) + " " + unit
	}
}

// FormatCell prints a cell's median and the half-width of its interval
// relative to the median, as benchstat's "± 3%".
func FormatCell(c Cell, unit string) string {
	if c.N == 0 {
		return "-"
	}
	s := FormatValue(c.Median, unit)
	if c.Lo != nil && c.Hi != nil && c.Median != 0 {
		rel := math.Max(*c.Hi/c.Median-1, 1-*c.Lo/c.Median) * 100
		s += fmt.Sprintf(" ±%.0f%%", math.Abs(rel))
	}
	return s
}

// FormatDelta prints a cell's change against the first side with its
// verdict after the row's adjustment: "+20.0% (p=0.008)", "~ (p=0.310)",
// "too few runs (2+2)", or "-" when either side lacks the metric. When the
// adjustment changed p, both are shown: "~ (p=0.008, Holm p=0.190)".
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
		return fmt.Sprintf("too few runs (%d+%d)", cmp.N1, cmp.N2)
	case stats.NoDifference:
		return fmt.Sprintf("~ (%s)", p)
	default:
		return "-"
	}
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
	for _, v := range r.Verdicts {
		if v.Outcome != OutcomeNoPrimary {
			lines = append(lines, "  "+VerdictLine(v))
		}
	}
	if len(r.Guards) > 0 {
		lines = append(lines, fmt.Sprintf("Guards %s: each at alpha %g uncorrected, so a harm is not corrected away.", strings.Join(r.Guards, ", "), r.Alpha))
	}
	var fam []string
	for _, v := range r.Verdicts {
		fam = append(fam, fmt.Sprintf("%d for %s", v.Secondary, v.Side))
	}
	lines = append(lines, fmt.Sprintf("Other rows are secondary: Holm-corrected over the rows each side could test (%s); \"adjusted p\" is the corrected one, the verdict is on it. \"~\": no significant difference; a verdict needs %d runs per side (%s).",
		strings.Join(fam, ", "), r.MinRuns, runCounts(r)))
	interval := fmt.Sprintf("Cells: median across runs; ±: its %g%% confidence interval, which needs %d runs per side", r.Confidence*100, r.MinRunsForInterval)
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
