package cli

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/report/table"
	"github.com/slowpath/slowpath/internal/testing/golden"
)

// formatsTable is docs/cli.md's table of which command prints which
// --format, built from the flags themselves (clienv.Formats).
func formatsTable(t *testing.T) string {
	t.Helper()
	root := NewRootCmd(&clienv.Env{FS: hostfs.Default(), Version: "test"})
	main := []string{"text", "json", "markdown", "html"}
	var b bytes.Buffer
	w := table.NewMarkdown(&b)
	w.Row(append(append([]string{"command"}, main...), "other")...)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if f := c.LocalFlags().Lookup("format"); f != nil {
			names := f.Annotations[clienv.FormatsAnnotation]
			if len(names) == 0 {
				t.Errorf("%s: --format not registered through clienv.Formats", c.CommandPath())
			}
			row := []string{table.Code(c.CommandPath())}
			for _, m := range main {
				cell := ""
				if slices.Contains(names, m) {
					cell = "yes"
					if f.DefValue == m {
						cell = "yes (default)"
					}
				}
				row = append(row, cell)
			}
			var other []string
			for _, n := range names {
				if !slices.Contains(main, n) {
					if f.DefValue == n {
						n += " (default)"
					}
					other = append(other, n)
				}
			}
			row = append(row, strings.Join(other, ", "))
			for i := 1; i < len(row); i++ {
				row[i] = table.MarkdownCell(row[i])
			}
			w.RowMarkdown(row...)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestFormatsTable keeps docs/cli.md's table of formats by command what
// the commands take (SLOWPATH_UPDATE=1 rewrites it).
func TestFormatsTable(t *testing.T) {
	const doc, begin, end = "../../docs/cli.md", "<!-- formats:begin -->\n", "<!-- formats:end -->"
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q section", doc, strings.TrimSpace(begin), end)
	}
	got := s[:i+len(begin)] + formatsTable(t) + s[j:]
	if got == s {
		return
	}
	if golden.Update() {
		if err := os.WriteFile(doc, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's table of formats is not what the commands take; SLOWPATH_UPDATE=1 go test ./internal/cli rewrites it:\n%s", doc, formatsTable(t))
}
