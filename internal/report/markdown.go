package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/report/table"
)

// mdEscape keeps table cells intact and a host's names inert: it escaped
// only '|', so an interface or mount named with a backtick or '<' could
// end its code span or open HTML in doctor's Markdown.
func mdEscape(s string) string { return table.MarkdownCell(s) }

func writeMarkdown(w io.Writer, r *analyze.Report) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "# slowpath doctor\n\n")
	if r.Kernel != "" {
		fmt.Fprintf(b, "- kernel: `%s`\n", r.Kernel)
	}
	if r.Cloud != "" {
		fmt.Fprintf(b, "- cloud: %s\n", r.Cloud)
	}
	writeStorageMarkdown(b, r)
	writeNetworkMarkdown(b, r.Network)
	fmt.Fprintf(b, "\n## Findings\n\n")
	if len(r.Findings) == 0 {
		fmt.Fprintf(b, "None.\n")
	}
	for _, f := range r.Findings {
		fmt.Fprintf(b, "### %s `%s` — %s\n\n%s\n\n", strings.ToUpper(f.Severity.String()), f.ID, mdEscape(f.Subject), f.Summary)
		if f.Status != "fail" {
			fmt.Fprintf(b, "Status: %s\n\n", f.Status)
		}
		for _, e := range f.Evidence {
			fmt.Fprintf(b, "- `%s`", e.Source)
			if e.Key != "" {
				fmt.Fprintf(b, " %s", e.Key)
			}
			fmt.Fprintf(b, ": %s", e.Observed)
			if e.Expected != "" {
				fmt.Fprintf(b, " (expected %s)", e.Expected)
			}
			fmt.Fprintf(b, "\n")
		}
		if f.Remediation != "" {
			fmt.Fprintf(b, "\nFix:\n\n```\n%s\n```\n", f.Remediation)
		}
		for _, ref := range f.References {
			fmt.Fprintf(b, "- <%s>\n", ref)
		}
		fmt.Fprintf(b, "\n")
	}
	if len(r.NotCollected) > 0 {
		fmt.Fprintf(b, "## Not collected\n\n")
		for _, e := range r.NotCollected {
			fmt.Fprintf(b, "- %s: %s (%s)\n", e.Collector, mdEscape(notCollected(e)), e.Kind)
		}
	}
	return b.Flush()
}
