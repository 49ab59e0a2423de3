// Package comparison compares the runs of two or more sides (saved bench
// results, or runs made interleaved by `slowpath compare`): per metric the
// median across runs, its change against the first side and whether that
// change is significant (Mann-Whitney U, internal/stats), the verdict on the
// declared primary metrics (a fixed sequence at alpha), the other rows
// corrected for multiple comparisons (Holm), and the environment facts that
// differ between sides. It is pure: sides in, result
// out; internal/report/comparereport and htmlreport render it.
package comparison

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/stats"
)

// Better says which direction of a metric is an improvement.
type Better string

const (
	HigherIsBetter Better = "higher"
	LowerIsBetter  Better = "lower"
)

// Measure is one metric of one run.
type Measure struct {
	Unit   string  // see units.Format: ops/s, B/s, s, count, cpu
	Better Better  // direction of improvement
	Value  float64 // the run's figure
}

// Point is one sample of a per-second timeline, or one index load.
type Point struct {
	T float64 `json:"t"` // seconds since the run started
	V float64 `json:"v"`
}

// Run is one bench run as the comparison sees it.
type Run struct {
	Label   string
	Metrics map[string]Measure
	// Order is the order the result listed its metrics in; rows follow it
	// within a rank (metricRank).
	Order    []string
	Timeline map[string][]Point // per-second series by name (e.g. "read IOPS")
	// Loads are index loads (T: when, V: seconds) for search-index's
	// slow-load scatter; SlowLoadThreshold the run's --slow-load.
	Loads             []Point
	SlowLoadThreshold float64
	// Latencies by name ("read", "write", "load") for CDFs.
	Latencies map[string]stats.Histogram
}

// Fact is one environment fact of a side (kernel, CPU, encryption layers...).
type Fact struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Side is a named set of runs of one configuration.
type Side struct {
	Name    string
	Profile string   // the bench profile its results ran (their first's)
	Sources []string // result files, for the report header
	Runs    []Run
	// Facts are the environment of the side's first run; Mixed lists the
	// fact keys whose values differ between its runs.
	Facts   []Fact
	Mixed   []string
	Storage []storagemodel.Path // the doctor model of the target's path
}

// Options control the statistics.
type Options struct {
	Alpha      float64 // significance level, default stats.DefaultAlpha
	Confidence float64 // for intervals, default 0.95
	// Primary are the row names the verdict is on, in the order they are
	// tested (internal/workload/profile MetricsOf declares them per
	// profile); Guards are rows that must not get significantly worse.
	// Every other row is secondary. Names no side measured are left out.
	Primary, Guards []string
}

// Roles of a row.
const (
	RolePrimary   = "primary"   // decides the verdict, fixed sequence at alpha
	RoleGuard     = "guard"     // tested at alpha uncorrected: a harm is not missed
	RoleSecondary = "secondary" // Holm-corrected over the side's secondary rows
)

// CorrectionHolm names the correction applied to secondary rows.
const CorrectionHolm = "holm"

