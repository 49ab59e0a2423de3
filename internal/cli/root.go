// Package cli wires the subcommands into the slowpath binary.
package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/agentcmd"
	"github.com/slowpath/slowpath/internal/cli/benchcmd"
	"github.com/slowpath/slowpath/internal/cli/capturecmd"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/cli/collectcmd"
	"github.com/slowpath/slowpath/internal/cli/comparecmd"
	"github.com/slowpath/slowpath/internal/cli/diffcmd"
	"github.com/slowpath/slowpath/internal/cli/doctorcmd"
	"github.com/slowpath/slowpath/internal/cli/fixcmd"
	"github.com/slowpath/slowpath/internal/cli/fleetcmd"
	"github.com/slowpath/slowpath/internal/cli/labcmd"
	"github.com/slowpath/slowpath/internal/cli/netcmd"
	"github.com/slowpath/slowpath/internal/cli/versioncmd"
)

// NewRootCmd builds the command tree around env.
func NewRootCmd(env *clienv.Env) *cobra.Command {
	root := &cobra.Command{
		Use:           "slowpath",
		Short:         "Find, prove and fix the hidden costs of encryption at rest and kernel data-path defaults",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       env.Version,
	}
	// --version prints what `slowpath version` does (the Makefile's stamp).
	root.SetVersionTemplate(versioncmd.Current().Text())
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.AddCommand(
		doctorcmd.NewCmdDoctor(env, nil),
		collectcmd.NewCmdCollect(env, nil),
		netcmd.NewCmdNet(env),
		fixcmd.NewCmdFix(env, nil),
		benchcmd.NewCmdBench(env, nil),
		comparecmd.NewCmdCompare(env, nil),
		agentcmd.NewCmdAgent(env, nil),
		fleetcmd.NewCmdFleet(env, nil),
		diffcmd.NewCmdDiff(env, nil),
		labcmd.NewCmdLab(env),
		capturecmd.NewCmdCapture(env, nil),
		versioncmd.NewCmdVersion(env),
	)
	conventions(root, env) // conventions.go
	return root
}

// Main runs slowpath with args and returns the process exit code.
func Main(args []string) int {
	env := clienv.Default(versioncmd.Current().Version)
	return Run(env, args)
}

// Run executes args against env and maps errors to exit codes.
func Run(env *clienv.Env, args []string) int {
	root := NewRootCmd(env)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return clienv.ExitOK
	}
	// cobra's own refusals, made before any RunE: an unknown command of
	// the root, a required flag not given. Said as every usage error is,
	// with the usage line (and for the root, the commands there are).
	switch msg := err.Error(); {
	case cmd == root && strings.HasPrefix(msg, "unknown command "):
		err = &clienv.ExitError{Code: clienv.ExitUsage, Err: unknownCommand(root, msg)}
	case strings.HasPrefix(msg, "required flag(s) "):
		err = usage(cmd, err)
	}
	var ee *clienv.ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(env.Stderr, "slowpath: %v\n", ee.Err)
		}
		return ee.Code
	}
	fmt.Fprintf(env.Stderr, "slowpath: %v\n", err)
	return clienv.ExitUsage
}

// unknownCommand is cobra's unknown command of the root with the commands
// there are, and cobra's suggestion ("Did you mean this?") on one line.
func unknownCommand(root *cobra.Command, msg string) error {
	lines := strings.Split(msg, "\n")
	var near []string
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "\t") {
			near = append(near, strings.TrimSpace(l))
		}
	}
	out := fmt.Sprintf("%s: use one of %s", strings.TrimSpace(lines[0]), subcommands(root))
	if len(near) > 0 {
		out += " (did you mean " + strings.Join(near, " or ") + "?)"
	}
	return errors.New(out)
}
