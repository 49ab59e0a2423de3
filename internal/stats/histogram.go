package stats

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Histogram is a latency distribution inside one run: Values ascending
// (a bucket's representative value), Counts the samples in each. It is the
// one distribution type: benchresult's wire histogram (integer
// nanoseconds), compare's latencies and exact samples (Exact) all read
// their quantiles, merges and CDFs here.
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

// Exact is the histogram of samples with one bucket per distinct value,
// so its quantiles are the samples' own order statistics.
func Exact(samples []float64) Histogram {
	s := slices.Clone(samples)
	slices.Sort(s)
	var h Histogram
	for _, v := range s {
		if n := len(h.Values); n > 0 && h.Values[n-1] == v {
			h.Counts[n-1]++
			continue
		}
		h.Values = append(h.Values, v)
		h.Counts = append(h.Counts, 1)
	}
	return h
}

// Merge sums histograms bucket by bucket (runs of one side, the phases of
// one run, the streams of one phase): a value's counts add up, values come
// out ascending. A value without a count (a zero count, or none at all)
// is passed over: it adds no step to a CDF and cannot be a quantile.
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
	for v, c := range counts {
		if c > 0 {
			out.Values = append(out.Values, v)
		}
	}
	slices.Sort(out.Values)
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
// (the inverted-CDF definition, numpy's method="inverted_cdf"). q·n is
// taken as computed in floating point, not as the decimal it stands for,
// as fio's clat percentiles do (sum >= p/100.0*nr, in long double): the
// p99.9 of 1000 samples is their maximum in both, since 99.9 is stored a
// hair above itself (99.9/100 is 0.9990000000000001). Results are
// compared with fio's.
func rank(q float64, n uint64) uint64 {
	k := uint64(math.Ceil(q * float64(n)))
	return max(1, min(k, n))
}

// Quantile returns the inverted-CDF quantile q of h: the smallest value
// with at least q of the samples at or below it.
func (h Histogram) Quantile(q float64) (float64, error) {
	if err := h.validate(); err != nil {
		return 0, err
	}
	if q < 0 || q > 1 || math.IsNaN(q) {
		return 0, fmt.Errorf("quantile %v outside [0, 1]", q)
	}
	return h.at(rank(q, h.Total())), nil
}

// at is the k-th smallest sample (1-based) of a valid histogram.
func (h Histogram) at(k uint64) float64 {
	var cum uint64
	for i, c := range h.Counts {
		cum += c
		if cum >= k {
			return h.Values[i]
		}
	}
	return h.Values[len(h.Values)-1]
}

// CDFPoint is one step of a cumulative distribution: Cum of Total samples
// are at or below Value.
type CDFPoint struct {
	Value float64
	Cum   uint64
}

// CDF returns the steps of h's cumulative distribution, one per value that
// has samples; nil for an empty histogram. Callers divide Cum by
// h.Total() in the form they print (a fraction, a percentage).
func (h Histogram) CDF() []CDFPoint {
	var out []CDFPoint
	var cum uint64
	for i, c := range h.Counts {
		if c == 0 || i >= len(h.Values) {
			continue
		}
		cum += c
		out = append(out, CDFPoint{Value: h.Values[i], Cum: cum})
	}
	return out
}

// Median is the sample median of values: the middle one, or the mean of
// the middle two for an even count. This is not Quantile(0.5), which
// picks the lower middle: a median across machines (fleettax) has to agree
// with PromQL's quantile(0.5, ...), which interpolates, where a latency
// quantile has to agree with fio's order statistic. NaN for no values.
func Median(values []float64) float64 {
	n := uint64(len(values))
	if n == 0 {
		return math.NaN()
	}
	h := Exact(values)
	return (h.at((n+1)/2) + h.at(n/2+1)) / 2
}
