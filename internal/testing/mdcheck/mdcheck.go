// Package mdcheck is the tests' one oracle for the Markdown the renderers
// write from text they do not control (a host's device and driver names, a
// recording, a directory): that text must stay inside its table cell.
package mdcheck

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// Rules are what a renderer's Markdown keeps whatever text it embeds.
type Rules struct {
	// Cells is the number of cells of every table row; 0: each row has
	// as many as its table's header.
	Cells int
	// NoCode: the renderer writes no code span, so a backtick is one it
	// failed to escape.
	NoCode bool
}

// Check fails t on raw HTML, a table row of the wrong number of cells, a
// pipe outside a table or a code span its line leaves open.
func (r Rules) Check(t testing.TB, out string) {
	t.Helper()
	if strings.ContainsAny(out, "<>") {
		t.Fatalf("markdown holds raw HTML:\n%s", out)
	}
	if r.NoCode && strings.Contains(out, "`") {
		t.Fatalf("markdown holds a backtick:\n%s", out)
	}
	header := 0 // pipes in the current table's header row; 0: no table
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "|") {
			header = 0
			if strings.Contains(line, "|") {
				t.Fatalf("line %q outside the table holds a pipe:\n%s", line, out)
			}
		} else {
			// An escaped pipe is &#124;: every '|' left bounds a cell.
			pipes := strings.Count(line, "|")
			if header == 0 {
				header = pipes
			}
			want := header
			if r.Cells > 0 {
				want = r.Cells + 1
			}
			if pipes != want {
				t.Fatalf("row %q is not %d cells:\n%s", line, want-1, out)
			}
		}
		if strings.Count(line, "`")%2 != 0 {
			t.Fatalf("line %q opens a code span it does not close:\n%s", line, out)
		}
	}
}

// Hostile is name followed by every way out of a table cell: a pipe, HTML,
// a backtick, a line break and a row of its own.
func Hostile(name string) string { return name + "|<script>x</script>`\n| a | b |" }

// Escaped is Hostile(name) as one cell (report/table.MarkdownCell): text.
func Escaped(name string) string {
	return name + "&#124;&lt;script&gt;x&lt;/script&gt;&#96; &#124; a &#124; b &#124;"
}

// seeds try each way out of a cell alone, and the control characters
// MarkdownCell drops.
var seeds = []string{"a|b", "<script>", "<img src=x>", "`", "a\nb", "\r\n|", "\u2028", "\x00\x1b[31m"}

// Fuzz fuzzes write, which renders Markdown with s in every string it
// takes from outside, from plain (such a string as a host gives) and the
// hostile seeds; each output must keep r.
func (r Rules) Fuzz(f *testing.F, plain string, write func(w io.Writer, s string) error) {
	f.Add(plain)
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b bytes.Buffer
		if err := write(&b, s); err != nil {
			t.Fatal(err)
		}
		r.Check(t, b.String())
	})
}
