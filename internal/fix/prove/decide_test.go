package prove

import (
	"errors"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/comparison"
)

// sides builds off and on sides from per-run values of each metric; the
// unit and direction come from the name: *_p99*, cpu* lower is better,
// the rest higher.
func compare(t *testing.T, off, on map[string][]float64) *comparison.Result {
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
	r, err := comparison.Compare([]comparison.Side{side("off", off), side("on", on)}, comparison.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

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
			false, "guard cpu_per_io +83.3% (p=0.0079) worse"},
		{"primary worse", map[string][]float64{"commit_p99": low, "cpu_per_io": same, "commit_p999": same},
			map[string][]float64{"commit_p99": high, "cpu_per_io": same, "commit_p999": same}, one,
			false, "primary commit_p99 +83.3% (p=0.0079) worse"},
		{"nothing moved", map[string][]float64{"commit_p99": mixed, "cpu_per_io": same, "commit_p999": same},
			map[string][]float64{"commit_p99": mixed, "cpu_per_io": same, "commit_p999": same}, one,
			false, "no significant difference: commit_p99 +0.0% (p=1)"},
		{"constant and equal", map[string][]float64{"commit_p99": same, "cpu_per_io": same, "commit_p999": same},
			map[string][]float64{"commit_p99": same, "cpu_per_io": same, "commit_p999": same}, one,
			false, "no significant difference"},
		{"three runs cannot decide", map[string][]float64{"commit_p99": high[:3], "cpu_per_io": same[:3], "commit_p999": same[:3]},
			map[string][]float64{"commit_p99": low[:3], "cpu_per_io": same[:3], "commit_p999": same[:3]}, one,
			false, "too few runs for a verdict on commit_p99: 3 and 3 runs cannot reach p ≤ 0.05; run at least 4 per side"},
		// Four runs fully separated give p = 0.029: enough for one
		// primary at 0.05, not for the first of two under Holm (0.025).
		{"four runs, one primary", map[string][]float64{"commit_p99": high[:4], "cpu_per_io": same[:4], "commit_p999": same[:4]},
			map[string][]float64{"commit_p99": low[:4], "cpu_per_io": same[:4], "commit_p999": same[:4]}, one,
			true, "(p=0.029)"},
		{"four runs, two primaries", map[string][]float64{"commit_p99": high[:4], "commit_ops_per_sec": low[:4], "cpu_per_io": same[:4]},
			map[string][]float64{"commit_p99": low[:4], "commit_ops_per_sec": high[:4], "cpu_per_io": same[:4]}, two,
			false, "run at least 5 per side"},
		{"two primaries, both better", map[string][]float64{"commit_p99": high, "commit_ops_per_sec": low, "cpu_per_io": same},
			map[string][]float64{"commit_p99": low, "commit_ops_per_sec": high, "cpu_per_io": same}, two,
			true, "commit_p99 -45.5% (p=0.0079); commit_ops_per_sec +83.3% (p=0.0079)"},
		{"two primaries, one better, one worse", map[string][]float64{"commit_p99": high, "commit_ops_per_sec": high, "cpu_per_io": same},
			map[string][]float64{"commit_p99": low, "commit_ops_per_sec": low, "cpu_per_io": same}, two,
			false, "primary commit_ops_per_sec -45.5% (p=0.0079) worse"},
		{"two primaries, one better, one unmoved", map[string][]float64{"commit_p99": high, "commit_ops_per_sec": mixed, "cpu_per_io": same},
			map[string][]float64{"commit_p99": low, "commit_ops_per_sec": mixed, "cpu_per_io": same}, two,
			true, "significantly better: commit_p99"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Decide(compare(t, tt.off, tt.on), tt.c)
			if err != nil {
				t.Fatal(err)
			}
			if d.Keep != tt.keep || !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("Decide = keep %v, %q; want keep %v and a reason containing %q", d.Keep, d.Reason, tt.keep, tt.reason)
			}
			if len(d.Metrics) != len(tt.c.Primary)+len(tt.c.Guards) {
				t.Errorf("Decide lists %d metrics, want %d: %+v", len(d.Metrics), len(tt.c.Primary)+len(tt.c.Guards), d.Metrics)
			}
		})
	}
}

func TestDecideErrors(t *testing.T) {
	r := compare(t, map[string][]float64{"a": {1, 2, 3, 4}}, map[string][]float64{"a": {1, 2, 3, 4}})
	if _, err := Decide(r, Criteria{Primary: []string{"commit_p99"}}); !errors.Is(err, ErrNoMetric) || !strings.Contains(err.Error(), "primary metric commit_p99") {
		t.Errorf("missing primary: %v", err)
	}
	if _, err := Decide(r, Criteria{Primary: []string{"a"}, Guards: []string{"cpu"}}); !errors.Is(err, ErrNoMetric) {
		t.Errorf("missing guard: %v", err)
	}
	if _, err := Decide(r, Criteria{}); err == nil {
		t.Error("no primary: no error")
	}
	if _, err := Decide(nil, Criteria{Primary: []string{"a"}}); err == nil {
		t.Error("nil result: no error")
	}
}

func TestMinRuns(t *testing.T) {
	for _, tt := range []struct {
		alpha     float64
		primaries int
		want      int
	}{
		{0.05, 1, 4}, {0.05, 2, 5}, {0.01, 1, 5}, {0.1, 1, 3}, {0.05, 0, 4},
	} {
		if got := MinRuns(tt.alpha, tt.primaries); got != tt.want {
			t.Errorf("MinRuns(%v, %d) = %d, want %d", tt.alpha, tt.primaries, got, tt.want)
		}
	}
}
