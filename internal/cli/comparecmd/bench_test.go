package comparecmd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/testing/comparisontest"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// BenchmarkCompareCLI is the performance case end to end, as a user
// runs it: `slowpath compare` of two sides with 10 result files each, full
// histograms (1800 fio-style bins of 100k I/Os) and 60 s timelines — reading
// and decoding 20 files, comparing, rendering text (target ≤ 100 ms) — and
// the same with --html (the file ≤ 2 MB). The reference is benchstat
// (golang.org/x/perf/cmd/benchstat, the same U test) on the same figures,
// both timed as processes in the same run (median of 7).
func BenchmarkCompareCLI(b *testing.B) {
	dir := b.TempDir()
	bin := testenv.BuildSlowpath(b)
	var sides []string
	var bench []string
	for _, sp := range []comparisontest.Spec{
		{Name: "plain", Runs: 10, IOPS: 12000, Noise: 0.02, Seconds: 60, Buckets: 1800, Requests: 100000, LoadMs: 4, Seed: 1},
		{Name: "crypt", Runs: 10, IOPS: 9000, Noise: 0.02, Seconds: 60, Buckets: 1800, Requests: 100000, LoadMs: 9, Crypt: true, Seed: 2},
	} {
		var files []string
		var sb strings.Builder
		for i, r := range comparisontest.Results(sp) {
			f := filepath.Join(dir, fmt.Sprintf("%s-%d.json", sp.Name, i+1))
			if err := benchresult.WriteFile(f, r); err != nil {
				b.Fatal(err)
			}
			files = append(files, f)
			sb.WriteString("BenchmarkSearchIndex 1")
			for _, fig := range r.Figures {
				fmt.Fprintf(&sb, " %g %s", fig.Value, fig.Name)
			}
			sb.WriteString("\n")
		}
		sides = append(sides, sp.Name+"="+strings.Join(files, ","))
		bf := filepath.Join(dir, sp.Name+".txt")
		if err := os.WriteFile(bf, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		bench = append(bench, bf)
	}
	run := func(name string, args ...string) time.Duration {
		d := make([]time.Duration, 7)
		for i := range d {
			start := time.Now()
			if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
				b.Fatalf("%s: %v: %s", name, err, out)
			}
			d[i] = time.Since(start)
		}
		slices.Sort(d)
		return d[len(d)/2]
	}
	text := run(bin, append([]string{"compare"}, sides...)...)
	html := filepath.Join(dir, "r.html")
	withHTML := run(bin, append([]string{"compare", "--html", html}, sides...)...)
	st, err := os.Stat(html)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		run(bin, append([]string{"compare"}, sides...)...)
	}
	b.ReportMetric(float64(text.Microseconds())/1000, "ms-text")
	b.ReportMetric(float64(text)/float64(100*time.Millisecond), "x_of_100ms_budget")
	b.ReportMetric(float64(withHTML.Microseconds())/1000, "ms-with-html")
	b.ReportMetric(float64(st.Size()), "html-bytes")
	b.ReportMetric(float64(st.Size())/(2<<20), "x_of_2MB_budget")
	bs := filepath.Join(dir, "benchstat")
	if out, err := exec.Command("go", "build", "-o", bs, "golang.org/x/perf/cmd/benchstat").CombinedOutput(); err != nil {
		b.Logf("benchstat reference not built (%v): %s", err, out)
		return
	}
	ref := run(bs, bench...)
	b.ReportMetric(float64(ref.Microseconds())/1000, "ms-benchstat")
	b.ReportMetric(float64(text)/float64(ref), "x_vs_benchstat")
}
