package stats

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Histogram is a latency distribution inside one run: Values ascending
// (a bucket's representative value), Counts the samples in each.
type Histogram struct {
	Values []float64
	Counts []uint64
}

// Total is the number of samples.
func (h Histogram) Total() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Merge sums histograms bucket by bucket (runs of one side, or the phases
// of one run): a value's counts add up, values come out ascending. A value
// without a count is passed over.
func Merge(hs ...Histogram) Histogram {
	counts := map[float64]uint64{}
	for _, h := range hs {
		for i, v := range h.Values {
			if i < len(h.Counts) {
				counts[v] += h.Counts[i]
			}
		}
	}
	var out Histogram
	for v := range counts {
		out.Values = append(out.Values, v)
	}
	sort.Float64s(out.Values)
	for _, v := range out.Values {
		out.Counts = append(out.Counts, counts[v])
	}
	return out
}

func (h Histogram) validate() error {
	if len(h.Values) != len(h.Counts) {
		return fmt.Errorf("histogram has %d values but %d counts", len(h.Values), len(h.Counts))
	}
	for i := 1; i < len(h.Values); i++ {
		if !(h.Values[i] > h.Values[i-1]) {
			return fmt.Errorf("histogram values not ascending at %d (%v after %v)", i, h.Values[i], h.Values[i-1])
		}
	}
	if h.Total() == 0 {
		return errors.New("empty histogram")
	}
	return nil
}

// rank is the 1-based order statistic that estimates quantile q of n
// samples: the smallest value with at least q·n samples at or below it
// (the inverted-CDF definition, numpy's method="inverted_cdf").
func rank(q float64, n uint64) uint64 {
	k := uint64(math.Ceil(q * float64(n)))
	return max(1, min(k, n))
}

// Quantile returns the inverted-CDF quantile q of h.
func (h Histogram) Quantile(q float64) (float64, error) {
	if err := h.validate(); err != nil {
		return 0, err
	}
	if q < 0 || q > 1 || math.IsNaN(q) {
		return 0, fmt.Errorf("quantile %v outside [0, 1]", q)
	}
	k := rank(q, h.Total())
	var cum uint64
	for i, c := range h.Counts {
		cum += c
		if cum >= k {
			return h.Values[i], nil
		}
	}
	return h.Values[len(h.Values)-1], nil
}

// QuantileCI is a quantile with its percentile-bootstrap confidence interval.
type QuantileCI struct {
	Q, Estimate, Lo, Hi, Confidence float64
}

// BootstrapQuantile returns the percentile-bootstrap confidence interval of
// quantile q of h at the given confidence (e.g. 0.95).
//
// The bootstrap distribution of a sample quantile has a closed form, so it is
// computed exactly rather than by drawing resamples: the k-th order
// statistic of a resample of n is at most x exactly when at least k of the
// n draws are at most x, and the number of such draws is Binomial(n, F(x))
// where F is the histogram's CDF (Efron 1979, §3; Hutson 1999 "Calculating
// nonparametric confidence intervals for quantiles using fractional order
// statistics"). This equals the limit of infinitely many resamples, costs a
// few binomial tails per bucket and gives the same answer on every run, which
// golden files need. TestBootstrapMatchesResampling checks it against
// explicit resampling.
func BootstrapQuantile(h Histogram, q, confidence float64) (QuantileCI, error) {
	est, err := h.Quantile(q)
	if err != nil {
		return QuantileCI{}, err
	}
	if !(confidence > 0 && confidence < 1) {
		return QuantileCI{}, fmt.Errorf("confidence %v outside (0, 1)", confidence)
	}
	n := h.Total()
	k := rank(q, n)
	tail := (1 - confidence) / 2
	ci := QuantileCI{Q: q, Estimate: est, Confidence: confidence, Lo: h.Values[len(h.Values)-1], Hi: h.Values[len(h.Values)-1]}
	loSet := false
	var cum uint64
	for i, c := range h.Counts {
		cum += c
		if c == 0 {
			continue
		}
		// P(resampled quantile <= Values[i]).
		p := binomialUpperTail(n, float64(cum)/float64(n), k)
		if !loSet && p > tail {
			ci.Lo, loSet = h.Values[i], true
		}
		if p >= 1-tail {
			ci.Hi = h.Values[i]
			break
		}
	}
	return ci, nil
}

// binomialUpperTail is P(X >= k) for X ~ Binomial(n, p), summed in log space
// from the far side of the mode so large n (millions of I/Os) stays exact to
// float64 precision: terms fall geometrically away from the mode and the sum
// stops once they no longer change it.
func binomialUpperTail(n uint64, p float64, k uint64) float64 {
	switch {
	case k == 0:
		return 1
	case k > n:
		return 0
	case p <= 0:
		return 0
	case p >= 1:
		return 1
	}
	nf := float64(n)
	if v := nf * p * (1 - p); v > 1e6 {
		// Beyond a thousand standard deviations' worth of terms the sum
		// would take millions of steps; the normal approximation with
		// continuity correction is then within ~1/sqrt(v) = 0.1% of the
		// exact tail, far inside the 2.5% the interval cuts at.
		z := (float64(k) - 0.5 - nf*p) / math.Sqrt(v)
		return 0.5 * math.Erfc(z/math.Sqrt2)
	}
	lgn, _ := math.Lgamma(nf + 1)
	lp, lq := math.Log(p), math.Log1p(-p)
	logPMF := func(i uint64) float64 {
		a, _ := math.Lgamma(float64(i) + 1)
		b, _ := math.Lgamma(nf - float64(i) + 1)
		return lgn - a - b + float64(i)*lp + (nf-float64(i))*lq
	}
	mean := nf * p
	if float64(k) > mean {
		// Upper tail lies beyond the mode: sum upward, terms shrink.
		s := 0.0
		for i := k; i <= n; i++ {
			t := math.Exp(logPMF(i))
			s += t
			if t < s*1e-17 || t == 0 {
				break
			}
		}
		return math.Min(1, s)
	}
	// Lower tail lies below the mode: sum it downward and subtract.
	s := 0.0
	for i := k - 1; ; i-- {
		t := math.Exp(logPMF(i))
		s += t
		if t < s*1e-17 || t == 0 || i == 0 {
			break
		}
	}
	return math.Max(0, 1-s)
}
