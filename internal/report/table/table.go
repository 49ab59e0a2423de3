// Package table writes the text tables of every command (compare, diff,
// net drops, bench): columns aligned by text/tabwriter with two spaces
// between them for a person, or tab-separated lines for a program when
// stdout is not a terminal. One writer, so every table looks the same.
package table

import (
	"io"
	"strings"
	"text/tabwriter"
)

// Writer collects rows and aligns them on Flush. Cells must not hold tabs
// or newlines (they would split a cell or a row).
type Writer struct {
	w  io.Writer
	tw *tabwriter.Writer // nil: tab-separated
}

// New is a table aligned in columns two spaces apart.
func New(w io.Writer) *Writer {
	return &Writer{w: w, tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
}

// NewTSV is a table written as tab-separated lines, for a program to read.
func NewTSV(w io.Writer) *Writer { return &Writer{w: w} }

// Row adds one row.
func (t *Writer) Row(cells ...string) {
	line := strings.Join(cells, "\t") + "\n"
	if t.tw != nil {
		io.WriteString(t.tw, line)
		return
	}
	io.WriteString(t.w, line)
}

// Flush writes the aligned table; rows added after it start a new one.
func (t *Writer) Flush() error {
	if t.tw == nil {
		return nil
	}
	return t.tw.Flush()
}
