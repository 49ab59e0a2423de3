package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func histogramOf(samples []float64) Histogram {
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

func TestQuantile(t *testing.T) {
	h := Histogram{Values: []float64{1, 2, 3, 4}, Counts: []uint64{10, 80, 9, 1}}
	for _, tc := range []struct{ q, want float64 }{{0, 1}, {0.1, 1}, {0.11, 2}, {0.5, 2}, {0.9, 2}, {0.99, 3}, {0.999, 4}, {1, 4}} {
		got, err := h.Quantile(tc.q)
		if err != nil || got != tc.want {
			t.Errorf("Quantile(%v) = %v, %v; want %v", tc.q, got, err, tc.want)
		}
	}
	for _, bad := range []Histogram{{}, {Values: []float64{1}, Counts: []uint64{0}}, {Values: []float64{2, 1}, Counts: []uint64{1, 1}}, {Values: []float64{1}}} {
		if _, err := bad.Quantile(0.5); err == nil {
			t.Errorf("no error for %+v", bad)
		}
	}
}

// TestBootstrapMatchesResampling checks the closed form against the
// textbook procedure: draw resamples with replacement, take the quantile of
// each, read the interval off the 2.5th and 97.5th percentiles.
func TestBootstrapMatchesResampling(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	samples := make([]float64, 400)
	for i := range samples {
		// Log-normal-ish latencies in µs, rounded to fio-like buckets.
		samples[i] = math.Round(100 * math.Exp(0.5*r.NormFloat64()))
	}
	h := histogramOf(samples)
	const resamples = 4000
	for _, q := range []float64{0.5, 0.9, 0.99} {
		ci, err := BootstrapQuantile(h, q, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		boot := make([]float64, resamples)
		re := make([]float64, len(samples))
		for i := range boot {
			for j := range re {
				re[j] = samples[r.IntN(len(samples))]
			}
			v, _ := histogramOf(re).Quantile(q)
			boot[i] = v
		}
		bh := histogramOf(boot)
		lo, _ := bh.Quantile(0.025)
		hi, _ := bh.Quantile(0.975)
		// Monte Carlo noise moves the bounds by at most a neighbouring
		// value; compare ranks in the sample, not raw values.
		pos := func(v float64) int { i, _ := slices.BinarySearch(h.Values, v); return i }
		if d := pos(ci.Lo) - pos(lo); d < -1 || d > 1 {
			t.Errorf("q=%v: closed-form lo %v, resampled %v", q, ci.Lo, lo)
		}
		if d := pos(ci.Hi) - pos(hi); d < -1 || d > 1 {
			t.Errorf("q=%v: closed-form hi %v, resampled %v", q, ci.Hi, hi)
		}
		if !(ci.Lo <= ci.Estimate && ci.Estimate <= ci.Hi) {
			t.Errorf("q=%v: estimate %v outside [%v, %v]", q, ci.Estimate, ci.Lo, ci.Hi)
		}
	}
}

func TestBootstrapLargeRun(t *testing.T) {
	// Ten million I/Os in 1000 buckets: the tail sums must stay finite and
	// the interval must be tight around the estimate.
	h := Histogram{}
	for i := range 1000 {
		h.Values = append(h.Values, float64(i+1))
		h.Counts = append(h.Counts, 10000)
	}
	ci, err := BootstrapQuantile(h, 0.99, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if ci.Estimate != 990 || ci.Lo < 989 || ci.Hi > 991 {
		t.Errorf("got %+v, want 990 within one bucket", ci)
	}
}

func TestBinomialUpperTail(t *testing.T) {
	// Exact values: P(X >= 3), X ~ Bin(5, 0.5) = 16/32; Bin(10, 0.3) >= 1 = 1-0.7^10.
	for _, tc := range []struct {
		n    uint64
		p    float64
		k    uint64
		want float64
	}{{5, 0.5, 3, 0.5}, {10, 0.3, 1, 1 - math.Pow(0.7, 10)}, {10, 0.3, 0, 1}, {10, 0.3, 11, 0}, {4, 0.25, 4, math.Pow(0.25, 4)}} {
		if got := binomialUpperTail(tc.n, tc.p, tc.k); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("P(Bin(%d,%v) >= %d) = %v, want %v", tc.n, tc.p, tc.k, got, tc.want)
		}
	}
}

func TestBinomialUpperTailLargeN(t *testing.T) {
	// n = 1e12 would take ~1e7 terms summed exactly; the approximation
	// must answer at once and stay a probability that is ~0.5 at the mean.
	got := binomialUpperTail(1e12, 0.5, 5e11)
	if math.Abs(got-0.5) > 1e-3 {
		t.Errorf("P(X >= mean) = %v, want ~0.5", got)
	}
	if got := binomialUpperTail(1e12, 0.5, 5e11+1e7); got > 1e-9 {
		t.Errorf("20 sigma above the mean: %v", got)
	}
	// Either side of the switch agrees: v just below and above 1e6.
	below := binomialUpperTail(4_000_000, 0.5, 2_001_000) // v = 1e6
	above := binomialUpperTail(4_000_004, 0.5, 2_001_002) // v > 1e6
	if math.Abs(below-above) > 2e-3 {
		t.Errorf("exact %v vs approximation %v", below, above)
	}
}

func TestMerge(t *testing.T) {
	got := Merge(
		Histogram{Values: []float64{1, 3}, Counts: []uint64{2, 5}},
		Histogram{Values: []float64{2, 3, 4}, Counts: []uint64{1, 1}}, // 4 has no count: passed over
		Histogram{},
	)
	want := Histogram{Values: []float64{1, 2, 3}, Counts: []uint64{2, 1, 6}}
	if !slices.Equal(got.Values, want.Values) || !slices.Equal(got.Counts, want.Counts) {
		t.Errorf("Merge = %+v, want %+v", got, want)
	}
	if e := Merge(); len(e.Values) != 0 || len(e.Counts) != 0 {
		t.Errorf("Merge() = %+v", e)
	}
}
