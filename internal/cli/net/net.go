// Package net implements `slowpath net`: the network data-path model, and
// its subcommands watch (live drop-counter rates) and drops (drop reasons
// attributed by eBPF).
package net

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/cli/net/drops"
	"github.com/slowpath/slowpath/internal/cli/net/watch"
)

// NewCmdNet builds `slowpath net` and its subcommands.
func NewCmdNet(env *clienv.Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "net",
		Short: "Show the network data path: NICs, rings, backlog, socket buffers, drops",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return &clienv.ExitError{Code: clienv.ExitUsage, Err: errors.New("slowpath net: model printing lands with issue 4")}
		},
	}
	cmd.AddCommand(watch.NewCmdWatch(env, nil), drops.NewCmdDrops(env, nil))
	return cmd
}
