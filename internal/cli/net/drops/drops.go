// Package drops implements `slowpath net drops`.
package drops

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
)

// Options are the flags of `slowpath net drops`.
type Options struct{}

// NewCmdDrops builds the command; runF replaces the action in tests.
func NewCmdDrops(env *clienv.Env, runF func(context.Context, *Options) error) *cobra.Command {
	return &cobra.Command{
		Use:   "drops",
		Short: "Attribute dropped packets to kernel reasons and code paths (eBPF)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return &clienv.ExitError{Code: clienv.ExitUsage, Err: errors.New("not yet built (issue 5)")}
		},
	}
}