// Cell is one side's figure for one metric.
type Cell struct {
	N      int       `json:"runs"`
	Values []float64 `json:"values"`
	Median float64   `json:"median"`
	// Lo and Hi bound the median across runs when a side has enough of
	// them (Result.MinRunsForInterval), else are absent. There is no
	// interval from inside one run: the I/Os of a run are not independent
	// (docs/compare.md, "Why no evidence from inside runs").
	Lo *float64 `json:"ci_lo,omitempty"`
	Hi *float64 `json:"ci_hi,omitempty"`
	CI string   `json:"ci,omitempty"` // "runs" when Lo and Hi are set
	// Versus the first side; nil on the first side itself.
	DeltaPct *float64 `json:"delta_pct,omitempty"`
	// Comparison is the U test of this side's runs against the first
	// side's; its P and Verdict are the raw, uncorrected ones.
	Comparison *stats.Comparison `json:"comparison,omitempty"`
	// AdjustedP is P adjusted for the row's role: the fixed-sequence p of
	// a primary row, Holm's of a secondary one, P itself for a guard; set
	// when Comparison could reach a verdict.
	AdjustedP *float64 `json:"p_adjusted,omitempty"`
	// Verdict is the cell's one verdict, after the adjustment: significant
	// when AdjustedP is at most alpha; the raw test's too few runs or no
	// data where no adjustment could be made. Set whenever Comparison is.
	Verdict *stats.Verdict `json:"verdict,omitempty"`
	// Change is "better", "worse" or "" (not significant after the
	// adjustment, no direction, or first side).
	Change string `json:"change,omitempty"`
	// RunsToDecide is set when no outcome of these runs could be
	// significant for the row's role (too few runs for the U test, or for
	// Holm over the side's secondary rows: a family of 3 needs p 0.017,
	// which 4+4 runs cannot give): the runs per side, equal sides, that
	// could; -1 when more than 50 would. Verdict is then "too few runs",
	// never "no significant difference".
	RunsToDecide int `json:"runs_to_decide,omitempty"`
}

// Row is one metric across sides.
type Row struct {
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	Better Better `json:"better"`
	Role   string `json:"role"`  // RolePrimary, RoleGuard or RoleSecondary
	Cells  []Cell `json:"sides"` // one per side, in side order; N=0 where missing
}

// Outcomes of a side's verdict on the primary metrics.
const (
	OutcomeBetter       = "better"                    // every significant primary better, at least one
	OutcomeWorse        = "worse"                     // every significant primary worse, at least one
	OutcomeMixed        = "mixed"                     // significant primaries disagree
	OutcomeNoDifference = "no significant difference" // the first tested primary was not significant
	OutcomeTooFewRuns   = "too few runs"              // the first tested primary could not reach alpha
	OutcomeNoPrimary    = "no primary metric"         // none declared, or no side measured one
)

// SideVerdict is the verdict on one side against the first, from its
// primary metrics, and the guards it made significantly worse.
type SideVerdict struct {
	Side    string `json:"side"`
	Versus  string `json:"versus"`
	Outcome string `json:"outcome"`
	// Decided are the primary rows that were significant, in test order;
	// Tested every primary row the sequence reached.
	Decided []string `json:"decided,omitempty"`
	Tested  []string `json:"tested,omitempty"`
	// GuardsWorse are guard rows significantly worse at alpha.
	GuardsWorse []string `json:"guards_worse,omitempty"`
	// Secondary is how many secondary rows Holm corrected over: those
	// with enough runs on both sides for a verdict.
	Secondary int `json:"secondary_tested"`
}

// Proven says whether the side is a measured improvement: its primary
// metrics significantly better and no guard significantly worse (what fix
// --prove keeps).
func (v SideVerdict) Proven() bool {
	return v.Outcome == OutcomeBetter && len(v.GuardsWorse) == 0
}

// EnvDiff is a fact whose value differs between sides.
type EnvDiff struct {
	Key    string   `json:"key"`
	Values []string `json:"values"` // one per side, "-" when unknown
}

// SideInfo names a side in the result.
type SideInfo struct {
	Name    string   `json:"name"`
	Runs    int      `json:"runs"`
	Sources []string `json:"sources,omitempty"`
	Mixed   []string `json:"mixed_environment,omitempty"`
}

