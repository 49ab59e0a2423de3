package htmlreport

import (
	"strings"

	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/model/cryptotax"
	"github.com/slowpath/slowpath/internal/report/htmlpage"
)

// setupBlocks are the comparison's setup facts and what its figures are,
// over the results table.
func setupBlocks(r *comparison.Result) []htmlpage.Block {
	var out []htmlpage.Block
	if len(r.Setup) > 0 {
		t := &htmlpage.Table{Header: []string{"setup", ""}}
		for _, f := range r.Setup {
			t.Rows = append(t.Rows, []htmlpage.Cell{{Text: f.Key}, {Text: f.Value}})
		}
		out = append(out, htmlpage.Block{Table: t})
	}
	if r.FiguresNote != "" {
		out = append(out, htmlpage.Block{Text: "Figures: " + r.FiguresNote})
	}
	return out
}

// tailSections are the sides that did not run and the encryption tax,
// after the environment differences.
func tailSections(r *comparison.Result) []htmlpage.Section {
	var out []htmlpage.Section
	if len(r.NotRun) > 0 {
		t := &htmlpage.Table{Header: []string{"side", "why not"}}
		for _, n := range r.NotRun {
			t.Rows = append(t.Rows, []htmlpage.Cell{{Text: n.Name}, {Text: n.Reason}})
		}
		out = append(out, htmlpage.Section{Heading: "Not run", Blocks: []htmlpage.Block{{Table: t}}})
	}
	t := r.Tax
	if t == nil {
		return append(out, splitSections(r.Split)...)
	}
	text := "The tax " + t.Basis() + "."
	if t.Caveat != "" {
		text += " " + strings.TrimSuffix(t.Caveat, ".") + "."
	}
	if r.FiguresNote != "" {
		text += " " + r.FiguresNote
	}
	blocks := []htmlpage.Block{{Text: text}}
	switch {
	case t.NotComputed != "":
		blocks = append(blocks, htmlpage.Block{Text: "Not computed: " + t.NotComputed + "."})
	case len(t.Sides) == 0:
		blocks = append(blocks, htmlpage.Block{Text: "No side has more encryption layers than " + r.Sides[0].Name + "."})
	default:
		tab := &htmlpage.Table{Header: t.Columns(r.Sides[0].Name)}
		for _, s := range t.Sides {
			tab.Rows = append(tab.Rows, numberRow(t.Cells(s), 1, 4, s.Verdict == cryptotax.VerdictFarAbove))
		}
		blocks = append(blocks, htmlpage.Block{Table: tab})
	}
	out = append(out, htmlpage.Section{Heading: "Encryption tax", Blocks: blocks})
	return append(out, splitSections(r.Split)...)
}

// splitSections is the tax measured in parts, when there is one.
func splitSections(s *comparison.TaxSplit) []htmlpage.Section {
	if s == nil {
		return nil
	}
	tab := &htmlpage.Table{Header: s.Columns()}
	for _, st := range s.Steps {
		tab.Rows = append(tab.Rows, numberRow(s.Cells(st), 2, 5, st.Change == "worse"))
	}
	return []htmlpage.Section{{Heading: "Encryption tax in parts", Blocks: []htmlpage.Block{{Text: s.Heading() + "."}, {Table: tab}}}}
}

// numberRow makes a table row of text cells: columns first..last are
// numbers, and the column after them, the verdict, is marked bad when bad.
func numberRow(texts []string, first, last int, bad bool) []htmlpage.Cell {
	row := make([]htmlpage.Cell, len(texts))
	for i, c := range texts {
		row[i] = htmlpage.Cell{Text: c}
		switch {
		case i >= first && i <= last:
			row[i].Class = "num"
		case i == last+1 && bad:
			row[i].Class = "bad"
		}
	}
	return row
}
