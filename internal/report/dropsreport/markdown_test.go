package dropsreport

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/dropreport"
	"github.com/slowpath/slowpath/internal/testing/golden"
)

// TestMarkdownGolden renders the recorded captures TestRecordedFlood and
// TestNoReasonsCapture render as text: the same facts, as a table and lists.
func TestMarkdownGolden(t *testing.T) {
	flood := readCapture(t, "flood.capture.json")
	floodRep := dropreport.Summarize(flood, dropreport.NewSymbols(flood.Symbols), dropreport.SummaryOptions{})
	old := readCapture(t, "nodropreasons-5.10.capture.json")
	f, err := os.Open(testdata + "kallsyms-5.10.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := dropreport.ParseKallsyms(f)
	if err != nil {
		t.Fatal(err)
	}
	oldRep := dropreport.Summarize(old, syms, dropreport.SummaryOptions{IfNames: old.IfNames})
	for _, tt := range []struct {
		name string
		rep  dropreport.Report
	}{{"flood", floodRep}, {"nodropreasons-5.10", oldRep}} {
		t.Run(tt.name, func(t *testing.T) {
			var md, text bytes.Buffer
			if err := WriteMarkdown(&md, tt.rep, TextOptions{}); err != nil {
				t.Fatal(err)
			}
			golden.Compare(t, testdata+tt.name+".report.md", md.Bytes())
			if err := WriteText(&text, tt.rep, TextOptions{}); err != nil {
				t.Fatal(err)
			}
			// The same facts: the headline, every reason and its count.
			for _, s := range append([]string{headline(tt.rep)}, reasonCells(tt.rep)...) {
				if !strings.Contains(text.String(), s) || !strings.Contains(md.String(), s) {
					t.Errorf("%q not in both the text and the Markdown", s)
				}
			}
		})
	}
}

func reasonCells(r dropreport.Report) []string {
	var s []string
	for _, rc := range r.Reasons {
		row := tableRow(rc, 3)
		s = append(s, row[0], row[1])
	}
	return s
}

// hostile is a report whose every string from the host tries to break
// out: of a cell, a row, a code span, into HTML.
func hostile(s string) dropreport.Report {
	one := uint64(1)
	return dropreport.Report{DurationSeconds: 2, DropReasons: false, Tracepoint: s, Interface: s, RecursionMissesError: s,
		RecursionMisses: nil, LostRecords: 0,
		Hidden: []dropreport.Hidden{{Reason: s, Count: 1}},
		Reasons: []dropreport.ReasonCount{{Reason: s, Count: 7, PerSecond: 3.5, Layer: s, Check: s, Hint: s,
			Locations:  []dropreport.LocationCount{{Function: s, Count: 7}},
			Interfaces: []dropreport.InterfaceCount{{Name: s, Ifindex: 3, Count: one}}}}}
}

// TestMarkdownHostile: a reason, function, interface or hint holding a
// pipe, a backtick, a newline or HTML stays text in its cell.
func TestMarkdownHostile(t *testing.T) {
	const evil = "eth0|<script>x</script>`\n| a | b |"
	var b bytes.Buffer
	if err := WriteMarkdown(&b, hostile(evil), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	checkMarkdown(t, out)
	for _, want := range []string{"eth0&#124;&lt;script&gt;x&lt;/script&gt;&#96; &#124; a &#124; b &#124;", "| LOCATION | COUNT | PER SEC |"} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
}

// checkMarkdown fails on raw HTML or a table row of other than the
// table's seven cells.
func checkMarkdown(t *testing.T, out string) {
	t.Helper()
	if strings.ContainsAny(out, "<>") {
		t.Fatalf("markdown holds raw HTML:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "|") && strings.Count(line, "|") != 8 {
			t.Fatalf("row %q is not seven cells:\n%s", line, out)
		}
		if !strings.HasPrefix(line, "|") && strings.Contains(line, "|") {
			t.Fatalf("line %q outside the table holds a pipe:\n%s", line, out)
		}
		if strings.Count(line, "`")%2 != 0 {
			t.Fatalf("line %q opens a code span it does not close:\n%s", line, out)
		}
	}
}

// FuzzWriteMarkdown: whatever the kernel or a recording names, the
// Markdown holds no HTML, its table rows keep their cells and every code
// span closes on its line.
func FuzzWriteMarkdown(f *testing.F) {
	for _, s := range []string{"eth0", "a|b", "<img src=x>", "`", "a\nb", "\r\n|", "\u2028", "\x00\x1b[31m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b bytes.Buffer
		if err := WriteMarkdown(&b, hostile(s), TextOptions{}); err != nil {
			t.Fatal(err)
		}
		checkMarkdown(t, b.String())
	})
}
