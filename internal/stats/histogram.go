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
