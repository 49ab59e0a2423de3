package prove

import (
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/comparison"
)

// sides builds off and on sides from per-run values of each metric; the
// unit and direction come from the name: *_p99*, cpu* lower is better,
// the rest higher.
func compare(t *testing.T, off, on map[string][]float64, c Criteria) *comparison.Result {
	t.Helper()
	side := func(name string, vals map[string][]float64) comparison.Side {
		s := comparison.Side{Name: name}
		n := 0
		for _, v := range vals {
			n = max(n, len(v))
		}
		for i := range n {
			r := comparison.Run{Metrics: map[string]comparison.Measure{}}
			for m, v := range vals {
				if i >= len(v) {
					continue
				}
				b, u := comparison.HigherIsBetter, "ops/s"
				if strings.Contains(m, "_p99") || strings.HasPrefix(m, "cpu") {
					b, u = comparison.LowerIsBetter, "s"
				}
				r.Metrics[m] = comparison.Measure{Unit: u, Better: b, Value: v[i]}
			}
			s.Runs = append(s.Runs, r)
		}
		return s
	}
	r, err := comparison.Compare([]comparison.Side{side("off", off), side("on", on)}, comparison.Options{Primary: c.Primary, Guards: c.Guards})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Criteria are the primary and guard rows of a test comparison.
type Criteria struct{ Primary, Guards []string }

func TestDecide(t *testing.T) {
	low := []float64{10, 11, 12, 13, 14}
	high := []float64{20, 21, 22, 23, 24}
	mixed := []float64{10, 21, 12, 23, 14}
	same := []float64{12, 12, 12, 12, 12}
	one := Criteria{Primary: []string{"commit_p99"}, Guards: []string{"cpu_per_io", "commit_p999"}}
	two := Criteria{Primary: []string{"commit_p99", "commit_ops_per_sec"}, Guards: []string{"cpu_per_io"}}
	for _, tt := range []struct {
		name    string
		off, on map[string][]float64
		c       Criteria
		keep    bool
		reason  string
	}{
		{"primary better, guards quiet", map[string][]float64{"commit_p99": high, "cpu_per_io": same, "commit_p999": mixed},
			map[string][]float64{"commit_p99": low, "cpu_per_io": same, "commit_p999": mixed}, one,
			true, "significantly better: commit_p99 -45.5% (p=0.0079)"},
		{"primary better, guard worse", map[string][]float64{"commit_p99": high, "cpu_per_io": low, "commit_p999": mixed},
			map[string][]float64{"commit_p99": low, "cpu_per_io": high, "commit_p999": mixed}, one,
			false, "guard cpu_per_io +83.3% (p=0.0079) worse (primary better: commit_p99 -45.5% (p=0.0079))"},
		{"primary worse", map[string][]float64{"commit_p99": low, "cpu_per_io": same, "commit_p999": same},
			map[string][]float64{"commit_p99": high, "cpu_per_io": same, "commit_p999": same}, one,
			false, "primary commit_p99 +83.3% (p=0.0079) worse"},
		{"nothing moved", map[string][]float64{"commit_p99": mixed, "cpu_per_io": same, "commit_p999": same},
			map[string][]float64{"commit_p99": mixed, "cpu_per_io": same, "commit_p999": same}, one,
			false, "no significant difference: commit_p99 +0.0% (p=1)"},
		{"constant and equal", map[string][]float64{"commit_p99": same, "cpu_per_io": same, "commit_p999": same},
			map[string][]float64{"commit_p99": same, "cpu_per_io": same, "commit_p999": same}, one,
			false, "no significant difference"},
		{"nothing moved but a guard got worse", map[string][]float64{"commit_p99": mixed, "cpu_per_io": low, "commit_p999": same},
			map[string][]float64{"commit_p99": mixed, "cpu_per_io": high, "commit_p999": same}, one,
			false, "no significant difference: commit_p99 +0.0% (p=1); guard cpu_per_io +83.3% (p=0.0079) worse"},
		{"three runs cannot decide", map[string][]float64{"commit_p99": high[:3], "cpu_per_io": same[:3], "commit_p999": same[:3]},
			map[string][]float64{"commit_p99": low[:3], "cpu_per_io": same[:3], "commit_p999": same[:3]}, one,
			false, "too few runs for a verdict: 3 and 3 runs cannot reach p ≤ 0.05; run at least 4 per side (--runs)"},
		// Four runs fully separated give p = 0.029: enough at 0.05.
		{"four runs decide", map[string][]float64{"commit_p99": high[:4], "cpu_per_io": same[:4], "commit_p999": same[:4]},
			map[string][]float64{"commit_p99": low[:4], "cpu_per_io": same[:4], "commit_p999": same[:4]}, one,
			true, "(p=0.029)"},
		{"two primaries, both better", map[string][]float64{"commit_p99": high, "commit_ops_per_sec": low, "cpu_per_io": same},
			map[string][]float64{"commit_p99": low, "commit_ops_per_sec": high, "cpu_per_io": same}, two,
			true, "significantly better: commit_p99 -45.5% (p=0.0079); commit_ops_per_sec +83.3% (p=0.0079)"},
		{"two primaries disagree", map[string][]float64{"commit_p99": high, "commit_ops_per_sec": high, "cpu_per_io": same},
			map[string][]float64{"commit_p99": low, "commit_ops_per_sec": low, "cpu_per_io": same}, two,
			false, "primary metrics disagree: commit_p99 -45.5% (p=0.0079); commit_ops_per_sec -45.5% (p=0.0079)"},
		{"the first primary decides", map[string][]float64{"commit_p99": high, "commit_ops_per_sec": mixed, "cpu_per_io": same},
			map[string][]float64{"commit_p99": low, "commit_ops_per_sec": mixed, "cpu_per_io": same}, two,
			true, "significantly better: commit_p99 -45.5%"},
		{"no primary measured", map[string][]float64{"other": mixed}, map[string][]float64{"other": mixed}, one,
			false, "no primary metric measured"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Decide(compare(t, tt.off, tt.on, tt.c))
			if err != nil {
				t.Fatal(err)
			}
			if d.Keep != tt.keep || !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("Decide = keep %v, %q (%s); want keep %v and a reason containing %q", d.Keep, d.Reason, d.Outcome, tt.keep, tt.reason)
			}
		})
	}
}

func TestDecideErrors(t *testing.T) {
	if _, err := Decide(nil); err == nil {
		t.Error("nil result: no error")
	}
	r := compare(t, map[string][]float64{"a": {1, 2, 3, 4}}, map[string][]float64{"a": {1, 2, 3, 4}}, Criteria{Primary: []string{"a"}})
	r.Verdicts = nil
	if _, err := Decide(r); err == nil {
		t.Error("a result without a verdict: no error")
	}
}

func TestDefaultRuns(t *testing.T) {
	for _, tt := range []struct {
		alpha float64
		want  int
	}{
		{0.05, 4}, {0.01, 5}, {0.1, 4}, {0.001, 7},
	} {
		if got := DefaultRuns(tt.alpha); got != tt.want {
			t.Errorf("DefaultRuns(%v) = %d, want %d", tt.alpha, got, tt.want)
		}
	}
}
