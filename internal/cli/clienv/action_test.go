package clienv

import (
	"context"
	"errors"
	"testing"

	"github.com/spf13/cobra"
)

func TestAction(t *testing.T) {
	bad := errors.New("bad flag")
	failed := errors.New("run failed")
	findings := &ExitError{Code: ExitFindings}
	cases := []struct {
		name     string
		prepare  func([]string) error
		stand    bool
		run      error
		wantCode int // -1: no error
		wantRan  string
	}{
		{name: "runs", wantCode: -1, wantRan: "run"},
		{name: "refused before running", prepare: func([]string) error { return bad }, wantCode: ExitUsage},
		{name: "a test's stand-in", stand: true, wantCode: -1, wantRan: "stand-in"},
		{name: "run fails", run: failed, wantCode: ExitUsage, wantRan: "run"},
		{name: "run's own code kept", run: findings, wantCode: ExitFindings, wantRan: "run"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := &struct{ args []string }{}
			ran := ""
			var stand func(context.Context, *struct{ args []string }) error
			if c.stand {
				stand = func(ctx context.Context, got *struct{ args []string }) error {
					if got != o || ctx == nil {
						t.Error("the stand-in got other options or no context")
					}
					ran = "stand-in"
					return nil
				}
			}
			prepare := c.prepare
			if prepare == nil {
				prepare = func(args []string) error { o.args = args; return nil }
			}
			run := func(context.Context) error { ran = "run"; return c.run }
			err := Action(o, prepare, stand, run)(&cobra.Command{}, []string{"a"})
			if ran != c.wantRan {
				t.Errorf("ran %q, want %q", ran, c.wantRan)
			}
			if c.wantCode == -1 {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				if len(o.args) != 1 {
					t.Errorf("prepare did not see the arguments: %v", o.args)
				}
				return
			}
			var ee *ExitError
			if !errors.As(err, &ee) || ee.Code != c.wantCode {
				t.Fatalf("error %v, want exit %d", err, c.wantCode)
			}
			if c.run != nil && c.run != findings && !errors.Is(err, c.run) {
				t.Errorf("error %v does not wrap %v", err, c.run)
			}
		})
	}
}
