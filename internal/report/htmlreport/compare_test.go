package htmlreport

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/model/cryptotax"
	"github.com/slowpath/slowpath/internal/report/htmlpage"
	"github.com/slowpath/slowpath/internal/testing/comparisontest"
	"github.com/slowpath/slowpath/internal/workload/profile"
)

// tenRuns is the performance case of the compare issue: two results with
// 10 runs each and full histograms (1800 buckets, fio json+'s order).
func tenRuns(t testing.TB) (*comparison.Result, []comparison.Side) {
	t.Helper()
	sides := []comparison.Side{
		comparisontest.Side(comparisontest.Spec{Name: "plain", Runs: 10, IOPS: 12000, Noise: 0.02, Seconds: 60, Buckets: 1800, Requests: 100000, LoadMs: 4, Seed: 1}),
		comparisontest.Side(comparisontest.Spec{Name: "dm-crypt", Runs: 10, IOPS: 9000, Noise: 0.02, Seconds: 60, Buckets: 1800, Requests: 100000, LoadMs: 9, Crypt: true, Seed: 2}),
	}
	m, _ := profile.MetricsOf(comparison.CommonProfile(sides))
	r, err := comparison.Compare(sides, comparison.Options{Primary: profile.Rows(m.Primary), Guards: profile.Rows(m.Guards)})
	if err != nil {
		t.Fatal(err)
	}
	return r, sides
}

func TestCompareHTMLInChromium(t *testing.T) {
	r, sides := tenRuns(t)
	var buf bytes.Buffer
	if err := WriteCompare(&buf, r, sides); err != nil {
		t.Fatal(err)
	}
	if buf.Len() > 2<<20 {
		t.Errorf("report is %d bytes, over the 2 MB budget", buf.Len())
	}
	out := buf.String()
	for _, want := range []string{"read_iops", "-25.", "load_p99 (primary)", "dm-crypt vs plain: worse", "(p&lt;0.001)", `"type":"scatter"`, `"type":"tree"`, `"type":"log"`, "Storage path: dm-crypt", "encryption layers"} {
		if !strings.Contains(out, want) {
			t.Errorf("compare HTML lacks %q", want)
		}
	}
	p := openInChromium(t, buf.Bytes())
	// Two CDFs (reads, index loads), timeline, scatter, two storage paths.
	if p.ChartsTotal != 6 {
		t.Errorf("%d charts, want 6 (read and load CDFs, timeline, loads, 2 storage paths)", p.ChartsTotal)
	}
	t.Logf("%d bytes, first contentful paint %v", buf.Len(), p.FirstContentfulPaint)
}

func TestCDFPointsKeepTheTail(t *testing.T) {
	_, sides := tenRuns(t)
	h, ok := merged(sides[0], "read")
	if !ok {
		t.Fatal("no read histogram")
	}
	pts := cdfPoints(h)
	if len(pts) > maxCDFPoints {
		t.Errorf("%d points, want at most %d", len(pts), maxCDFPoints)
	}
	last := pts[len(pts)-1]
	if last[1] != 100 {
		t.Errorf("CDF ends at %v%%, want 100", last[1])
	}
	tail := 0
	for i, p := range pts {
		if i > 0 && (p[0] < pts[i-1][0] || p[1] < pts[i-1][1]) {
			t.Fatalf("CDF not monotonic at %d: %v after %v", i, p, pts[i-1])
		}
		if p[1] >= 99 {
			tail++
		}
	}
	if tail < 20 {
		t.Errorf("only %d points above p99: the tail was thinned away", tail)
	}
}

// TestCompareHTMLHostileStrings: names, run labels, sources and facts
// holding markup reach the document only escaped: as text by html/template,
// inside the chart JSON with '<' as \u003c.
func TestCompareHTMLHostileStrings(t *testing.T) {
	sides := []comparison.Side{
		comparisontest.Side(comparisontest.Spec{Name: "plain", Runs: 2, IOPS: 12000, Noise: 0.02, Seconds: 5, Buckets: 50, Requests: 1000, LoadMs: 4, Seed: 1}),
		comparisontest.Side(comparisontest.Spec{Name: "crypt", Runs: 2, IOPS: 9000, Noise: 0.02, Seconds: 5, Buckets: 50, Requests: 1000, LoadMs: 9, Crypt: true, Seed: 2}),
	}
	const evil = `</script><img src=x onerror=alert(1)>`
	sides[0].Name = "p" + evil
	sides[0].Sources = []string{"/tmp/" + evil + ".json"}
	for i := range sides[1].Runs {
		sides[1].Runs[i].Label = evil
	}
	r, err := comparison.Compare(sides, comparison.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Environment = append(r.Environment, comparison.EnvDiff{Key: evil, Values: []string{evil, evil}})
	var buf bytes.Buffer
	if err := WriteCompare(&buf, r, sides); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "<img src=x") || strings.Contains(out, "onerror=alert(1)>") {
		t.Error("unescaped markup in the HTML report")
	}
	if !strings.Contains(out, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Error("the escaped name is not in the report")
	}
	if n := strings.Count(out, "</script>"); n != 2 {
		t.Errorf("%d </script> in the report, want the page's own 2", n)
	}
}

// TestCompareHTMLAnnotations: the front end's setup, figures label, sides
// not run and the tax are on the page as in the other formats, escaped.
func TestCompareHTMLAnnotations(t *testing.T) {
	r, sides := tenRuns(t)
	r.Title = "slowpath lab crypt"
	r.Setup = []comparison.Fact{{Key: "backing", Value: "ram:1G <b>"}}
	r.FiguresNote = "functional (emulated CPU)"
	r.NotRun = []comparison.NotRun{{Name: "high_priority", Reason: "needs dm-crypt target v1.26.0"}}
	if err := comparison.AssessTax(r, comparison.TaxInput{Limit: cryptotax.Limit{BytesPerSecPerCore: 1e9, Source: "af_alg"}, Layers: []int{0, 1},
		Shape: &comparison.TaxShape{IOPS: []string{"read_iops"}, BytesPerIO: 4096, QueueDepth: 8}}); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteCompare(&b, r, sides); err != nil {
		t.Fatal(err)
	}
	out := string(htmlpage.ElideLibrary(b.Bytes()))
	for _, want := range []string{"<title>slowpath lab crypt</title>", "ram:1G &lt;b&gt;", "Figures: functional (emulated CPU)", "<h2>Not run</h2>", "high_priority",
		"<h2>Encryption tax</h2>", "1.00 GB/s per core: af_alg", "layers more than plain", cryptotax.VerdictFarAbove, "/* echarts " + htmlpage.EChartsVersion + " */"} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(out, "<b>") || len(out) > 1<<20 {
		t.Errorf("unescaped setup or the library not elided (%d bytes)", len(out))
	}
}

// TestWriteCompareFile: the page lands under the requested name, readable
// by all, the same bytes WriteCompare gives, and no temporary file is left
// beside it.
func TestWriteCompareFile(t *testing.T) {
	r, sides := tenRuns(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	if err := WriteCompareFile(path, r, sides); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := WriteCompare(&want, r, sides); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("file differs from WriteCompare's output (%d vs %d bytes)", len(got), want.Len())
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v; want 0644", fi.Mode(), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries in the directory, want the report alone", len(ents))
	}
	if err := WriteCompareFile(filepath.Join(dir, "missing", "r.html"), r, sides); err == nil {
		t.Error("a path in a missing directory was written")
	}
}