// Result is the comparison. Field names are the JSON contract
// (docs/compare.md).
type Result struct {
	FormatVersion int        `json:"format_version"`
	Alpha         float64    `json:"alpha"`
	Confidence    float64    `json:"confidence"`
	Sides         []SideInfo `json:"sides"`
	Rows          []Row      `json:"rows"`
	Environment   []EnvDiff  `json:"environment_differences"`
	// MinRuns is how many runs per side the alpha needs for a verdict.
	MinRuns int `json:"min_runs_for_verdict"`
	// MinRunsForInterval is how many runs a side needs for a confidence
	// interval of its median at Confidence.
	MinRunsForInterval int `json:"min_runs_for_interval"`
	// Primary and Guards are the declared rows that some side measured,
	// primary in test order; Correction the one applied to secondary rows.
	Primary    []string `json:"primary_metrics"`
	Guards     []string `json:"guard_metrics"`
	Correction string   `json:"correction"`
	// Verdicts has one entry per side after the first.
	Verdicts []SideVerdict `json:"verdicts"`
	// Annotations are set by the front end, after Compare (annotations.go).
	Annotations
}

// JSONVersion is the version of Result's JSON shape. 2: rows carry a role,
// cells an adjusted p and verdict, the result per-side verdicts on the
// primary metrics; the evidence inside runs (within_run, ci "bootstrap")
// is gone. 3: a cell has one verdict, its own; comparison has no raw
// verdict beside it (a significant raw test beside "too few runs" after
// Holm read as two answers).
const JSONVersion = 3

// metricRank orders rows as the incident tables did: throughput, bandwidth,
// latency percentiles (low to high), index loads and slow loads, CPU, then
// the rest. Names are matched loosely so both bench's figure names
// (read_iops, load_p99) and display names (read IOPS) sort alike.
func metricRank(name string) int {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "cpu") && (strings.Contains(n, "crypt") || strings.Contains(n, "kworker") || strings.Contains(n, "softirq")):
		return 9
	case strings.Contains(n, "cpu"):
		return 8
	case strings.Contains(n, "slow"):
		return 7
	case strings.Contains(n, "iops") || strings.Contains(n, "ops/s") || strings.Contains(n, "ops_per_sec"):
		return 0
	case strings.Contains(n, "bandwidth") || strings.Contains(n, "bytes_per_sec") || strings.HasSuffix(n, "_bw") || strings.Contains(n, "throughput"):
		return 1
	case strings.Contains(n, "p50") || strings.Contains(n, "median"):
		return 2
	case strings.Contains(n, "p99.9") || strings.Contains(n, "p999") || strings.Contains(n, "p99_9"):
		return 4
	case strings.Contains(n, "p99"):
		return 3
	case strings.Contains(n, "max"):
		return 5
	case strings.Contains(n, "load") || strings.Contains(n, "commit") || strings.Contains(n, "checkpoint"):
		return 6
	default:
		return 10
	}
}

// Compare builds the comparison of sides; the first side is the baseline.
func Compare(sides []Side, o Options) (*Result, error) {
	if len(sides) < 2 {
		return nil, errors.New("compare needs at least two sides")
	}
	if o.Alpha == 0 {
		o.Alpha = stats.DefaultAlpha
	}
	if !(o.Alpha > 0 && o.Alpha < 1) {
		return nil, fmt.Errorf("alpha %v outside (0, 1)", o.Alpha)
	}
	if o.Confidence == 0 {
		o.Confidence = 0.95
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		return nil, fmt.Errorf("confidence %v outside (0, 1)", o.Confidence)
	}
	r := &Result{FormatVersion: JSONVersion, Alpha: o.Alpha, Confidence: o.Confidence, Rows: []Row{}, Environment: []EnvDiff{},
		Primary: []string{}, Guards: []string{}, Correction: CorrectionHolm, Verdicts: []SideVerdict{}}
	r.MinRuns = stats.MinRunsForVerdict(o.Alpha)
	r.MinRunsForInterval = stats.MinRunsForInterval(o.Confidence)
	if err := sameProfile(sides); err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, s := range sides {
		if len(s.Runs) == 0 {
			return nil, fmt.Errorf("side %q has no runs", s.Name)
		}
		if names[s.Name] {
			return nil, fmt.Errorf("two sides are named %q: name them apart", s.Name)
		}
		names[s.Name] = true
		r.Sides = append(r.Sides, SideInfo{Name: s.Name, Runs: len(s.Runs), Sources: s.Sources, Mixed: s.Mixed})
	}
	for _, m := range metricNames(sides) {
		r.Rows = append(r.Rows, compareMetric(m, sides, o))
	}
	assignRoles(r, o)
	for i := 1; i < len(sides); i++ {
		r.Verdicts = append(r.Verdicts, adjust(r, i))
	}
	r.Environment = envDiffs(sides)
	return r, nil
}

