// Package comparereport renders a comparison (internal/comparison) as text,
// Markdown or JSON; htmlreport draws the HTML form, which WritePage picks
// for the format "html".
package comparereport

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/report/htmlreport"
	"github.com/slowpath/slowpath/internal/report/table"
	"github.com/slowpath/slowpath/internal/stdfile"
	"github.com/slowpath/slowpath/internal/units"
)

// PageFormats are the formats WritePage takes, as help names them; it
// takes md for markdown too.
var PageFormats = []string{"text", "markdown", "json", "html"}

// HTMLDeprecated is what the --html flag of compare and lab crypt prints
// when it is used (docs/cli.md: an old flag keeps working for a release).
const HTMLDeprecated = "use --format html (the page goes to stdout: > FILE); --html goes away in a later release"

// Print prints r in format on stdout; html is the deprecated --html FILE:
// the page is also written there, and "-" prints it on stdout instead of
// format. compare and lab crypt print their comparison this way.
func Print(stdout io.Writer, r *comparison.Result, sides []comparison.Side, format, html string) error {
	switch html {
	case "":
	case stdfile.Dash:
		format = "html"
	default:
		if err := htmlreport.WriteCompareFile(html, r, sides); err != nil {
			return err
		}
	}
	return WritePage(stdout, r, sides, format)
}

// WritePage renders r in format, html included: the self-contained page of
// htmlreport, which draws the sides' runs as well as r.
func WritePage(w io.Writer, r *comparison.Result, sides []comparison.Side, format string) error {
	if format == "html" {
		return htmlreport.WriteCompare(w, r, sides)
	}
	return Write(w, r, format)
}

// Write renders r in format (text, markdown or json).
func Write(w io.Writer, r *comparison.Result, format string) error {
	switch format {
	case "text":
		return writeText(w, r)
	case "markdown", "md":
		return writeMarkdown(w, r)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	default:
		return fmt.Errorf("unknown format %q: use text, markdown or json", format)
	}
}

// method says what the table's statistics are (comparison.Legend),
// computed from the result; it follows the table, which the verdicts
// (comparison.Verdicts) precede.
func method(r *comparison.Result) []string { return comparison.Legend(r) }

func sideTitle(s comparison.SideInfo) string {
	return s.Name + " (" + units.Plural(s.Runs, "run") + ")"
}

func writeText(w io.Writer, r *comparison.Result) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "%s: %s\n", title(r), joinSides(r, " vs "))
	for _, s := range r.Sides {
		if len(s.Sources) > 0 {
			fmt.Fprintf(b, "  %s: %s\n", s.Name, strings.Join(s.Sources, ", "))
		}
		if len(s.Mixed) > 0 {
			fmt.Fprintf(b, "  %s: runs differ in %s\n", s.Name, strings.Join(s.Mixed, ", "))
		}
	}
	writeTextSetup(b, r)
	for _, l := range comparison.Verdicts(r) {
		fmt.Fprintf(b, "Verdict: %s\n", l)
	}
	fmt.Fprintln(b)
	tw := table.New(b)
	cols := []string{"metric"}
	for i, s := range r.Sides {
		cols = append(cols, sideTitle(s))
		if i > 0 {
			cols = append(cols, "vs "+r.Sides[0].Name)
		}
	}
	tw.Row(cols...)
	for _, row := range r.Rows {
		cells := []string{comparison.RowLabel(row)}
		for i, c := range row.Cells {
			cells = append(cells, comparison.FormatCell(c, row.Unit))
			if i > 0 {
				cells = append(cells, comparison.FormatDelta(c))
			}
		}
		tw.Row(cells...)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(b, "\nMethod:\n")
	for _, l := range method(r) {
		fmt.Fprintf(b, "  %s\n", l)
	}
	fmt.Fprintf(b, "\nEnvironment differences:\n")
	if len(r.Environment) == 0 {
		fmt.Fprintf(b, "  none found\n")
	} else {
		tw = table.New(b)
		tw.Row(append([]string{"  "}, sideNames(r)...)...)
		for _, d := range r.Environment {
			tw.Row(append([]string{"  " + d.Key}, d.Values...)...)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	writeTextTail(b, r)
	return b.Flush()
}

func joinSides(r *comparison.Result, sep string) string {
	return strings.Join(sideNames(r), sep)
}

func sideNames(r *comparison.Result) []string {
	var n []string
	for _, s := range r.Sides {
		n = append(n, s.Name)
	}
	return n
}

func mdEscape(s string) string { return table.MarkdownCell(s) }

func writeMarkdown(w io.Writer, r *comparison.Result) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "# %s: %s\n\n", mdEscape(title(r)), mdEscape(joinSides(r, " vs ")))
	for _, s := range r.Sides {
		if len(s.Sources) > 0 {
			fmt.Fprintf(b, "- **%s**: %s\n", mdEscape(s.Name), mdEscape(strings.Join(s.Sources, ", ")))
		}
		if len(s.Mixed) > 0 {
			fmt.Fprintf(b, "- **%s**: runs differ in %s\n", mdEscape(s.Name), mdEscape(strings.Join(s.Mixed, ", ")))
		}
	}
	fmt.Fprintln(b)
	writeMarkdownSetup(b, r)
	if v := comparison.Verdicts(r); len(v) > 0 {
		for _, l := range v {
			fmt.Fprintf(b, "- **Verdict:** %s\n", mdEscape(l))
		}
		fmt.Fprintln(b)
	}
	head := []string{"metric"}
	align := []table.Align{table.Left}
	for i, s := range r.Sides {
		head = append(head, sideTitle(s))
		align = append(align, table.Right)
		if i > 0 {
			head = append(head, "vs "+r.Sides[0].Name)
			align = append(align, table.Right)
		}
	}
	tw := table.NewMarkdownWith(b, table.MarkdownOptions{Align: align, Padded: true})
	tw.Row(head...)
	for _, row := range r.Rows {
		cells := []string{mdEscape(comparison.RowLabel(row))}
		for i, c := range row.Cells {
			cells = append(cells, mdEscape(comparison.FormatCell(c, row.Unit)))
			if i > 0 {
				d := mdEscape(comparison.FormatDelta(c))
				if c.Change != "" {
					d = "**" + d + "** " + mdEscape(c.Change)
				}
				cells = append(cells, d)
			}
		}
		tw.RowMarkdown(cells...)
	}
	_ = tw.Flush() // Markdown: nothing buffered
	fmt.Fprintf(b, "\n## Method\n\n")
	for _, l := range method(r) {
		fmt.Fprintf(b, "- %s\n", mdEscape(l))
	}
	fmt.Fprintf(b, "\n## Environment differences\n\n")
	if len(r.Environment) == 0 {
		fmt.Fprintf(b, "None found.\n")
		writeMarkdownTail(b, r)
		return b.Flush()
	}
	tw = table.NewMarkdown(b)
	tw.Row(append([]string{"fact"}, sideNames(r)...)...)
	for _, d := range r.Environment {
		tw.Row(append([]string{d.Key}, d.Values...)...)
	}
	_ = tw.Flush()
	writeMarkdownTail(b, r)
	return b.Flush()
}
