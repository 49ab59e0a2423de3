package comparison

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/slowpath/slowpath/internal/stats"
)

var splitSpecs = []StepSpec{
	{Part: "queueing", From: "plain", To: "null"},
	{Part: "cipher", From: "null", To: "aes"},
	{Part: "bypass", From: "aes", To: "bypass"},
	{Part: "not run", From: "aes", To: "missing"},
}

// TestSplit: each step is the change between two sides, with the exact U
// test's p (6 runs a side, completely separated: 2/C(12,6) = 2/924) and
// Holm over the three steps that ran (all equal: 3 × 2/924).
func TestSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	res, err := Compare([]Side{
		{Name: "plain", Runs: runs(r, 6, 100000, 0.01)},
		{Name: "null", Runs: runs(r, 6, 60000, 0.01)},
		{Name: "aes", Runs: runs(r, 6, 25000, 0.01)},
		{Name: "bypass", Runs: runs(r, 6, 90000, 0.01)},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := Split(res, "read IOPS", splitSpecs)
	if s == nil || len(s.Steps) != 3 {
		t.Fatalf("split %+v: want three steps (the fourth's side did not run)", s)
	}
	p := 2.0 / 924
	want := []struct {
		part, change string
		delta        float64
	}{{"queueing", "worse", -40}, {"cipher", "worse", -58.3}, {"bypass", "better", 260}}
	for i, st := range s.Steps {
		w := want[i]
		if st.Part != w.part || st.Change != w.change || st.Verdict != stats.Significant {
			t.Errorf("step %d: %+v, want %s %s significant", i, st, w.part, w.change)
		}
		if math.Abs(st.DeltaPct-w.delta) > 0.05*math.Abs(w.delta) {
			t.Errorf("%s: %+.1f%%, want about %+.1f%%", st.Part, st.DeltaPct, w.delta)
		}
		if math.Abs(st.P-p) > 1e-9 || math.Abs(st.AdjustedP-3*p) > 1e-9 {
			t.Errorf("%s: p %v adjusted %v, want %v and %v", st.Part, st.P, st.AdjustedP, p, 3*p)
		}
	}
	if s.Steps[1].FromMedian != cell(t, res, "read IOPS", 1).Median || s.Steps[1].ToMedian != cell(t, res, "read IOPS", 2).Median {
		t.Errorf("cipher step medians %v → %v, want the null and aes sides'", s.Steps[1].FromMedian, s.Steps[1].ToMedian)
	}
	if Split(res, "no such row", splitSpecs) != nil || Split(res, "read IOPS", splitSpecs[3:]) != nil {
		t.Error("a split without a row or without a step that ran")
	}
}

// TestSplitTooFewRuns: 4 runs a side reach p 2/70 at best, which Holm over
// three steps takes above 0.05: the steps say too few runs, never "no
// difference".
func TestSplitTooFewRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	res, err := Compare([]Side{
		{Name: "plain", Runs: runs(r, 4, 100000, 0.01)},
		{Name: "null", Runs: runs(r, 4, 60000, 0.01)},
		{Name: "aes", Runs: runs(r, 4, 25000, 0.01)},
		{Name: "bypass", Runs: runs(r, 4, 90000, 0.01)},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range Split(res, "read IOPS", splitSpecs).Steps {
		if st.Verdict != stats.TooFewRuns || st.Change != "" {
			t.Errorf("%s: %v %q, want too few runs", st.Part, st.Verdict, st.Change)
		}
	}
}

// TestSplitAA: sides that are the same configuration (every run from one
// distribution) make a step significant in at most alpha of the trials:
// Holm keeps the family-wise rate over the steps at alpha. 400 seeded
// trials of 6 runs a side and three steps; the bound is alpha plus three
// binomial standard deviations.
func TestSplitAA(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const trials = 400
	hits := 0
	for range trials {
		res, err := Compare([]Side{
			{Name: "plain", Runs: runs(r, 6, 50000, 0.05)},
			{Name: "null", Runs: runs(r, 6, 50000, 0.05)},
			{Name: "aes", Runs: runs(r, 6, 50000, 0.05)},
			{Name: "bypass", Runs: runs(r, 6, 50000, 0.05)},
		}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range Split(res, "read IOPS", splitSpecs).Steps {
			if st.Verdict == stats.Significant {
				hits++
				break
			}
		}
	}
	alpha := stats.DefaultAlpha
	bound := alpha*trials + 3*math.Sqrt(trials*alpha*(1-alpha))
	t.Logf("A/A: a significant step in %d of %d trials (alpha %.2f, bound %.0f)", hits, trials, alpha, bound)
	if float64(hits) > bound {
		t.Errorf("a significant step in %d of %d A/A trials, more than alpha allows (%.0f)", hits, trials, bound)
	}
}
