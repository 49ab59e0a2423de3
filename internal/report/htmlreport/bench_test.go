package htmlreport

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/testing/chromium"
)

// BenchmarkCompareHTML is the HTML budget for two results of 10 runs
// with full histograms: the file ≤ 2 MB and first paint in Chromium ≤ 1 s.
// Reported as ratios of those budgets; the first contentful paint is the
// median of 3 fresh browser starts (Paint Timing, from navigation start).
func BenchmarkCompareHTML(b *testing.B) {
	r, sides := tenRuns(b)
	var buf bytes.Buffer
	start := time.Now()
	if err := WriteCompare(&buf, r, sides); err != nil {
		b.Fatal(err)
	}
	render := time.Since(start)
	for b.Loop() {
		_ = WriteCompare(&bytes.Buffer{}, r, sides)
	}
	b.ReportMetric(float64(render.Microseconds())/1000, "ms-render")
	b.ReportMetric(float64(buf.Len()), "bytes")
	b.ReportMetric(float64(buf.Len())/(2<<20), "x_of_2MB_budget")
	exe, err := chromium.Find()
	if err != nil {
		b.Logf("first paint not measured: %v", err)
		return
	}
	f := filepath.Join(b.TempDir(), "compare.html")
	if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	var fcp []time.Duration
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		p, err := chromium.Open(ctx, exe, f)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		if p.ChartsDrawn != p.ChartsTotal || len(p.Requests) != 1 {
			b.Fatalf("page did not draw cleanly: %d/%d charts, requests %q", p.ChartsDrawn, p.ChartsTotal, p.Requests)
		}
		fcp = append(fcp, p.FirstContentfulPaint)
	}
	slices.Sort(fcp)
	b.ReportMetric(float64(fcp[1].Microseconds())/1000, "ms-first-paint")
	b.ReportMetric(float64(fcp[1])/float64(time.Second), "x_of_1s_budget")
}
