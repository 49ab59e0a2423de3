package comparereport

import (
	"fmt"
	"io"
	"strings"

	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/report/table"
)

// title is the first line's command: "slowpath compare" unless the front
// end named itself (lab crypt).
func title(r *comparison.Result) string {
	if r.Title != "" {
		return r.Title
	}
	return "slowpath compare"
}

// writeTextSetup prints the comparison's setup facts and what its figures
// are, under the sides.
func writeTextSetup(w io.Writer, r *comparison.Result) {
	for _, f := range r.Setup {
		fmt.Fprintf(w, "%s: %s\n", f.Key, f.Value)
	}
	if r.FiguresNote != "" {
		fmt.Fprintf(w, "%s\n", r.FiguresNote)
	}
}

// writeTextTail prints the sides that did not run, the encryption tax and
// its split, after the environment differences.
func writeTextTail(w io.Writer, r *comparison.Result) {
	if len(r.NotRun) > 0 {
		fmt.Fprintf(w, "\nNot run:\n")
		for _, n := range r.NotRun {
			fmt.Fprintf(w, "  %s: %s\n", n.Name, n.Reason)
		}
	}
	// The split comes last, after whatever the tax printed.
	defer writeTextSplit(w, r.Split)
	t := r.Tax
	if t == nil {
		return
	}
	fmt.Fprintf(w, "\n%s\n", t.Heading())
	for _, l := range taxNotes(r) {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if t.NotComputed != "" {
		fmt.Fprintf(w, "  not computed: %s\n", t.NotComputed)
		return
	}
	if len(t.Sides) == 0 {
		fmt.Fprintf(w, "  no side has more encryption layers than %s\n", r.Sides[0].Name)
	}
	for _, s := range t.Sides {
		fmt.Fprintf(w, "  %s: %s\n", t.Subject(s, r.Sides[0].Name), s.Line)
	}
}

// writeTextSplit prints the tax measured in parts as a table.
func writeTextSplit(w io.Writer, s *comparison.TaxSplit) {
	if s != nil {
		fmt.Fprintf(w, "\n%s\n", s.Heading())
		writeSplitTable(table.New(w), s)
	}
}

// writeMarkdownSplit is writeTextSplit as a Markdown section.
func writeMarkdownSplit(w io.Writer, s *comparison.TaxSplit) {
	if s != nil {
		fmt.Fprintf(w, "\n## %s\n\n", mdEscape(s.Heading()))
		writeSplitTable(table.NewMarkdown(w), s)
	}
}

// writeSplitTable is the split's rows in either kind of table.
func writeSplitTable(tw *table.Writer, s *comparison.TaxSplit) {
	tw.Row(s.Columns()...)
	for _, st := range s.Steps {
		tw.Row(s.Cells(st)...)
	}
	_ = tw.Flush()
}

// taxNotes are the lines under the tax's heading: its caveat and what the
// figures are (the tax is computed from them).
func taxNotes(r *comparison.Result) []string {
	var out []string
	if r.Tax.Caveat != "" {
		out = append(out, r.Tax.Caveat)
	}
	if r.FiguresNote != "" {
		out = append(out, r.FiguresNote)
	}
	return out
}

// writeMarkdownSetup is writeTextSetup as a Markdown list.
func writeMarkdownSetup(w io.Writer, r *comparison.Result) {
	for _, f := range r.Setup {
		fmt.Fprintf(w, "- %s: %s\n", mdEscape(f.Key), mdEscape(f.Value))
	}
	if len(r.Setup) > 0 {
		fmt.Fprintln(w)
	}
	if r.FiguresNote != "" {
		fmt.Fprintf(w, "**Figures:** %s\n\n", mdEscape(r.FiguresNote))
	}
}

// writeMarkdownTail is writeTextTail as Markdown sections; the tax is a
// table.
func writeMarkdownTail(w io.Writer, r *comparison.Result) {
	// The split comes last, after whatever the tax printed.
	defer writeMarkdownSplit(w, r.Split)
	if len(r.NotRun) > 0 {
		fmt.Fprintf(w, "\n## Not run\n\n")
		for _, n := range r.NotRun {
			fmt.Fprintf(w, "- **%s**: %s\n", mdEscape(n.Name), mdEscape(n.Reason))
		}
	}
	t := r.Tax
	if t == nil {
		return
	}
	fmt.Fprintf(w, "\n## Encryption tax\n\n%s.", mdEscape(capitalize(t.Basis())))
	for _, l := range taxNotes(r) {
		fmt.Fprintf(w, " %s.", mdEscape(capitalize(strings.TrimSuffix(l, "."))))
	}
	fmt.Fprintln(w)
	if t.NotComputed != "" {
		fmt.Fprintf(w, "\nNot computed: %s.\n", mdEscape(t.NotComputed))
		return
	}
	if len(t.Sides) == 0 {
		fmt.Fprintf(w, "\nNo side has more encryption layers than %s.\n", mdEscape(r.Sides[0].Name))
		return
	}
	fmt.Fprintln(w)
	tw := table.NewMarkdownWith(w, table.MarkdownOptions{Align: []table.Align{
		table.Left, table.Right, table.Right, table.Right, table.Right, table.Left}})
	tw.Row(t.Columns(r.Sides[0].Name)...)
	for _, s := range t.Sides {
		tw.Row(t.Cells(s)...)
	}
	_ = tw.Flush()
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
