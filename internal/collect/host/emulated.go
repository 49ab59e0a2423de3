package host

import (
	"strings"

	"github.com/prometheus/procfs"
	"github.com/slowpath/slowpath/internal/hostfs"
)

// Emulated reports whether this CPU is emulated by qemu's TCG, whose AES is
// software behind an emulated instruction: figures from it are functional
// evidence, never performance. qemu names its CPU models "QEMU TCG CPU" when
// TCG runs them (target/i386/cpu.c). The first processor's model name
// (/proc/cpuinfo, through procfs.CPUInfo) decides.
func Emulated(fs hostfs.FS) bool {
	pfs, err := procfs.NewFS(fs.Proc)
	if err != nil {
		return false
	}
	cpus, err := pfs.CPUInfo()
	return err == nil && len(cpus) > 0 && strings.Contains(cpus[0].ModelName, "TCG")
}

// EmulatedLabel is printed over every figure measured on an emulated CPU.
const EmulatedLabel = "functional (emulated CPU): these figures show that the runs worked, not how fast anything is"
