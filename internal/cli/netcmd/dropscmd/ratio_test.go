package dropscmd

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPerfRatios: the benchmarks compare perf record with slowpath both
// ways it runs, reasons only and with stacks, and never divide by less
// than the empty program's cost (or eps), so noise cannot inflate a ratio.
func TestPerfRatios(t *testing.T) {
	got := perfRatios(map[string]float64{"perf": 60, "reasons": 2, "stacks": 6, "floor": 3}, 0.1)
	want := map[string]float64{"perf/reasons-cost": 20, "perf/stacks-cost": 10}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
	got = perfRatios(map[string]float64{"perf": 1, "reasons": -1, "stacks": 0, "floor": -2}, 0.5)
	want = map[string]float64{"perf/reasons-cost": 2, "perf/stacks-cost": 2}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("noise below the floor (-want +got)\n%s", d)
	}
}