// assignRoles marks the declared rows and lists those measured, primary
// ones in their declared order.
func assignRoles(r *Result, o Options) {
	at := map[string]int{}
	for i := range r.Rows {
		r.Rows[i].Role = RoleSecondary
		at[r.Rows[i].Metric] = i
	}
	for _, m := range o.Guards {
		if i, ok := at[m]; ok && r.Rows[i].Role == RoleSecondary {
			r.Rows[i].Role = RoleGuard
			r.Guards = append(r.Guards, m)
		}
	}
	for _, m := range o.Primary {
		if i, ok := at[m]; ok && r.Rows[i].Role != RolePrimary {
			r.Rows[i].Role = RolePrimary
			r.Guards = slices.DeleteFunc(r.Guards, func(g string) bool { return g == m })
			r.Primary = append(r.Primary, m)
		}
	}
	// The verdict's rows first, in test order; the rest keep theirs.
	order := map[string]int{}
	for i, m := range r.Primary {
		order[m] = i - len(r.Primary)
	}
	sort.SliceStable(r.Rows, func(i, j int) bool { return order[r.Rows[i].Metric] < order[r.Rows[j].Metric] })
}

// testable is the p a comparison contributes to its family, false when it
// cannot reach a verdict (too few runs, no data): which comparisons those
// are depends only on the run counts, not on the values, so leaving them
// out of the family keeps Holm's and the fixed sequence's guarantee.
func testable(c *Cell) (float64, bool) {
	if c.Comparison == nil {
		return 0, false
	}
	switch c.Comparison.Verdict {
	case stats.Significant, stats.NoDifference:
		return c.Comparison.P, true
	}
	return 0, false
}

// adjust sets the adjusted p, verdict and change of column i (side i
// against the first) by role, and returns the side's verdict.
func adjust(r *Result, i int) SideVerdict {
	v := SideVerdict{Side: r.Sides[i].Name, Versus: r.Sides[0].Name, Outcome: OutcomeNoPrimary}
	set := func(row *Row, adj float64) {
		c := &row.Cells[i]
		c.AdjustedP = ptr(adj)
		verdict := stats.NoDifference
		if adj <= r.Alpha {
			verdict = stats.Significant
			c.Change = direction(row.Better, row.Cells[0].Median, c.Median)
		}
		c.Verdict = &verdict
	}
	// Primary rows: a fixed sequence in declared order, stopping at the
	// first that is not significant or cannot be. Every primary row gets
	// the sequence's adjusted p, the largest raw p up to it (a row that
	// cannot reach a verdict counts as 1), so a row after the stop shows
	// "~" however small its own p.
	byName := map[string]*Row{}
	for k := range r.Rows {
		byName[r.Rows[k].Metric] = &r.Rows[k]
	}
	var ps []float64
	var seq []*Row
	reached := true
	for _, m := range r.Primary {
		row := byName[m]
		c := &row.Cells[i]
		if c.Comparison == nil {
			continue // this side or the first lacks the metric
		}
		p, ok := testable(c)
		if reached {
			v.Tested = append(v.Tested, m)
			if !ok && len(seq) == 0 {
				v.Outcome = OutcomeTooFewRuns
			}
			reached = ok && p <= r.Alpha
		}
		if !ok {
			p = 1
		}
		ps = append(ps, p)
		seq = append(seq, row)
	}
	adj := stats.FixedSequence(ps)
	better, worse, tested := 0, 0, 0
	for k, row := range seq {
		if _, ok := testable(&row.Cells[i]); !ok {
			continue // stays "too few runs"
		}
		tested++
		set(row, adj[k])
		if adj[k] <= r.Alpha {
			v.Decided = append(v.Decided, row.Metric)
			switch row.Cells[i].Change {
			case "better":
				better++
			case "worse":
				worse++
			}
		}
	}
	switch {
	case better > 0 && worse > 0:
		v.Outcome = OutcomeMixed
	case better > 0:
		v.Outcome = OutcomeBetter
	case worse > 0:
		v.Outcome = OutcomeWorse
	case v.Outcome == OutcomeTooFewRuns:
	case tested > 0:
		v.Outcome = OutcomeNoDifference
	}
	// Guards: each at alpha, uncorrected, so that a harm is flagged
	// rather than corrected away.
	var secondary []*Row
	ps = nil
	for k := range r.Rows {
		row := &r.Rows[k]
		p, ok := testable(&row.Cells[i])
		if !ok {
			continue
		}
		switch row.Role {
		case RoleGuard:
			set(row, p)
			if row.Cells[i].Change == "worse" {
				v.GuardsWorse = append(v.GuardsWorse, row.Metric)
			}
		case RoleSecondary:
			secondary = append(secondary, row)
			ps = append(ps, p)
		}
	}
	for k, a := range stats.Holm(ps) {
		set(secondary[k], a)
	}
	v.Secondary = len(secondary)
	undecidable(r, i, len(secondary))
	return v
}

