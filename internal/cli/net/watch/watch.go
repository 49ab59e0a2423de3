// Package watch implements `slowpath net watch`.
package watch

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
)

// Options are the flags of `slowpath net watch`.
type Options struct{}

// NewCmdWatch builds the command; runF replaces the action in tests.
func NewCmdWatch(env *clienv.Env, runF func(context.Context, *Options) error) *cobra.Command {
	return &cobra.Command{
		Use:   "watch",
		Short: "Live per-second rates of every drop, miss and squeeze counter, by layer",
		RunE: func(cmd *cobra.Command, args []string) error {
			return &clienv.ExitError{Code: clienv.ExitUsage, Err: errors.New("not yet built (issue 4)")}
		},
	}
}
