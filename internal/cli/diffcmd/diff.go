// Package diffcmd implements `slowpath diff A B`: two nodes' snapshots side
// by side, the differences that matter first (internal/nodediff), shown by
// internal/report/diffreport.
package diffcmd

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/nodediff"
	"github.com/slowpath/slowpath/internal/report/diffreport"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/stdfile"
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
	if o.A == stdfile.Dash && o.B == stdfile.Dash {
		return clienv.Usage(errors.New("- (stdin) given more than once: standard input holds one snapshot"))
	}
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
	doc := diffreport.New(o.A, o.B, ds)
	switch o.Format {
	case "json":
		return clienv.EncodeJSON(env.Stdout, 1, doc, true)
	case "markdown":
		return diffreport.WriteMarkdown(env.Stdout, doc)
	}
	return diffreport.WriteText(env.Stdout, doc)
}