// undecidable marks the cells of column i that no outcome of their runs
// could make significant for their role, with the runs per side that
// could. Which cells those are depends only on run counts and the family
// size, not on values, and their adjusted p stays: the statistics are
// unchanged, only "~" (the test looked and found nothing) becomes "too
// few runs" where the test could not have found anything.
func undecidable(r *Result, i, family int) {
	// With more runs the secondary rows that have too few now join the
	// family: count them for the runs needed.
	all := 0
	for k := range r.Rows {
		if r.Rows[k].Role == RoleSecondary && r.Rows[k].Cells[i].Comparison != nil {
			all++
		}
	}
	tooFew := stats.TooFewRuns
	for k := range r.Rows {
		row := &r.Rows[k]
		c := &row.Cells[i]
		if c.Comparison == nil {
			continue
		}
		_, ok := testable(c)
		if !ok {
			// Not adjusted: the raw test's too few runs or no data is the
			// cell's verdict (JSON has no other).
			raw := c.Comparison.Verdict
			c.Verdict = &raw
		}
		switch {
		case !ok && row.Role == RoleSecondary:
			c.RunsToDecide = runsFor(r.Alpha / float64(max(all, 1)))
		case !ok:
			c.RunsToDecide = runsFor(r.Alpha)
		case row.Role == RoleSecondary && float64(family)*c.Comparison.MinP > r.Alpha:
			c.RunsToDecide = runsFor(r.Alpha / float64(all))
			c.Verdict = &tooFew
			c.Change = ""
		}
	}
}

// runsFor is the runs per side (equal sides) whose smallest U-test p is at
// most alpha; -1 when more than 50 would be.
func runsFor(alpha float64) int {
	if n := stats.MinRunsForVerdict(alpha); n > 0 {
		return n
	}
	return -1
}

