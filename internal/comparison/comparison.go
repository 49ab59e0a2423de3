// Package comparison compares the runs of two or more sides (saved bench
// results, or runs made interleaved by `slowpath compare`): per metric the
// median across runs, its change against the first side and whether that
// change is significant (Mann-Whitney U, internal/stats), bootstrap
// confidence intervals for latency percentiles inside one run, and the
// environment facts that differ between sides. It is pure: sides in, result
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
	Unit   string  // see FormatValue: ops/s, B/s, s, count, cpu
	Better Better  // direction of improvement
	Value  float64 // the run's figure
	// Latency and Quantile, when set, are the run's latency distribution
	// and which quantile Value is, so one run still gets a confidence
	// interval (bootstrap).
	Latency  *stats.Histogram
	Quantile float64
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
}

// Cell is one side's figure for one metric.
type Cell struct {
	N      int       `json:"runs"`
	Values []float64 `json:"values"`
	Median float64   `json:"median"`
	// Lo and Hi bound the median: across runs when there are enough
	// (6 at 95%), else from the bootstrap inside a single run of a latency
	// percentile (CI says which), else absent.
	Lo *float64 `json:"ci_lo,omitempty"`
	Hi *float64 `json:"ci_hi,omitempty"`
	CI string   `json:"ci,omitempty"` // "runs" or "bootstrap"
	// Versus the first side; nil on the first side itself.
	DeltaPct   *float64          `json:"delta_pct,omitempty"`
	Comparison *stats.Comparison `json:"comparison,omitempty"`
	// Change is "better", "worse" or "" (not significant across runs, or
	// first side). Evidence inside runs never sets it (WithinRun.Change).
	Change string `json:"change,omitempty"`
	// WithinRun is the evidence inside the runs when there are too few
	// runs for a verdict across them.
	WithinRun *WithinRun `json:"within_run,omitempty"`
}

// WithinRun is a comparison made inside runs rather than across them: for a
// latency percentile, whether the bootstrap intervals of the two sides
// (histograms of all their runs pooled) are disjoint; for a rate with a
// per-second timeline, a Mann-Whitney U test over the seconds. It measures
// only the sampling noise inside a run, not the drift between runs: two runs
// of one disk on a shared machine differ beyond it (measured here: read p99
// 123 µs vs 65 µs, both on the root filesystem). So it is reported apart
// from the verdict and never marks a cell better or worse: it can show that
// tmpfs is not a disk, not settle whether a tuning helped.
type WithinRun struct {
	Method      string   `json:"method"` // "bootstrap intervals" or "U over seconds"
	P           *float64 `json:"p,omitempty"`
	Significant bool     `json:"significant"`
	// Change is "better" or "worse" when Significant and the metric has a
	// direction.
	Change string `json:"change,omitempty"`
	// Lo and Hi are the two sides' intervals for the bootstrap method:
	// [baseline lo, baseline hi, this lo, this hi].
	Intervals []float64 `json:"intervals,omitempty"`
}

// Row is one metric across sides.
type Row struct {
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	Better Better `json:"better"`
	Cells  []Cell `json:"sides"` // one per side, in side order; N=0 where missing
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
	// Annotations are set by the front end, after Compare (annotations.go).
	Annotations
}

// JSONVersion is the version of Result's JSON shape.
const JSONVersion = 1

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
	r := &Result{FormatVersion: JSONVersion, Alpha: o.Alpha, Confidence: o.Confidence, Rows: []Row{}, Environment: []EnvDiff{}}
	for n := 1; n <= 50; n++ {
		if stats.MinP(n, n) <= o.Alpha {
			r.MinRuns = n
			break
		}
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
	r.Environment = envDiffs(sides)
	return r, nil
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
		var one *Measure
		for _, run := range s.Runs {
			m, ok := run.Metrics[name]
			if !ok || math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
				continue
			}
			if row.Unit == "" {
				row.Unit, row.Better = m.Unit, m.Better
			}
			c.Values = append(c.Values, m.Value)
			one = &m
		}
		c.N = len(c.Values)
		values[i] = c.Values
		if c.N > 0 {
			sum, _ := stats.Summarize(c.Values, o.Confidence)
			c.Median = sum.Median
			if !math.IsInf(sum.Lo, 0) && !math.IsInf(sum.Hi, 0) {
				c.Lo, c.Hi, c.CI = ptr(sum.Lo), ptr(sum.Hi), "runs"
			} else if c.N == 1 && one.Latency != nil {
				if ci, err := stats.BootstrapQuantile(*one.Latency, one.Quantile, o.Confidence); err == nil {
					c.Lo, c.Hi, c.CI = ptr(ci.Lo), ptr(ci.Hi), "bootstrap"
				}
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
		if cmp.Verdict == stats.Significant {
			c.Change = direction(row.Better, base.Median, c.Median)
		}
		if cmp.Verdict == stats.TooFewRuns {
			c.WithinRun = withinRun(name, sides[0], sides[i], o)
			if w := c.WithinRun; w != nil && w.Significant {
				w.Change = direction(row.Better, base.Median, c.Median)
			}
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

// withinRun compares two sides inside their runs; nil when they hold
// neither latency histograms nor a per-second timeline for the metric.
func withinRun(metric string, a, b Side, o Options) *WithinRun {
	ha, qa, okA := pooledLatency(metric, a)
	hb, qb, okB := pooledLatency(metric, b)
	if okA && okB && qa == qb {
		ca, errA := stats.BootstrapQuantile(ha, qa, o.Confidence)
		cb, errB := stats.BootstrapQuantile(hb, qb, o.Confidence)
		if errA == nil && errB == nil {
			return &WithinRun{Method: "bootstrap intervals", Significant: ca.Hi < cb.Lo || cb.Hi < ca.Lo,
				Intervals: []float64{ca.Lo, ca.Hi, cb.Lo, cb.Hi}}
		}
	}
	sa, sb := seconds(metric, a), seconds(metric, b)
	if len(sa) > 0 && len(sb) > 0 {
		cmp := stats.Compare(sa, sb, o.Alpha)
		return &WithinRun{Method: "U over seconds", P: ptr(cmp.P), Significant: cmp.Verdict == stats.Significant}
	}
	return nil
}

// pooledLatency merges the latency histograms behind a percentile metric
// over a side's runs.
func pooledLatency(metric string, s Side) (stats.Histogram, float64, bool) {
	var hs []stats.Histogram
	q := -1.0
	for _, run := range s.Runs {
		m, ok := run.Metrics[metric]
		if !ok || m.Latency == nil {
			return stats.Histogram{}, 0, false
		}
		if q >= 0 && m.Quantile != q {
			return stats.Histogram{}, 0, false
		}
		q = m.Quantile
		hs = append(hs, *m.Latency)
	}
	h := stats.Merge(hs...)
	if len(h.Values) == 0 {
		return stats.Histogram{}, 0, false
	}
	return h, q, true
}

// seconds pools the per-second timeline named like the metric over a
// side's runs.
func seconds(metric string, s Side) []float64 {
	var out []float64
	for _, run := range s.Runs {
		for _, p := range run.Timeline[metric] {
			out = append(out, p.V)
		}
	}
	return out
}
