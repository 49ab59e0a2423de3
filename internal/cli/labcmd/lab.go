// Package labcmd implements `slowpath lab`: throwaway reproductions on this
// host. `lab crypt` runs one workload on a ramdisk (or a loop file) plain and
// under each dm-crypt variant and prints the comparison with the expected
// encryption tax; `lab crypto-limit` measures what AES-XTS costs on this CPU.
package labcmd

import (
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/hostfs"
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

// Emulated reports whether this CPU is emulated by qemu's TCG, whose AES is
// software behind an emulated instruction: figures from it are functional
// evidence, never performance. qemu names its CPU models "QEMU TCG CPU" when
// TCG runs them (target/i386/cpu.c).
func Emulated(fs hostfs.FS) bool {
	b, err := os.ReadFile(fs.ProcPath("cpuinfo"))
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.Contains(v, "TCG")
		}
	}
	return false
}

// EmulatedLabel is printed over every figure measured on an emulated CPU.
const EmulatedLabel = "functional (emulated CPU): these figures show that the runs worked, not how fast anything is"
