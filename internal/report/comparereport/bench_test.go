package comparereport

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/stats"
	"github.com/slowpath/slowpath/internal/testing/comparisontest"
)

// BenchmarkCompareText is the performance case: two results with 10
// runs each and full latency histograms (1800 buckets of 100k I/Os per
// run), compared and rendered as text. Target: ≤ 100 ms. The reference is
// benchstat (golang.org/x/perf/cmd/benchstat, the same statistics) on the
// same per-run figures, timed as a process in the same run; ours is timed in
// process, so the ratio flatters benchstat's side by its process start
// (a few ms).
func BenchmarkCompareText(b *testing.B) {
	sides := []comparison.Side{
		comparisontest.Side(comparisontest.Spec{Name: "plain", Runs: 10, IOPS: 12000, Noise: 0.02, Seconds: 60, Buckets: 1800, Requests: 100000, LoadMs: 4, Seed: 1}),
		comparisontest.Side(comparisontest.Spec{Name: "dm-crypt", Runs: 10, IOPS: 9000, Noise: 0.02, Seconds: 60, Buckets: 1800, Requests: 100000, LoadMs: 9, Crypt: true, Seed: 2}),
	}
	ours := medianOf(11, func() {
		r, err := comparison.Compare(sides, comparison.Options{})
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Write(&buf, r, "text"); err != nil {
			b.Fatal(err)
		}
	})
	for b.Loop() {
		r, _ := comparison.Compare(sides, comparison.Options{})
		_ = Write(&bytes.Buffer{}, r, "text")
	}
	b.ReportMetric(float64(ours.Microseconds())/1000, "ms-text")
	b.ReportMetric(float64(ours)/float64(100*time.Millisecond), "x_of_100ms_budget")

	dir := b.TempDir()
	bin := filepath.Join(dir, "benchstat")
	if out, err := exec.Command("go", "build", "-o", bin, "golang.org/x/perf/cmd/benchstat").CombinedOutput(); err != nil {
		b.Logf("benchstat reference not built (%v): %s", err, out)
		return
	}
	var files []string
	for _, s := range sides {
		f := filepath.Join(dir, s.Name+".txt")
		var sb strings.Builder
		for _, run := range s.Runs {
			// One benchfmt line per run and metric, as `go test -count` writes.
			var names []string
			for m := range run.Metrics {
				names = append(names, m)
			}
			slices.Sort(names)
			fmt.Fprintf(&sb, "BenchmarkSearchIndex 1")
			for _, m := range names {
				fmt.Fprintf(&sb, " %g %s", run.Metrics[m].Value, strings.ReplaceAll(m, " ", "-"))
			}
			sb.WriteString("\n")
		}
		if err := os.WriteFile(f, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		files = append(files, f)
	}
	ref := medianOf(11, func() {
		if out, err := exec.Command(bin, files...).CombinedOutput(); err != nil {
			b.Fatalf("benchstat: %v: %s", err, out)
		}
	})
	b.ReportMetric(float64(ref.Microseconds())/1000, "ms-benchstat")
	b.ReportMetric(float64(ours)/float64(ref), "x_vs_benchstat")
}

func medianOf(n int, f func()) time.Duration {
	d := make([]float64, n)
	for i := range d {
		start := time.Now()
		f()
		d[i] = float64(time.Since(start))
	}
	return time.Duration(stats.Median(d))
}