// metricNames lists every metric any side measured: by metricRank, then in
// the order the runs list them (Run.Order), then by name.
func metricNames(sides []Side) []string {
	first := map[string]int{}
	var out []string
	note := func(m string) {
		if _, ok := first[m]; !ok {
			first[m] = len(first)
			out = append(out, m)
		}
	}
	for _, s := range sides {
		for _, run := range s.Runs {
			for _, m := range run.Order {
				if _, ok := run.Metrics[m]; ok {
					note(m)
				}
			}
			rest := make([]string, 0, len(run.Metrics))
			for m := range run.Metrics {
				rest = append(rest, m)
			}
			sort.Strings(rest)
			for _, m := range rest {
				note(m)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return metricRank(out[i]) < metricRank(out[j]) })
	return out
}

func compareMetric(name string, sides []Side, o Options) Row {
	row := Row{Metric: name}
	values := make([][]float64, len(sides))
	for i, s := range sides {
		c := Cell{Values: []float64{}}
		for _, run := range s.Runs {
			m, ok := run.Metrics[name]
			if !ok || math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
				continue
			}
			if row.Unit == "" {
				row.Unit, row.Better = m.Unit, m.Better
			}
			c.Values = append(c.Values, m.Value)
		}
		c.N = len(c.Values)
		values[i] = c.Values
		if c.N > 0 {
			sum, _ := stats.Summarize(c.Values, o.Confidence)
			c.Median = sum.Median
			if !math.IsInf(sum.Lo, 0) && !math.IsInf(sum.Hi, 0) {
				c.Lo, c.Hi, c.CI = ptr(sum.Lo), ptr(sum.Hi), "runs"
			}
		}
		row.Cells = append(row.Cells, c)
	}
	base := row.Cells[0]
	for i := 1; i < len(row.Cells); i++ {
		c := &row.Cells[i]
		if base.N == 0 || c.N == 0 {
			continue
		}
		cmp := stats.Compare(values[0], values[i], o.Alpha)
		c.Comparison = &cmp
		if base.Median != 0 {
			c.DeltaPct = ptr((c.Median/base.Median - 1) * 100)
		}
	}
	return row
}

// direction names a change from base to v as better or worse by the
// metric's direction; "" when it has none or nothing moved.
func direction(b Better, base, v float64) string {
	if v == base || (b != HigherIsBetter && b != LowerIsBetter) {
		return ""
	}
	if (v > base) == (b == HigherIsBetter) {
		return "better"
	}
	return "worse"
}

func ptr(v float64) *float64 { return &v }

// CommonProfile is the profile every side ran, "" when they differ or
// one is unknown: the declared metric roles apply only then.
func CommonProfile(sides []Side) string {
	if len(sides) == 0 {
		return ""
	}
	for _, s := range sides[1:] {
		if s.Profile != sides[0].Profile {
			return ""
		}
	}
	return sides[0].Profile
}

// sameProfile refuses sides whose results ran different bench profiles:
// their metrics have different names, and a table of dashes would say
// nothing. A side whose profile is unknown (an older result) is let be.
func sameProfile(sides []Side) error {
	first := -1
	for i, s := range sides {
		if s.Profile == "" {
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		if s.Profile != sides[first].Profile {
			return fmt.Errorf("side %q ran profile %q but side %q ran %q: compare results of one profile",
				sides[first].Name, sides[first].Profile, s.Name, s.Profile)
		}
	}
	return nil
}

// envDiffs lists the facts whose values differ between sides, in the order
// the first side that has them lists them.
func envDiffs(sides []Side) []EnvDiff {
	var keys []string
	vals := make([]map[string]string, len(sides))
	for i, s := range sides {
		vals[i] = map[string]string{}
		for _, f := range s.Facts {
			if _, ok := vals[i][f.Key]; ok {
				continue
			}
			vals[i][f.Key] = f.Value
			if !slices.Contains(keys, f.Key) {
				keys = append(keys, f.Key)
			}
		}
	}
	out := []EnvDiff{}
	for _, k := range keys {
		d := EnvDiff{Key: k}
		differ := false
		for i := range sides {
			v, ok := vals[i][k]
			if !ok || v == "" {
				v = "-"
			}
			d.Values = append(d.Values, v)
			if v != d.Values[0] {
				differ = true
			}
		}
		if differ {
			out = append(out, d)
		}
	}
	return out
}
