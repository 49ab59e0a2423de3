// Package diffcmd implements `slowpath diff A B`: two nodes' snapshots side
// by side, the differences that matter first (internal/nodediff).
package diffcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

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
		RunE: func(cmd *cobra.Command, args []string) error {
			o.A, o.B = args[0], args[1]
			if o.Format != "text" && o.Format != "json" {
				return &clienv.ExitError{Code: clienv.ExitUsage, Err: fmt.Errorf("unknown --format %q: use text or json", o.Format)}
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			if err := run(env, o); err != nil {
				return &clienv.ExitError{Code: clienv.ExitUsage, Err: err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Format, "format", "text", "output format: text or json")
	return cmd
}

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
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"a": o.A, "b": o.B, "differences": ds})
	}
	return WriteText(env.Stdout, o.A, o.B, ds)
}

// WriteText prints the differences as a table, one per line.
func WriteText(w io.Writer, nameA, nameB string, ds []nodediff.Difference) error {
	fmt.Fprintf(w, "A: %s\nB: %s\n\n", nameA, nameB)
	if len(ds) == 0 {
		_, err := fmt.Fprintln(w, "No differences in what slowpath models (findings, storage, encryption, crypto, cloud, rings, sysctls, kernel).")
		return err
	}
	tw := table.New(w)
	tw.Row("AREA", "WHAT", "A", "B")
	for _, d := range ds {
		tw.Row(d.Area.String(), d.Item, dash(d.A), dash(d.B))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
