package clienv

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Interruptible returns ctx cancelled at the first SIGINT (Ctrl-C) or
// SIGTERM (a service manager's stop), or at one of sigs when given, and
// the function that stops listening. A command that must end cleanly (undo
// a lab or a change, remove a run's files, print what it measured) runs
// under it instead of being killed by the signal's default action.
func Interruptible(ctx context.Context, sigs ...os.Signal) (context.Context, context.CancelFunc) {
	if len(sigs) == 0 {
		sigs = []os.Signal{os.Interrupt, syscall.SIGTERM}
	}
	return signal.NotifyContext(ctx, sigs...)
}
