// Package table writes the text tables of every command (compare, diff,
// net drops, bench): columns aligned by text/tabwriter with two spaces
// between them for a person, tab-separated lines for a program when
// stdout is not a terminal, or a Markdown table. One writer, so every
// table looks the same.
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
	rows     int
}

// NewMarkdown is a Markdown table: the first row is its header, and every
// cell is escaped (MarkdownCell), so text from a host cannot end a cell,
// a row or open HTML.
func NewMarkdown(w io.Writer) *Writer { return &Writer{w: w, markdown: true} }

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

// Row adds one row.
func (t *Writer) Row(cells ...string) {
	if t.markdown {
		esc := make([]string, len(cells))
		for i, c := range cells {
			esc[i] = MarkdownCell(c)
		}
		line := "| " + strings.Join(esc, " | ") + " |\n"
		if t.rows == 0 {
			line += "|" + strings.Repeat("---|", len(cells)) + "\n"
		}
		t.rows++
		io.WriteString(t.w, line)
		return
	}
	line := strings.Join(cells, "\t") + "\n"
	if t.tw != nil {
		io.WriteString(t.tw, line)
		return
	}
	io.WriteString(t.w, line)
}

// Flush writes the aligned table; rows added after it start a new one.
func (t *Writer) Flush() error {
	t.rows = 0
	if t.tw == nil {
		return nil
	}
	return t.tw.Flush()
}
