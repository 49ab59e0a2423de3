package table

import (
	"strings"
	"testing"
	"unicode"
)

func TestAligned(t *testing.T) {
	var b strings.Builder
	tw := New(&b)
	tw.Row("metric", "a", "b")
	tw.Row("read_p99", "1.2 ms", "")
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "metric    a       b\nread_p99  1.2 ms  \n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestTSV(t *testing.T) {
	var b strings.Builder
	tw := NewTSV(&b)
	tw.Row("metric", "a")
	tw.Row("read_p99", "1.2 ms")
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := "metric\ta\nread_p99\t1.2 ms\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestMarkdown(t *testing.T) {
	var b strings.Builder
	tw := NewMarkdown(&b)
	tw.Row("AREA", "WHAT")
	tw.Row("net", "eth|0 <b>`x`</b>\nnext")
	tw.Flush()
	tw.Row("H")
	want := "| AREA | WHAT |\n|---|---|\n| net | eth&#124;0 &lt;b&gt;&#96;x&#96;&lt;/b&gt; next |\n| H |\n|---|\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestMarkdownAligned: right-aligned figures, the padded delimiter row of
// compare's metric table, and cells that are Markdown already.
func TestMarkdownAligned(t *testing.T) {
	var b strings.Builder
	tw := NewMarkdownWith(&b, MarkdownOptions{Align: []Align{Left, Right}})
	tw.Row("side", "ratio", "verdict")
	tw.RowMarkdown(Code("a`b"), "**1.1x**", "")
	tw.Flush()
	tw = NewMarkdownWith(&b, MarkdownOptions{Align: []Align{Left, Right}, Padded: true})
	tw.Row("metric", "a")
	want := "| side | ratio | verdict |\n|---|---:|---|\n| `a&#96;b` | **1.1x** |  |\n" +
		"| metric | a |\n| --- | ---: |\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// FuzzMarkdownCell: whatever a host's names hold, a cell stays one cell of
// one row and opens no HTML or code span.
func FuzzMarkdownCell(f *testing.F) {
	for _, s := range []string{"", "eth0", "a|b", "<script>", "`x`", "a\nb", "\u2028", "\x00\x1b[31m", "&amp;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := MarkdownCell(s)
		if strings.ContainsAny(c, "|<>`\n\r\t\u2028\u2029") {
			t.Fatalf("MarkdownCell(%q) = %q", s, c)
		}
		for _, r := range c {
			if unicode.IsControl(r) {
				t.Fatalf("MarkdownCell(%q) = %q holds control %U", s, c, r)
			}
		}
		// Every & starts an entity the function wrote.
		for i := strings.IndexByte(c, '&'); i >= 0; i = next(c, i) {
			if !strings.HasPrefix(c[i:], "&amp;") && !strings.HasPrefix(c[i:], "&lt;") && !strings.HasPrefix(c[i:], "&gt;") && !strings.HasPrefix(c[i:], "&#124;") && !strings.HasPrefix(c[i:], "&#96;") {
				t.Fatalf("MarkdownCell(%q) = %q: a bare & at %d", s, c, i)
			}
		}
	})
}

func next(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '&')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}
