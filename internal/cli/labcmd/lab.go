// Package labcmd implements `slowpath lab`: throwaway reproductions on this
// host. `lab crypt` runs one workload on a ramdisk (or a loop file) plain and
// under each dm-crypt variant and prints the comparison with the expected
// encryption tax; `lab crypto-limit` measures what AES-XTS costs on this CPU.
package labcmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
)

// NewCmdLab builds `slowpath lab` and its subcommands.
func NewCmdLab(env *clienv.Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Throwaway reproductions: dm-crypt variants on a ramdisk, the cipher's cost on this CPU",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(NewCmdCrypt(env, nil), NewCmdCryptoLimit(env, nil))
	return cmd
}

// checkIcountShift refuses an --icount-shift qemu would not accept (its
// -icount takes shift=0..10); -1 means detect.
func checkIcountShift(n int) error {
	if n < -1 || n > 10 {
		return &clienv.ExitError{Code: clienv.ExitUsage, Err: fmt.Errorf("--icount-shift %d: qemu's -icount shift is 0 to 10", n)}
	}
	return nil
}
