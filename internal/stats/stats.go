// Package stats holds the statistics behind `slowpath compare`: the
// Mann-Whitney U test across runs (golang.org/x/perf/benchmath, benchstat's own
// statistics), medians with confidence intervals, the corrections for
// testing several metrics at once (Holm, fixed sequence), and latency
// histograms (merged and read for quantiles; the CDFs of compare's HTML).
package stats

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"golang.org/x/perf/benchmath"
)

// DefaultAlpha is benchstat's default significance level.
const DefaultAlpha = 0.05

// Verdict says what a comparison of two sides may claim.
type Verdict int

const (
	// NoDifference: p above alpha, printed as "~".
	NoDifference Verdict = iota
	// Significant: p at or below alpha.
	Significant
	// TooFewRuns: even completely separated samples of these sizes
	// could not reach alpha, so no verdict is possible.
	TooFewRuns
	// NoData: one side has no values.
	NoData
)

func (v Verdict) String() string {
	switch v {
	case NoDifference:
		return "no significant difference"
	case Significant:
		return "significant"
	case TooFewRuns:
		return "too few runs"
	default:
		return "no data"
	}
}

// MarshalText makes a verdict a readable JSON string.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText reads a verdict back, so compare's JSON round-trips.
func (v *Verdict) UnmarshalText(b []byte) error {
	for _, c := range []Verdict{NoDifference, Significant, TooFewRuns, NoData} {
		if c.String() == string(b) {
			*v = c
			return nil
		}
	}
	return fmt.Errorf("unknown verdict %q", b)
}

// Comparison is the outcome of comparing the runs of side A with side B.
type Comparison struct {
	N1 int `json:"n1"`
	N2 int `json:"n2"`
	// U is the Mann-Whitney U statistic of A: the number of pairs (a, b)
	// with a > b, ties counting one half (as scipy.stats.mannwhitneyu).
	U float64 `json:"u"`
	// P is benchmath's two-sided p-value (exact U distribution for small
	// samples, normal approximation with tie and continuity correction
	// above 50 values).
	P     float64 `json:"p"`
	Alpha float64 `json:"alpha"`
	// MinP is the smallest p-value samples of these sizes can produce.
	MinP float64 `json:"min_p"`
	// Verdict is the raw test's. It is not in the JSON: a caller that
	// corrects for several tests prints its own verdict beside these
	// numbers (compare's cell), and two verdicts could disagree.
	Verdict Verdict `json:"-"`
}

// Compare tests whether runs a and b differ in location at level alpha.
// Neither slice is modified.
func Compare(a, b []float64, alpha float64) Comparison {
	c := Comparison{N1: len(a), N2: len(b), Alpha: alpha, P: 1, MinP: 1}
	if len(a) == 0 || len(b) == 0 {
		c.Verdict = NoData
		return c
	}
	c.U = uStatistic(a, b)
	c.MinP = MinP(len(a), len(b))
	th := &benchmath.Thresholds{CompareAlpha: alpha}
	sa := benchmath.NewSample(slices.Clone(a), th)
	sb := benchmath.NewSample(slices.Clone(b), th)
	// benchmath reports identical constant samples as P=1 with a warning:
	// that is "no difference", which is what we want.
	c.P = benchmath.AssumeNothing.Compare(sa, sb).P
	switch {
	case c.MinP > alpha:
		// Checked first: no arrangement of these sizes is rarer than
		// MinP, so a smaller p (go-moremath's exact distribution with
		// ties in tiny samples gives some) cannot be a verdict.
		c.Verdict = TooFewRuns
	case c.P <= alpha:
		c.Verdict = Significant
	default:
		c.Verdict = NoDifference
	}
	return c
}

// MinP is the smallest two-sided p-value of the exact U test for sample
// sizes n1 and n2: both extreme orderings out of C(n1+n2, n1) equally likely
// ones (Mann and Whitney 1947). 2 runs per side give 1/3, 3 give 0.1, 4 give
// 0.029: at alpha 0.05 a side needs 4 runs (as benchmath's uTestMinP table).
func MinP(n1, n2 int) float64 {
	if n1 == 0 || n2 == 0 {
		return 1
	}
	lc, _ := math.Lgamma(float64(n1 + n2 + 1))
	l1, _ := math.Lgamma(float64(n1 + 1))
	l2, _ := math.Lgamma(float64(n2 + 1))
	return math.Min(1, 2*math.Exp(-(lc-l1-l2)))
}

// uStatistic counts pairs with a > b, ties as one half, by merging sorted
// copies: O(n log n), since pooled per-second samples of long runs can be
// tens of thousands.
func uStatistic(a, b []float64) float64 {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	u := 0.0
	lo, hi := 0, 0 // y[:lo] < v, y[:hi] <= v
	for _, v := range x {
		for lo < len(y) && y[lo] < v {
			lo++
		}
		if hi < lo {
			hi = lo
		}
		for hi < len(y) && y[hi] <= v {
			hi++
		}
		u += float64(lo) + 0.5*float64(hi-lo)
	}
	return u
}

// Summary is a median across runs with its confidence interval.
type Summary struct {
	N      int
	Median float64
	// Lo and Hi bound the median at Confidence; ±Inf when there are too
	// few runs for an interval (fewer than 6 at 95%).
	Lo, Hi     float64
	Confidence float64
}

// Summarize returns benchmath's median and its distribution-free
// confidence interval.
func Summarize(values []float64, confidence float64) (Summary, error) {
	if len(values) == 0 {
		return Summary{}, errors.New("no values")
	}
	s := benchmath.AssumeNothing.Summary(benchmath.NewSample(slices.Clone(values), &benchmath.DefaultThresholds), confidence)
	return Summary{N: len(values), Median: s.Center, Lo: s.Lo, Hi: s.Hi, Confidence: s.Confidence}, nil
}

// Delta formats the change from old to new as benchstat does: "~" when the
// comparison is not significant, otherwise a signed percentage.
func (c Comparison) Delta(old, new float64) string {
	switch c.Verdict {
	case Significant:
	case TooFewRuns:
		return "too few runs"
	case NoData:
		return "-"
	default:
		return "~"
	}
	if old == new {
		return "0.00%"
	}
	if old == 0 {
		return "?"
	}
	return fmt.Sprintf("%+.2f%%", (new/old-1)*100)
}

// MinRunsForVerdict is how many runs per side (equal sides) the U test needs
// before its smallest p-value reaches alpha; 0 when more than 50 would.
func MinRunsForVerdict(alpha float64) int {
	for n := 1; n <= 50; n++ {
		if MinP(n, n) <= alpha {
			return n
		}
	}
	return 0
}

// MinRunsForInterval is how many runs Summarize needs for a finite
// confidence interval of the median at confidence (benchmath's
// order-statistic interval: 6 at 95%, 8 at 99%); 0 when more than 100 would.
func MinRunsForInterval(confidence float64) int {
	if !(confidence > 0 && confidence < 1) {
		return 0
	}
	for n := 1; n <= 100; n++ {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i)
		}
		if s, err := Summarize(v, confidence); err == nil && !math.IsInf(s.Lo, 0) && !math.IsInf(s.Hi, 0) {
			return n
		}
	}
	return 0
}
