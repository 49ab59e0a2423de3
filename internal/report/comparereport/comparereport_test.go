package comparereport

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/model/cryptotax"
	"github.com/slowpath/slowpath/internal/testing/comparisontest"
	"github.com/slowpath/slowpath/internal/testing/golden"
	"github.com/slowpath/slowpath/internal/workload/profile"
)

// fixture is three sides: a baseline of 5 runs, dm-crypt 25% slower with 5
// runs (significant on search-index's primary metrics, and not on the
// secondary rows once Holm corrects them), and one run of a third
// configuration (too few runs for a verdict).
func fixture(t testing.TB) *comparison.Result {
	t.Helper()
	sides := []comparison.Side{
		comparisontest.Side(comparisontest.Spec{Name: "plain", Runs: 5, IOPS: 12000, Noise: 0.02, Seconds: 10, Buckets: 300, Requests: 20000, LoadMs: 4, Seed: 1}),
		comparisontest.Side(comparisontest.Spec{Name: "dm-crypt", Runs: 5, IOPS: 9000, Noise: 0.02, Seconds: 10, Buckets: 300, Requests: 20000, LoadMs: 9, Crypt: true, Seed: 2}),
		comparisontest.Side(comparisontest.Spec{Name: "tuned", Runs: 1, IOPS: 11000, Noise: 0.02, Seconds: 10, Buckets: 300, Requests: 20000, LoadMs: 5, Crypt: true, Seed: 3}),
	}
	m, _ := profile.MetricsOf(comparison.CommonProfile(sides))
	r, err := comparison.Compare(sides, comparison.Options{Primary: profile.Rows(m.Primary), Guards: profile.Rows(m.Guards)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestGolden(t *testing.T) {
	r := fixture(t)
	for format, ext := range map[string]string{"text": "txt", "markdown": "md"} {
		var buf bytes.Buffer
		if err := Write(&buf, r, format); err != nil {
			t.Fatal(err)
		}
		golden.Compare(t, filepath.Join("testdata", "three-sides."+ext), buf.Bytes())
	}
}

func TestTextSaysVerdicts(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, fixture(t), "text"); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"cannot decide: needs 4 runs per side", "(p=0.008)", "adjusted p=0.048", "load_p99 (primary)", "dm-crypt vs plain: worse (significant: load_p99, slow_loads); guard worse: read_p999", "encryption layers", "1: dm-crypt (kernel-cpu)"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

// TestJSONRoundTrips: the JSON has one verdict per cell, its own after the
// row's correction (the raw test's only where none could be made), and no
// second one inside comparison to contradict it.
func TestJSONRoundTrips(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, fixture(t), "json"); err != nil {
		t.Fatal(err)
	}
	var back struct {
		FormatVersion int `json:"format_version"`
		Rows          []struct {
			Metric string `json:"metric"`
			Sides  []struct {
				Comparison map[string]any `json:"comparison"`
				Verdict    string         `json:"verdict"`
				Change     string         `json:"change"`
			} `json:"sides"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.FormatVersion != comparison.JSONVersion || len(back.Rows) == 0 {
		t.Fatalf("decoded %+v", back)
	}
	seen := 0
	for _, row := range back.Rows {
		for i, c := range row.Sides[1:] {
			if c.Comparison == nil {
				continue
			}
			if _, two := c.Comparison["verdict"]; two || c.Verdict == "" {
				t.Errorf("%s side %d: comparison %v, verdict %q: want the cell's verdict only", row.Metric, i+1, c.Comparison, c.Verdict)
			}
		}
		if row.Metric == "load_p99" {
			seen++
			if c := row.Sides[1]; c.Verdict != "significant" || c.Change != "worse" {
				t.Errorf("load_p99 dm-crypt: %+v", c)
			}
			if v := row.Sides[2].Verdict; v != "too few runs" {
				t.Errorf("load_p99 tuned: verdict %q, want too few runs", v)
			}
		}
	}
	if seen != 1 {
		t.Errorf("no load_p99 row")
	}
	if err := Write(&buf, fixture(t), "yaml"); err == nil {
		t.Error("no error for an unknown format")
	}
}

// TestMarkdownHostileCells: names, sources, metrics and facts with '|',
// line breaks, HTML and backticks stay inside their cell: every table row
// has its column count of unescaped '|', and no raw '<' reaches the
// document.
func TestMarkdownHostileCells(t *testing.T) {
	r := fixture(t)
	hostile := "a|b\nc\r<script>x</script>`code|`\\|"
	r.Sides[0].Name = hostile
	r.Sides[1].Sources = []string{"/tmp/" + hostile + ".json"}
	r.Rows[0].Metric = hostile
	r.Environment = append(r.Environment, comparison.EnvDiff{Key: hostile, Values: []string{hostile, "x", "y"}})
	// The annotations too: setup, sides not run, the tax's cipher, caveat
	// and a side's name.
	r.Title = hostile
	r.Setup = []comparison.Fact{{Key: hostile, Value: hostile}}
	r.FiguresNote = hostile
	r.NotRun = []comparison.NotRun{{Name: hostile, Reason: hostile}}
	ratio := 2.5
	r.Tax = &comparison.Tax{CipherBytesPerSecPerCore: 1e9, Cipher: hostile, Caveat: hostile, Shape: &comparison.TaxShape{Phase: hostile, BytesPerIO: 4096, QueueDepth: 1},
		Sides: []comparison.TaxSide{{Name: hostile, LayersMore: 1, ExpectedPerIOSeconds: 4e-6, ObservedPerIOSeconds: 1e-5, Ratio: &ratio, Verdict: hostile}, {Name: hostile, LayersMore: 2, NotComputed: hostile, Verdict: "unknown"}}}
	var buf bytes.Buffer
	if err := Write(&buf, r, "markdown"); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "<") || strings.Contains(out, "`") || strings.Contains(out, "\r") {
		t.Errorf("raw markup in the Markdown:\n%s", out)
	}
	cols := 0
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "|") {
			cols = 0
			continue
		}
		n := strings.Count(line, "|")
		if cols == 0 {
			cols = n
		} else if n != cols {
			t.Errorf("row with %d '|', table has %d: %q", n, cols, line)
		}
	}
	if !strings.Contains(out, "## Encryption tax") || !strings.Contains(out, "## Not run") {
		t.Errorf("annotations missing:\n%s", out)
	}
	if !strings.Contains(out, "a&#124;b c") {
		t.Errorf("escaped name not found:\n%s", out)
	}
}

// TestAnnotationsInEveryFormat: what a front end adds to the result (lab
// crypt's setup, figures label, sides not run, the tax) is in text,
// Markdown and JSON alike.
func TestAnnotationsInEveryFormat(t *testing.T) {
	r := fixture(t)
	r.Title = "slowpath lab crypt"
	r.Setup = []comparison.Fact{{Key: "backing", Value: "ram:1G (/dev/ram0)"}}
	r.Figures, r.FiguresNote = "emulated", "functional (emulated CPU)"
	r.NotRun = []comparison.NotRun{{Name: "high_priority", Reason: "needs dm-crypt target v1.26.0"}}
	if err := comparison.AssessTax(r, comparison.TaxInput{Limit: cryptotax.Limit{BytesPerSecPerCore: 1e9, Source: "af_alg"}, Layers: []int{0, 1, 1},
		Shape: &comparison.TaxShape{IOPS: []string{"read_iops"}, BytesPerIO: 4096, QueueDepth: 8}}); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "markdown", "json"} {
		var b bytes.Buffer
		if err := Write(&b, r, format); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"slowpath lab crypt", "ram:1G (/dev/ram0)", "functional (emulated CPU)", "high_priority", "needs dm-crypt target v1.26.0",
			"1.00 GB/s per core: af_alg", "dm-crypt", "tuned", cryptotax.VerdictFarAbove} {
			if format == "json" && want == "1.00 GB/s per core: af_alg" {
				want = `"cipher": "af_alg"`
			}
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s lacks %q", format, want)
			}
		}
	}
}
