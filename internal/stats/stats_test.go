package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Reference values computed once with scipy 1.17.1 (Python 3):
//
//	from scipy.stats import mannwhitneyu
//	mannwhitneyu(x, y, alternative='two-sided', method='exact')       # small, no ties
//	mannwhitneyu(x, y, alternative='two-sided', method='asymptotic',
//	             use_continuity=True)                                 # 60 per side
//
// scipy's statistic is U of x (pairs x > y, ties one half), as ours.
// "textbook" is Mann-Whitney's classic small example; its exact p also
// follows from the published table of the U distribution for n1=5, n2=4
// (P(U <= 3) = 0.0556, doubled: 0.111).
func TestCompareAgainstScipy(t *testing.T) {
	large := func(shift float64, f func(float64) float64) []float64 {
		v := make([]float64, 60)
		for i := range v {
			v[i] = float64(i)*1.03 + shift + f(float64(i))
		}
		return v
	}
	x60 := make([]float64, 60)
	for i := range x60 {
		x60[i] = float64(i)*1.01 + math.Sin(float64(i))
	}
	shift8a := make([]float64, 8)
	shift8b := make([]float64, 8)
	for i := range 8 {
		shift8a[i] = float64(100 + i*37%11)
		shift8b[i] = float64(103+i*53%13) + 0.5
	}
	tests := []struct {
		name string
		x, y []float64
		u, p float64
	}{
		{"disjoint3", []float64{1, 2, 3}, []float64{4, 5, 6}, 0, 0.10000000000000001},
		{"textbook", []float64{19, 22, 16, 29, 24}, []float64{20, 11, 17, 12}, 17, 0.1111111111111111},
		{"mixed", []float64{1.1, 2.3, 0.7, 4.5, 3.3}, []float64{5.1, 6.2, 2.9, 7.4, 8.8, 3.9}, 3, 0.030303030303030304},
		{"interleaved", []float64{1, 4, 5, 8}, []float64{2, 3, 6, 7}, 8, 1},
		{"shift8", shift8a, shift8b, 17, 0.13038073038073036},
		{"large60-same", x60, large(0.5, math.Cos), 1753, 0.80718303102424294},
		{"large60-shift", x60, large(12, math.Cos), 1149, 0.00063960313777106732},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x0, y0 := slices.Clone(tc.x), slices.Clone(tc.y)
			c := Compare(tc.x, tc.y, 0.05)
			if c.U != tc.u {
				t.Errorf("U = %v, scipy says %v", c.U, tc.u)
			}
			if math.Abs(c.P-tc.p) > 1e-9*math.Max(1, tc.p) && math.Abs(c.P-tc.p)/tc.p > 1e-6 {
				t.Errorf("p = %.17g, scipy says %.17g", c.P, tc.p)
			}
			if !slices.Equal(x0, tc.x) || !slices.Equal(y0, tc.y) {
				t.Error("Compare reordered its inputs")
			}
		})
	}
}

func TestMinP(t *testing.T) {
	// 2/C(n1+n2, n1); benchmath's uTestMinP table gives the same for n1 == n2.
	for _, tc := range []struct {
		n1, n2 int
		want   float64
	}{{1, 1, 1}, {2, 2, 1.0 / 3}, {3, 3, 0.1}, {4, 4, 0.02857142857142857}, {5, 5, 0.007936507936507936}, {2, 5, 2.0 / 21}} {
		if got := MinP(tc.n1, tc.n2); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("MinP(%d, %d) = %v, want %v", tc.n1, tc.n2, got, tc.want)
		}
	}
}

// noisy returns n values around center with relative noise rel, from a seeded
// generator so the test is the same on every run.
func noisy(r *rand.Rand, n int, center, rel float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = center * (1 + rel*r.NormFloat64())
	}
	return v
}

