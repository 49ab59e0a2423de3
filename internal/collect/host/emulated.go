package host

import (
	"os"
	"strings"

	"github.com/slowpath/slowpath/internal/hostfs"
)

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
