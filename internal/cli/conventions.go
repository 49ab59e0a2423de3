package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
)

// pathFlagCommands are the commands that read the host's procfs, sysfs or
// root filesystem; only they take node_exporter's --path.* flags. diff,
// compare, fleet and lab read files, a Prometheus server or build their own
// devices on this host, where another mountpoint means nothing.
var pathFlagCommands = []string{"doctor", "collect", "net", "fix", "bench", "agent", "capture"}

// conventions applies the rules every command follows (docs/cli.md): the
// --path.* flags only where they mean something; an unknown help topic, shell
// or subcommand is a usage error (exit 2) naming the valid ones; a wrong
// number of arguments prints the usage line.
func conventions(root *cobra.Command, env *clienv.Env) {
	for _, c := range root.Commands() {
		if !slices.Contains(pathFlagCommands, c.Name()) {
			continue
		}
		// node_exporter's flag names, so operators need not learn new ones.
		pf := c.PersistentFlags()
		pf.StringVar(&env.FS.Proc, "path.procfs", env.FS.Proc, "procfs mountpoint")
		pf.StringVar(&env.FS.Sys, "path.sysfs", env.FS.Sys, "sysfs mountpoint")
		pf.StringVar(&env.FS.Root, "path.rootfs", env.FS.Root, "root filesystem mountpoint")
	}
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			help := c.Run
			c.Run = nil
			c.RunE = func(cmd *cobra.Command, args []string) error {
				if t, _, err := root.Find(args); len(args) > 0 && (err != nil || t == root) {
					return usage(cmd, fmt.Errorf("unknown help topic %q: use one of %s", strings.Join(args, " "), subcommands(root)))
				}
				help(cmd, args)
				return nil
			}
		case "completion":
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(cmd *cobra.Command, args []string) error {
				if len(args) > 0 {
					return usage(cmd, fmt.Errorf("unknown shell %q: use one of %s", args[0], subcommands(cmd)))
				}
				return cmd.Help()
			}
		}
	}
	// A group (lab, completion) given a subcommand it does not have.
	var groups func(*cobra.Command)
	groups = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			if s.HasSubCommands() && !s.Runnable() {
				s.Args = cobra.ArbitraryArgs
				s.RunE = func(cmd *cobra.Command, args []string) error {
					if len(args) > 0 {
						return usage(cmd, fmt.Errorf("unknown command %q for %q: use one of %s", args[0], cmd.CommandPath(), subcommands(cmd)))
					}
					return cmd.Help()
				}
			}
			groups(s)
		}
	}
	groups(root)
	// A wrong number of arguments: cobra's message, then the usage line.
	var args func(*cobra.Command)
	args = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			if a := s.Args; a != nil {
				s.Args = func(cmd *cobra.Command, v []string) error {
					if err := a(cmd, v); err != nil {
						return usage(cmd, err)
					}
					return nil
				}
			}
			args(s)
		}
	}
	args(root)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usage(cmd, err) })
}

// usage is err as a usage error followed by the command's usage line.
func usage(cmd *cobra.Command, err error) error {
	return &clienv.ExitError{Code: clienv.ExitUsage, Err: fmt.Errorf("%w\nusage: %s (slowpath %s --help for more)", err, cmd.UseLine(), strings.TrimSpace(strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name())))}
}

// subcommands lists c's available subcommands.
func subcommands(c *cobra.Command) string {
	var n []string
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() && s.Name() != "help" {
			n = append(n, s.Name())
		}
	}
	return strings.Join(n, ", ")
}
