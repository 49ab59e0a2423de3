package clienv

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestInterruptible: SIGINT and SIGTERM cancel the context instead of
// ending the process, and a signal given in their place does the same.
func TestInterruptible(t *testing.T) {
	for _, tc := range []struct {
		name string
		send syscall.Signal
		sigs []os.Signal
	}{
		{"SIGINT", syscall.SIGINT, nil},
		{"SIGTERM", syscall.SIGTERM, nil},
		{"SIGUSR1 given", syscall.SIGUSR1, []os.Signal{syscall.SIGUSR1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, stop := Interruptible(context.Background(), tc.sigs...)
			defer stop()
			if err := syscall.Kill(syscall.Getpid(), tc.send); err != nil {
				t.Fatal(err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				t.Fatalf("%s did not cancel the context", tc.name)
			}
		})
	}
}
