package comparison_test

import (
	"testing"

	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/comparison/comparisontest"
	"github.com/slowpath/slowpath/internal/stats"
)

func oneRun(name string, iops float64, seed uint64) comparison.Side {
	return comparisontest.Side(comparisontest.Spec{Name: name, Runs: 1, IOPS: iops, Noise: 0.02, Seconds: 20, Buckets: 400, Requests: 50000, LoadMs: 4, Seed: seed})
}

// One run per side can never give a verdict across runs; the evidence
// inside the runs (bootstrap intervals of percentiles, U over seconds of a
// rate) still tells a 40% shift from noise.
func TestWithinRunEvidence(t *testing.T) {
	for _, tc := range []struct {
		name   string
		b      float64
		signif bool
		change string
	}{
		{"same configuration", 10000, false, ""},
		{"40% faster", 14000, true, "better"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := comparison.Compare([]comparison.Side{oneRun("a", 10000, 11), oneRun("b", tc.b, 12)}, comparison.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range r.Rows {
				if row.Metric != "read IOPS" && row.Metric != "read p99" {
					continue
				}
				c := row.Cells[1]
				if c.Comparison.Verdict != stats.TooFewRuns {
					t.Errorf("%s: verdict %v, want too few runs", row.Metric, c.Comparison.Verdict)
				}
				if c.WithinRun == nil || c.WithinRun.Significant != tc.signif || c.WithinRun.Change != tc.change {
					t.Errorf("%s: within run %+v, want significant=%v change %q", row.Metric, c.WithinRun, tc.signif, tc.change)
				}
				if c.Change != "" {
					t.Errorf("%s: evidence inside runs marked the cell %q", row.Metric, c.Change)
				}
			}
		})
	}
}
