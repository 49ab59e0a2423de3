package stats

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestHolm(t *testing.T) {
	approx := cmpopts.EquateApprox(0, 1e-12)
	for _, tc := range []struct {
		name string
		ps   []float64
		want []float64
	}{
		// Holm's method worked by hand on the four p-values of the
		// Wikipedia article "Holm–Bonferroni method" (example section):
		// sorted 0.005, 0.01, 0.03, 0.04 are compared with 0.05/4, /3,
		// /2, /1; the first two are rejected, 0.03 > 0.025 stops. The
		// adjusted values 4·0.005, 3·0.01, max(2·0.03, ·), max(1·0.04,
		// 0.06) are what R's p.adjust(c(.01,.04,.03,.005), "holm") prints.
		{"wikipedia", []float64{0.01, 0.04, 0.03, 0.005}, []float64{0.03, 0.06, 0.06, 0.02}},
		// Holm (1979) section 3: capped at 1 and monotone in the order.
		{"capped", []float64{0.5, 0.9, 0.001}, []float64{1, 1, 0.003}},
		{"ties", []float64{0.02, 0.02}, []float64{0.04, 0.04}},
		{"one", []float64{0.03}, []float64{0.03}},
		{"empty", nil, []float64{}},
		{"nan is 1", []float64{math.NaN(), 0.01}, []float64{1, 0.02}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Holm(tc.ps)
			if d := cmp.Diff(tc.want, got, approx, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("Holm(%v) (-want +got):\n%s", tc.ps, d)
			}
		})
	}
}

// TestHolmRejectsAsStepDown checks the adjusted values against the
// procedure as Holm states it (reject sorted H(1)..H(k-1) where k is the
// first with p(k) > alpha/(m-k+1)) at many alphas.
func TestHolmRejectsAsStepDown(t *testing.T) {
	ps := []float64{0.001, 0.012, 0.013, 0.04, 0.2, 0.0125, 0.7}
	sorted := []float64{0.001, 0.012, 0.0125, 0.013, 0.04, 0.2, 0.7}
	adj := Holm(ps)
	for _, alpha := range []float64{0.001, 0.005, 0.007, 0.01, 0.05, 0.08, 0.1, 0.2, 0.5} {
		k := 0
		for k < len(sorted) && sorted[k] <= alpha/float64(len(sorted)-k) {
			k++
		}
		rejected := 0
		for _, a := range adj {
			if a <= alpha {
				rejected++
			}
		}
		if rejected != k {
			t.Errorf("alpha %v: %d adjusted p-values at or below it, the step-down rejects %d", alpha, rejected, k)
		}
	}
}

func TestFixedSequence(t *testing.T) {
	for _, tc := range []struct {
		ps, want []float64
	}{
		{[]float64{0.03, 0.01, 0.2, 0.001}, []float64{0.03, 0.03, 0.2, 0.2}},
		{[]float64{0.3, 0.001}, []float64{0.3, 0.3}},
		{[]float64{math.NaN(), 0.001}, []float64{1, 1}},
		{nil, []float64{}},
	} {
		if d := cmp.Diff(tc.want, FixedSequence(tc.ps), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("FixedSequence(%v) (-want +got):\n%s", tc.ps, d)
		}
	}
}

// FuzzHolm checks properties every correct Holm adjustment has exactly, in
// floating point too: no adjusted p below its raw p (for p in [0, 1]) or
// above min(1, m·p), and the order of the raw p-values kept (equal raw
// p-values get equal adjusted ones).
func FuzzHolm(f *testing.F) {
	f.Add([]byte{1, 40, 30, 5})
	f.Add([]byte{255, 0, 7, 7, 128})
	f.Fuzz(func(t *testing.T, b []byte) {
		ps := make([]float64, len(b))
		for i, v := range b {
			ps[i] = float64(v) / 255
		}
		adj := Holm(ps)
		m := float64(len(ps))
		for i := range ps {
			if adj[i] < ps[i] || adj[i] > math.Min(1, m*ps[i]) {
				t.Fatalf("p %v adjusted to %v (m %v)", ps[i], adj[i], m)
			}
			for j := range ps {
				if ps[i] < ps[j] && adj[i] > adj[j] || ps[i] == ps[j] && adj[i] != adj[j] {
					t.Fatalf("order lost: p %v -> %v, p %v -> %v", ps[i], adj[i], ps[j], adj[j])
				}
			}
		}
	})
}
