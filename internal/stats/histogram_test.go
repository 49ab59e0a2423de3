package stats

import (
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