func TestVerdicts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	// Two sets of runs of one configuration: no difference.
	same := Compare(noisy(r, 10, 1000, 0.02), noisy(r, 10, 1000, 0.02), 0.05)
	if same.Verdict != NoDifference {
		t.Errorf("same configuration: %v (p=%v), want no significant difference", same.Verdict, same.P)
	}
	if d := same.Delta(1000, 1003); d != "~" {
		t.Errorf("Delta = %q, want ~", d)
	}
	// A 20% shift with 2% noise: significant, and the sign is right.
	a, b := noisy(r, 5, 1000, 0.02), noisy(r, 5, 1200, 0.02)
	shift := Compare(a, b, 0.05)
	if shift.Verdict != Significant || shift.P > 0.05 {
		t.Errorf("20%% shift: %v (p=%v), want significant", shift.Verdict, shift.P)
	}
	if d := shift.Delta(1000, 1200); d != "+20.00%" {
		t.Errorf("Delta = %q", d)
	}
	// Two runs per side can never reach 0.05, however far apart.
	few := Compare([]float64{1, 2}, []float64{100, 200}, 0.05)
	if few.Verdict != TooFewRuns {
		t.Errorf("2 runs per side: %v (p=%v), want too few runs", few.Verdict, few.P)
	}
	if d := few.Delta(1.5, 150); d != "too few runs" {
		t.Errorf("Delta = %q", d)
	}
	// Three per side reach only 0.1: still too few at 0.05, enough at 0.15.
	if v := Compare([]float64{1, 2, 3}, []float64{4, 5, 6}, 0.05).Verdict; v != TooFewRuns {
		t.Errorf("3 runs at 0.05: %v", v)
	}
	if v := Compare([]float64{1, 2, 3}, []float64{4, 5, 6}, 0.15).Verdict; v != Significant {
		t.Errorf("3 runs at 0.15: %v", v)
	}
	// Ties in tiny samples (CPU shares of 0.001, 0.001 vs 0, as real bench
	// results had) can make the exact p-value smaller than any arrangement
	// allows; still no verdict.
	if c := Compare([]float64{0.001, 0.001}, []float64{0}, 0.05); c.Verdict != TooFewRuns {
		t.Errorf("2+1 with ties: %v (p=%v), want too few runs", c.Verdict, c.P)
	}
	// Identical constant runs: no difference, not an error.
	if v := Compare([]float64{5, 5, 5, 5}, []float64{5, 5, 5, 5}, 0.05).Verdict; v != NoDifference {
		t.Errorf("constant: %v", v)
	}
	if v := Compare(nil, []float64{1}, 0.05).Verdict; v != NoData {
		t.Errorf("empty: %v", v)
	}
}

func TestSummarize(t *testing.T) {
	s, err := Summarize([]float64{5, 1, 4, 2, 3, 9, 7, 8, 6, 10}, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	// Median of 1..10 is 5.5; the 95% order-statistic interval for n=10 is
	// [x(2), x(9)] (Conover, Practical Nonparametric Statistics, table A3).
	if s.Median != 5.5 || s.Lo != 2 || s.Hi != 9 {
		t.Errorf("got %+v, want median 5.5 in [2, 9]", s)
	}
	if _, err := Summarize(nil, 0.95); err == nil {
		t.Error("no error for no values")
	}
}

func TestUStatisticTies(t *testing.T) {
	// Pairs (a > b) with ties as one half, counted by hand: each a=2
	// beats b=1 and ties both b=2 (1 + 0.5 + 0.5 = 2), a=3 beats 1, 2, 2
	// (3): 2 + 2 + 3 = 7. scipy.stats.mannwhitneyu([2,2,3], [1,2,2,4])
	// gives statistic 7.0 too.
	if u := uStatistic([]float64{2, 2, 3}, []float64{1, 2, 2, 4}); u != 7 {
		t.Errorf("U = %v, want 7", u)
	}
}

func TestVerdictText(t *testing.T) {
	for _, v := range []Verdict{NoDifference, Significant, TooFewRuns, NoData} {
		b, _ := v.MarshalText()
		var back Verdict
		if err := back.UnmarshalText(b); err != nil || back != v {
			t.Errorf("%v: round trip gave %v, %v", v, back, err)
		}
	}
	var v Verdict
	if err := v.UnmarshalText([]byte("maybe")); err == nil {
		t.Error("no error for an unknown verdict")
	}
}

// TestMinRuns checks the run counts against the order statistics by hand:
// the exact U test's smallest two-sided p is 2/C(2n, n) (0.1 at 3+3,
// 0.029 at 4+4, 0.0079 at 5+5, 0.0022 at 6+6, 0.00058 at 7+7), and the distribution-free interval of the
// median from n values exists once the outermost order statistics cover it
// at the confidence, 1 - 2·0.5^n (0.9375 at 5, 0.969 at 6, 0.984 at 7,
// 0.992 at 8).
func TestMinRuns(t *testing.T) {
	for _, tc := range []struct {
		alpha float64
		want  int
	}{{0.05, 4}, {0.1, 3}, {0.01, 5}, {0.2, 3}, {0.001, 7}} {
		if got := MinRunsForVerdict(tc.alpha); got != tc.want {
			t.Errorf("MinRunsForVerdict(%v) = %d, want %d", tc.alpha, got, tc.want)
		}
	}
	for _, tc := range []struct {
		conf float64
		want int
	}{{0.95, 6}, {0.9, 5}, {0.99, 8}, {0.97, 7}, {0, 0}, {1, 0}} {
		if got := MinRunsForInterval(tc.conf); got != tc.want {
			t.Errorf("MinRunsForInterval(%v) = %d, want %d", tc.conf, got, tc.want)
		}
	}
}
