// Package diffreport renders what `slowpath diff` found (internal/nodediff)
// as text and as Markdown; the JSON is the same Document encoded. Every
// format shows the same facts: the two snapshots' names and the
// differences, most important first.
package diffreport

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/slowpath/slowpath/internal/nodediff"
	"github.com/slowpath/slowpath/internal/report/table"
)

// Document is what diff shows in every format: the names the snapshots
// were given by (A and B) and their differences (nodediff.Compare). Its
// JSON is diff's --format json.
type Document struct {
	A           string                `json:"a"`
	B           string                `json:"b"`
	Differences []nodediff.Difference `json:"differences"`
}

// New is the document of a and b's differences; none is an empty list,
// never null in the JSON.
func New(a, b string, ds []nodediff.Difference) Document {
	if ds == nil {
		ds = []nodediff.Difference{}
	}
	return Document{A: a, B: b, Differences: ds}
}

// WriteMarkdown prints the differences as a Markdown table; every cell is
// escaped, the names of A and B included.
func WriteMarkdown(w io.Writer, doc Document) error {
	fmt.Fprintf(w, "A: %s  \nB: %s\n\n", table.MarkdownCell(doc.A), table.MarkdownCell(doc.B))
	if len(doc.Differences) == 0 {
		_, err := fmt.Fprintln(w, "No differences in what slowpath models (findings, storage, encryption, crypto, cloud, rings, sysctls, kernel).")
		return err
	}
	tw := table.NewMarkdown(w)
	tw.Row("area", "what", "A", "B")
	for _, d := range doc.Differences {
		tw.Row(d.Area.String(), d.Item, dash(d.A), dash(d.B))
	}
	return tw.Flush()
}

// WriteText prints the differences as a table, one per line, or, when
// that would be wider than Width, one block per difference.
func WriteText(w io.Writer, doc Document) error {
	fmt.Fprintf(w, "A: %s\nB: %s\n\n", doc.A, doc.B)
	ds := doc.Differences
	if len(ds) == 0 {
		_, err := fmt.Fprintln(w, "No differences in what slowpath models\n(findings, storage, encryption, crypto, cloud, rings, sysctls, kernel).")
		return err
	}
	var cols [4]int
	for _, d := range ds {
		for i, c := range []string{d.Area.String(), d.Item, dash(d.A), dash(d.B)} {
			cols[i] = max(cols[i], utf8.RuneCountInString(c))
		}
	}
	if cols[0]+cols[1]+cols[2]+cols[3]+3*2 <= Width {
		tw := table.New(w)
		tw.Row("AREA", "WHAT", "A", "B")
		for _, d := range ds {
			tw.Row(d.Area.String(), d.Item, dash(d.A), dash(d.B))
		}
		return tw.Flush()
	}
	// Too wide for one line each (a storage path of five layers is 150
	// columns a side): one block per difference, A and B below its name,
	// wrapped at spaces.
	b := bufio.NewWriter(w)
	for i, d := range ds {
		if i > 0 {
			fmt.Fprintln(b)
		}
		fmt.Fprintf(b, "%-*s  %s\n", cols[0], d.Area.String(), d.Item)
		for _, side := range []struct{ name, v string }{{"A", d.A}, {"B", d.B}} {
			for _, l := range wrap(dash(side.v), Width-5) {
				fmt.Fprintf(b, "  %s  %s\n", side.name, l)
				side.name = " "
			}
		}
	}
	return b.Flush()
}

// Width is the widest line diff's text prints.
const Width = 100

// wrap breaks s at spaces into lines of at most n runes; a word longer
// than n stays whole.
func wrap(s string, n int) []string {
	var out []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > n {
			out = append(out, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(out, line)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
