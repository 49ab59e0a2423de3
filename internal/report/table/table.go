// Package table writes the tables of every command (doctor, net, compare,
// diff, net drops, bench, fleet): columns aligned by text/tabwriter with
// two spaces between them for a person, tab-separated lines for a program
// when stdout is not a terminal, or a Markdown table. One writer, so every
// table looks the same and every Markdown cell is escaped the same way.
package table

import (
	"io"
	"strings"
	"text/tabwriter"
	"unicode"
)

// Writer collects rows and aligns them on Flush. Cells must not hold tabs
// or newlines (they would split a cell or a row); a Markdown table
// escapes its cells itself.
type Writer struct {
	w        io.Writer
	tw       *tabwriter.Writer // nil: tab-separated or Markdown
	markdown bool
	md       MarkdownOptions
	rows     int
}

// Align is a Markdown column's alignment, set by its delimiter row.
type Align byte

const (
	Left  Align = iota // "---", Markdown's default
	Right              // "---:", for figures
)

// MarkdownOptions shape a Markdown table's delimiter row.
type MarkdownOptions struct {
	// Align is each column's alignment; columns past its end are Left.
	Align []Align
	// Padded puts a space either side of each column's dashes
	// ("| --- | ---: |"): compare's metric table has always been written
	// so, and its golden files and the reports people diff keep it.
	Padded bool
}

// NewMarkdown is a Markdown table: the first row is its header, and every
// cell is escaped (MarkdownCell), so text from a host cannot end a cell,
// a row or open HTML.
func NewMarkdown(w io.Writer) *Writer { return &Writer{w: w, markdown: true} }

// NewMarkdownWith is NewMarkdown with its columns aligned as o says.
func NewMarkdownWith(w io.Writer, o MarkdownOptions) *Writer {
	return &Writer{w: w, markdown: true, md: o}
}

// MarkdownCell makes s one table cell's inline text: '|' and a line break
// would end the cell or the row, and Markdown renders raw HTML, so '&',
// '<' and '>' become entities; a backtick could open a code span in which
// the entities show verbatim. Other control characters are dropped.
func MarkdownCell(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '|':
			b.WriteString("&#124;")
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '`':
			b.WriteString("&#96;")
		case r == '\n' || r == '\r' || r == '\t' || r == '\u2028' || r == '\u2029':
			b.WriteByte(' ')
		case unicode.IsControl(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// New is a table aligned in columns two spaces apart.
func New(w io.Writer) *Writer {
	return &Writer{w: w, tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
}

// NewTSV is a table written as tab-separated lines, for a program to read.
func NewTSV(w io.Writer) *Writer { return &Writer{w: w} }

// Code is s as a Markdown code span, its text escaped as a cell's is (a
// backtick in s cannot end the span), for RowMarkdown.
func Code(s string) string { return "`" + MarkdownCell(s) + "`" }

// Row adds one row.
func (t *Writer) Row(cells ...string) {
	if t.markdown {
		esc := make([]string, len(cells))
		for i, c := range cells {
			esc[i] = MarkdownCell(c)
		}
		t.markdownRow(esc)
		return
	}
	line := strings.Join(cells, "\t") + "\n"
	if t.tw != nil {
		io.WriteString(t.tw, line)
		return
	}
	io.WriteString(t.w, line)
}

// RowMarkdown adds one row of a Markdown table whose cells are Markdown
// already (a code span, bold text): the caller has escaped the text in
// them with MarkdownCell or Code. In any other table it is Row.
func (t *Writer) RowMarkdown(cells ...string) {
	if !t.markdown {
		t.Row(cells...)
		return
	}
	t.markdownRow(cells)
}

func (t *Writer) markdownRow(cells []string) {
	line := "| " + strings.Join(cells, " | ") + " |\n"
	if t.rows == 0 {
		line += t.delimiter(len(cells))
	}
	t.rows++
	io.WriteString(t.w, line)
}

// delimiter is the row under the header that makes it a table.
func (t *Writer) delimiter(n int) string {
	d := make([]string, n)
	for i := range d {
		d[i] = "---"
		if i < len(t.md.Align) && t.md.Align[i] == Right {
			d[i] = "---:"
		}
	}
	if t.md.Padded {
		return "| " + strings.Join(d, " | ") + " |\n"
	}
	return "|" + strings.Join(d, "|") + "|\n"
}

// Flush writes the aligned table; rows added after it start a new one.
func (t *Writer) Flush() error {
	t.rows = 0
	if t.tw == nil {
		return nil
	}
	return t.tw.Flush()
}
