package dropsreport

import (
	"fmt"
	"io"

	"github.com/slowpath/slowpath/internal/dropreport"
	"github.com/slowpath/slowpath/internal/report/table"
)

// WriteMarkdown writes what WriteText prints as Markdown, for a ticket:
// the same headline, notes and warnings, the reasons as a table and their
// hints as a list. Reasons, functions and interface names come from the
// kernel (or a replayed recording) and are escaped, so none ends a cell or
// opens HTML.
func WriteMarkdown(w io.Writer, r dropreport.Report, o TextOptions) error {
	if o.TopFunctions <= 0 {
		o.TopFunctions = 3
	}
	md := table.MarkdownCell
	fmt.Fprintf(w, "**%s**\n", md(headline(r)))
	if n := attribution(r); n != "" {
		fmt.Fprintf(w, "\n%s\n", md(n))
	}
	if ws := warnings(r); len(ws) > 0 {
		fmt.Fprintln(w)
		for _, warn := range ws {
			fmt.Fprintf(w, "- warning: %s\n", md(warn))
		}
	}
	if len(r.Reasons) == 0 {
		fmt.Fprintln(w, "\nNo drops.")
		return nil
	}
	fmt.Fprintln(w)
	t := table.NewMarkdownWith(w, table.MarkdownOptions{Align: []table.Align{table.Left, table.Right, table.Right}})
	t.Row(tableHead(r)...)
	for _, rc := range r.Reasons {
		t.Row(tableRow(rc, o.TopFunctions)...)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	first := true
	for _, rc := range r.Reasons {
		if rc.Hint == "" {
			continue
		}
		if first {
			fmt.Fprintln(w)
			first = false
		}
		fmt.Fprintf(w, "- %s: %s\n", table.Code(rc.Reason), md(rc.Hint))
	}
	return nil
}
