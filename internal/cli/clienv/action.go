package clienv

import (
	"context"
	"errors"

	"github.com/spf13/cobra"
)

// Action is the RunE of a command built the way every command is:
// prepare takes the arguments into the options and checks the flags, its
// refusal a usage error (exit 2); then runF, a test's stand-in for the
// action, or run does the work, a failure of run also exit 2 unless it
// carries its own code. prepare may be nil.
func Action[O any](o O, prepare func(args []string) error, runF func(context.Context, O) error, run func(context.Context) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if prepare != nil {
			if err := prepare(args); err != nil {
				return Usage(err)
			}
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		if runF != nil {
			return runF(ctx, o)
		}
		return Usage(run(ctx))
	}
}

// Usage is err as a usage error (exit 2); an error that already carries an
// exit code keeps it, and nil stays nil.
func Usage(err error) error {
	var ee *ExitError
	if err == nil || errors.As(err, &ee) {
		return err
	}
	return &ExitError{Code: ExitUsage, Err: err}
}
