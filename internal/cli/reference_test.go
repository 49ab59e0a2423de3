package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/report/table"
	"github.com/slowpath/slowpath/internal/testing/golden"
)

// commandPages is each command's page in docs/: a how-to written by hand,
// then the command's reference, generated from the command tree between
// refBegin and refEnd (TestCommandPages). A command of the root that is
// not here fails the test, so a new command comes with its page.
var commandPages = map[string]string{
	"agent":   "agent.md",
	"bench":   "bench.md",
	"capture": "capture.md",
	"collect": "collect.md",
	"compare": "compare.md",
	"diff":    "diff.md",
	"doctor":  "doctor.md",
	"fix":     "fix.md",
	"fleet":   "fleet.md",
	"lab":     "lab.md",
	"net":     "net.md",
	// One-liners and cobra's own: the conventions page.
	"version":    "cli.md",
	"completion": "cli.md",
	"help":       "cli.md",
}

const refBegin, refEnd = "<!-- reference:begin -->\n", "<!-- reference:end -->"

// referenceRoot is the command tree as the binary has it, cobra's help
// and completion commands included (Execute adds them).
func referenceRoot() *cobra.Command {
	root := NewRootCmd(&clienv.Env{FS: hostfs.Default(), Version: "test"})
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	return root
}

// reference is the generated block of the commands cmds and every
// subcommand under them: each one's usage line and each of its flags with
// its help text and default. -h/--help, which every command takes, is
// said once rather than in every table.
func reference(cmds []*cobra.Command) string {
	var b bytes.Buffer
	b.WriteString("Generated from the commands' help (internal/cli `TestCommandPages`;\n" +
		"`SLOWPATH_UPDATE=1 go test ./internal/cli -run TestCommandPages` rewrites\n" +
		"it). Every command also takes `-h, --help`.\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Deprecated != "" {
			return
		}
		fmt.Fprintf(&b, "\n### `%s`\n\n%s.\n\n```\n%s\n```\n", c.CommandPath(), strings.TrimSuffix(c.Short, "."), c.UseLine())
		var flags []*pflag.Flag
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" && !f.Hidden {
				flags = append(flags, f)
			}
		})
		if len(flags) > 0 {
			b.WriteString("\n")
			w := table.NewMarkdown(&b)
			w.Row("flag", "meaning")
			for _, f := range flags {
				w.RowMarkdown(table.Code(flagName(f)), table.MarkdownCell(flagMeaning(f)))
			}
			w.Flush()
		}
		// Persistent flags of a parent (net's --path.*) work here too.
		var inherited []string
		c.InheritedFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" && !f.Hidden {
				inherited = append(inherited, table.Code("--"+f.Name))
			}
		})
		if len(inherited) > 0 {
			fmt.Fprintf(&b, "\nAlso takes %s, as `%s` does.\n", strings.Join(inherited, ", "), c.Parent().CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	for _, c := range cmds {
		walk(c)
	}
	return b.String()
}

// flagName is a flag as its usage line writes it: -o, --output FILE.
func flagName(f *pflag.Flag) string {
	name := "--" + f.Name
	if f.Shorthand != "" {
		name = "-" + f.Shorthand + ", " + name
	}
	if v, _ := pflag.UnquoteUsage(f); v != "" {
		name += " " + v
	}
	return name
}

// flagMeaning is its help text with its default, where one is worth
// saying, and its deprecation.
func flagMeaning(f *pflag.Flag) string {
	_, usage := pflag.UnquoteUsage(f)
	switch f.DefValue {
	case "", "false", "0", "0s", "[]":
	default:
		usage += fmt.Sprintf(" (default %s)", f.DefValue)
	}
	if f.Deprecated != "" {
		usage += " (deprecated: " + f.Deprecated + ")"
	}
	return usage
}

// TestCommandPages: every command of the root has a page (commandPages),
// linked from docs/README.md, with a how-to before its reference; the
// reference is what the commands are (SLOWPATH_UPDATE=1 rewrites it), and
// so names every flag of every command under it.
func TestCommandPages(t *testing.T) {
	root := referenceRoot()
	byPage := map[string][]*cobra.Command{}
	for _, c := range root.Commands() {
		page, ok := commandPages[c.Name()]
		if !ok {
			t.Errorf("slowpath %s has no page: add it to commandPages and write docs/%s.md", c.Name(), c.Name())
			continue
		}
		byPage[page] = append(byPage[page], c)
	}
	for name, page := range commandPages {
		if c, _, err := root.Find([]string{name}); err != nil || c == root {
			t.Errorf("commandPages: no command %q (for %s)", name, page)
		}
	}
	index, err := os.ReadFile("../../docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	pages := make([]string, 0, len(byPage))
	for p := range byPage {
		pages = append(pages, p)
	}
	slices.Sort(pages)
	for _, page := range pages {
		cmds := byPage[page]
		path := filepath.Join("../../docs", page)
		if !bytes.Contains(index, []byte("("+page+")")) {
			t.Errorf("docs/README.md does not link %s", page)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v: write the page of %s", err, cmds[0].CommandPath())
			continue
		}
		s := string(b)
		i, j := strings.Index(s, refBegin), strings.Index(s, refEnd)
		if i < 0 || j < i {
			t.Errorf("%s has no %q ... %q section for the reference", path, strings.TrimSpace(refBegin), refEnd)
			continue
		}
		if len(strings.Fields(s[:i])) < 50 {
			t.Errorf("%s: the how-to before the reference is missing or a stub", path)
		}
		want := reference(cmds)
		got := s[:i+len(refBegin)] + want + s[j:]
		if got != s {
			if golden.Update() {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				t.Errorf("%s's reference is not what the commands are; SLOWPATH_UPDATE=1 go test ./internal/cli -run TestCommandPages rewrites it", path)
			}
		}
		// Whatever wrote it, every command and flag is named in the page.
		block := got[i:]
		var walk func(c *cobra.Command)
		walk = func(c *cobra.Command) {
			if c.Hidden || c.Deprecated != "" {
				return
			}
			_, sec, ok := strings.Cut(block, "\n### `"+c.CommandPath()+"`\n")
			if !ok {
				t.Errorf("%s: no reference of %s", path, c.CommandPath())
			}
			sec, _, _ = strings.Cut(sec, "\n### ")
			c.LocalFlags().VisitAll(func(f *pflag.Flag) {
				if f.Name != "help" && !f.Hidden && !strings.Contains(sec, "| "+table.Code(flagName(f))+" | ") {
					t.Errorf("%s: %s --%s is not in its reference", path, c.CommandPath(), f.Name)
				}
			})
			for _, s := range c.Commands() {
				walk(s)
			}
		}
		for _, c := range cmds {
			walk(c)
		}
	}
}
