// Package diffcmd implements `slowpath diff A B`: two nodes' snapshots side
// by side, the differences that matter first (internal/nodediff).
package diffcmd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/nodediff"
	"github.com/slowpath/slowpath/internal/report/table"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Options are the flags of `slowpath diff`.
type Options struct {
	A, B   string
	Format string
}

// NewCmdDiff builds the command; runF replaces the action in tests.
func NewCmdDiff(env *clienv.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{}
	cmd := &cobra.Command{
		Use:   "diff A.tar.gz B.tar.gz",
		Short: "Compare two nodes' snapshots, the differences that matter first",
		Long: `Diff analyses two snapshots (written by 'slowpath collect') as doctor does and
lists what differs, most important first: checks that fire on one node only,
encryption layers per path, dm-crypt cipher, flags and sector size, CPU crypto
(AES instructions, the kernel's xts(aes) driver), cloud and instance type, the
rest of each storage chain, NIC rings, receive-path sysctls, kernel and CPU.

Exit status: 0 (differences are not an error), 2 when a snapshot cannot be read.`,
		Example: `  slowpath diff slow-node.tar.gz fast-node.tar.gz
  slowpath diff a.tar.gz b.tar.gz --format json`,
		Args: cobra.ExactArgs(2),
		RunE: clienv.Action(o, func(args []string) error {
			o.A, o.B = args[0], args[1]
			return formats.Check(o.Format)
		}, runF, func(context.Context) error { return run(env, o) }),
	}
	formats.AddFlag(cmd.Flags(), &o.Format)
	return cmd
}

// formats are diff's --format values.
var formats = clienv.Formats{Names: []string{"text", "json", "markdown"}, Default: "text",
	Notes: map[string]string{"markdown": "a table for a ticket or a pull request"}}

func run(env *clienv.Env, o *Options) error {
	a, err := snapshot.Load(o.A)
	if err != nil {
		return err
	}
	b, err := snapshot.Load(o.B)
	if err != nil {
		return err
	}
	ds, err := nodediff.Compare(a, b)
	if err != nil {
		return err
	}
	if o.Format == "json" {
		if ds == nil {
			ds = []nodediff.Difference{}
		}
		return clienv.EncodeJSON(env.Stdout, 1, struct {
			A           string                `json:"a"`
			B           string                `json:"b"`
			Differences []nodediff.Difference `json:"differences"`
		}{o.A, o.B, ds}, true)
	}
	if o.Format == "markdown" {
		return WriteMarkdown(env.Stdout, o.A, o.B, ds)
	}
	return WriteText(env.Stdout, o.A, o.B, ds)
}

// WriteMarkdown prints the differences as a Markdown table; every cell is
// escaped, the names of A and B included.
func WriteMarkdown(w io.Writer, nameA, nameB string, ds []nodediff.Difference) error {
	fmt.Fprintf(w, "A: %s  \nB: %s\n\n", table.MarkdownCell(nameA), table.MarkdownCell(nameB))
	if len(ds) == 0 {
		_, err := fmt.Fprintln(w, "No differences in what slowpath models (findings, storage, encryption, crypto, cloud, rings, sysctls, kernel).")
		return err
	}
	tw := table.NewMarkdown(w)
	tw.Row("area", "what", "A", "B")
	for _, d := range ds {
		tw.Row(d.Area.String(), d.Item, dash(d.A), dash(d.B))
	}
	return tw.Flush()
}

// WriteText prints the differences as a table, one per line.
func WriteText(w io.Writer, nameA, nameB string, ds []nodediff.Difference) error {
	fmt.Fprintf(w, "A: %s\nB: %s\n\n", nameA, nameB)
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
