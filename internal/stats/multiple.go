package stats

import (
	"math"
	"sort"
)

// Holm returns Holm's step-down adjusted p-values of ps, in ps's order
// (Holm 1979, "A simple sequentially rejective multiple test procedure",
// Scand. J. Statist. 6:65-70; adjusted p-values as Wright 1992, Biometrics
// 48:1005-1013, and R's p.adjust(method = "holm")). With m p-values sorted
// ascending, the i-th (1-based) is adjusted to max over j <= i of
// min(1, (m-j+1)·p(j)); rejecting every hypothesis whose adjusted p is at
// most alpha keeps the chance of any false rejection at most alpha, whatever
// the dependence between the tests. NaN counts as 1.
func Holm(ps []float64) []float64 {
	m := len(ps)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	p := func(i int) float64 {
		if math.IsNaN(ps[i]) {
			return 1
		}
		return ps[i]
	}
	sort.SliceStable(idx, func(a, b int) bool { return p(idx[a]) < p(idx[b]) })
	out := make([]float64, m)
	run := 0.0
	for j, i := range idx {
		run = math.Max(run, math.Min(1, float64(m-j)*p(i)))
		out[i] = run
	}
	return out
}

// FixedSequence returns the adjusted p-values of hypotheses tested in a
// fixed, declared order, each at the full alpha, stopping at the first that
// is not rejected (Maurer, Hothorn and Lehmacher 1995; Westfall and Krishen
// 2001, J. Statist. Plann. Inference 99:25-40): the k-th is adjusted to the
// largest p among the first k. It keeps the family-wise error at alpha
// because the second hypothesis is only looked at once the first was
// rejected at alpha, and needs no split of alpha, so 4 runs per side
// (smallest p 0.029) still reach a verdict at 0.05. NaN counts as 1.
func FixedSequence(ps []float64) []float64 {
	out := make([]float64, len(ps))
	run := 0.0
	for i, p := range ps {
		if math.IsNaN(p) {
			p = 1
		}
		run = math.Max(run, math.Min(1, p))
		out[i] = run
	}
	return out
}
