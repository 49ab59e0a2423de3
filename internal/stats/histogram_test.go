package stats

import (
	"math"
	"slices"
	"testing"
)

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

func TestMerge(t *testing.T) {
	got := Merge(
		Histogram{Values: []float64{1, 3}, Counts: []uint64{2, 5}},
		Histogram{Values: []float64{2, 3, 4}, Counts: []uint64{1, 1}}, // 4 has no count: passed over
		Histogram{Values: []float64{5}, Counts: []uint64{0}},          // 5 has a zero count: passed over
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

// TestRankFloat: q·n is taken as computed, as fio does: 99.9/100 is
// 0.9990000000000001, so p99.9 of 1000 samples is the 1000th, where the
// decimal would give the 999th; where the product is exact, the rank is.
func TestRankFloat(t *testing.T) {
	p := 99.9 // a variable: the constant 99.9 / 100 would be exact
	for _, tc := range []struct {
		q    float64
		n    uint64
		want uint64
	}{{p / 100, 1000, 1000}, {0.5, 1000, 500}, {0.99, 100, 99}, {0, 10, 1}, {1, 10, 10}, {0.99, 1, 1}} {
		if got := rank(tc.q, tc.n); got != tc.want {
			t.Errorf("rank(%v, %d) = %d, want %d", tc.q, tc.n, got, tc.want)
		}
	}
}

func TestExactAndCDF(t *testing.T) {
	h := Exact([]float64{3, 1, 2, 3, 3})
	if !slices.Equal(h.Values, []float64{1, 2, 3}) || !slices.Equal(h.Counts, []uint64{1, 1, 3}) {
		t.Fatalf("Exact = %+v", h)
	}
	if q, err := h.Quantile(0.4); err != nil || q != 2 {
		t.Errorf("Quantile(0.4) = %v, %v; want 2", q, err)
	}
	got := Histogram{Values: []float64{1, 2, 3}, Counts: []uint64{2, 0, 3}}.CDF()
	want := []CDFPoint{{1, 2}, {3, 5}} // the empty bucket adds no step
	if !slices.Equal(got, want) {
		t.Errorf("CDF = %v, want %v", got, want)
	}
	if Exact(nil).CDF() != nil {
		t.Error("CDF of nothing is not nil")
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median(nil) is not NaN")
	}
}
