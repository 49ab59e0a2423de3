package dropsreport

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/dropreport"
	"github.com/slowpath/slowpath/internal/testing/golden"
	"github.com/slowpath/slowpath/internal/testing/mdcheck"
)

// TestMarkdownGolden renders the recorded captures TestRecordedFlood and
// TestNoReasonsCapture render as text: the same facts, as a table and lists.
func TestMarkdownGolden(t *testing.T) {
	flood := readCapture(t, "flood.capture.json")
	floodRep := dropreport.Summarize(flood, dropreport.NewSymbols(flood.Symbols), dropreport.SummaryOptions{})
	old := readCapture(t, "nodropreasons-5.10.capture.json")
	oldRep := dropreport.Summarize(old, kallsyms510(t), dropreport.SummaryOptions{IfNames: old.IfNames})
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

// markdown is what the drops' Markdown keeps: the table's seven cells a
// row.
var markdown = mdcheck.Rules{Cells: 7}

// TestMarkdownHostile: a reason, function, interface or hint holding a
// pipe, a backtick, a newline or HTML stays text in its cell.
func TestMarkdownHostile(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, hostile(mdcheck.Hostile("eth0")), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	markdown.Check(t, out)
	for _, want := range []string{mdcheck.Escaped("eth0"), "| LOCATION | COUNT | PER SEC |"} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
}

// FuzzWriteMarkdown: whatever the kernel or a recording names, the
// Markdown holds no HTML, its table rows keep their cells and every code
// span closes on its line.
func FuzzWriteMarkdown(f *testing.F) {
	markdown.Fuzz(f, "eth0", func(w io.Writer, s string) error {
		return WriteMarkdown(w, hostile(s), TextOptions{})
	})
}
