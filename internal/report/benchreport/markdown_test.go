package benchreport

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/testing/golden"
	"github.com/slowpath/slowpath/internal/testing/mdcheck"
)

// TestMarkdownWithTax: the Markdown says what the text summary says, of
// the same result (TestSummaryWithTax's): the figures, where the time
// went as tables, the tax's lines.
func TestMarkdownWithTax(t *testing.T) {
	r, err := benchresult.ReadFile("../../experiment/testdata/result-tax.json")
	if err != nil {
		t.Fatal(err)
	}
	var md, text bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "testdata/summary-tax.md", md.Bytes())
	if err := WriteSummary(&text, r, SummaryOptions{Tabs: true}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"100 IOPS", "dm-0 await 18 ms vs sda 0.45 ms", "kworker/u4:2-kcryptd/253:0", r.EncryptionTax.Line} {
		if !strings.Contains(text.String(), s) || !strings.Contains(md.String(), s) {
			t.Errorf("%q not in both the text and the Markdown", s)
		}
	}
}

// TestMarkdownHostile: text from the host (the target, a thread's name, a
// device, a replay's problem) ends no cell, opens no HTML and starts no
// code span; a replay's fidelity is a table.
func TestMarkdownHostile(t *testing.T) {
	r, err := benchresult.ReadFile("../../experiment/testdata/result-tax.json")
	if err != nil {
		t.Fatal(err)
	}
	r.Parameters.Target = "/data`|<b>"
	r.WhereTime.Threads[0].Top[0].Comm = "fio|<i>"
	r.WhereTime.Devices[0].Device = "dm-0|x"
	trace := benchresult.BlockTrace{Device: "vda<", IOs: 100, ReadIOs: 60, WriteIOs: 40, IOPS: 10}
	replayed := trace
	replayed.IOs = 120
	r.Fidelity = &benchresult.Fidelity{Mode: "timed", Capture: trace, Replay: &replayed, Timing: &benchresult.ReplayTiming{Ops: 7},
		Skipped: map[string]uint64{"advice": 2}, Problems: []string{"lost | <script>"}}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	mdcheck.Rules{}.Check(t, out)
	for _, bad := range []string{"<b>", "<i>", "<script>", "vda<", "dm-0|x", "fio|<i>", "`|"} {
		if strings.Contains(out, bad) {
			t.Errorf("markdown holds %q raw:\n%s", bad, out)
		}
	}
	for _, want := range []string{"| block requests | capture | replay | change |", "+20.0%", "- schedule: 7 operations", "- not replayed: 2 advice", "- lost &#124; &lt;script&gt;"} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
}

// FuzzWriteMarkdown: whatever the target, a thread, a device or a replay's
// problem is called, the Markdown holds no HTML, its rows keep their
// table's cells and every code span closes on its line.
func FuzzWriteMarkdown(f *testing.F) {
	mdcheck.Rules{}.Fuzz(f, "/data", func(w io.Writer, s string) error {
		r, err := benchresult.ReadFile("../../experiment/testdata/result-tax.json")
		if err != nil {
			return err
		}
		r.Parameters.Target, r.WhereTime.Threads[0].Top[0].Comm, r.WhereTime.Devices[0].Device = s, s, s
		trace := benchresult.BlockTrace{Device: s, IOs: 100}
		r.Fidelity = &benchresult.Fidelity{Mode: "timed", Capture: trace, Replay: &trace, Problems: []string{s}}
		return WriteMarkdown(w, r)
	})
}
