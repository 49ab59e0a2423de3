package cli

import (
	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	netcmd "github.com/slowpath/slowpath/internal/cli/net"
)

func init() {
	extraCommands = append(extraCommands, func(env *clienv.Env) *cobra.Command { return netcmd.NewCmdNet(env) })
}
