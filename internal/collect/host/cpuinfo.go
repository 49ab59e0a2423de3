package host

import (
	"errors"
	"fmt"
	"slices"

	"github.com/prometheus/procfs"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// collectCPUInfo reads /proc/cpuinfo through procfs: the number of
// processors listed, and the model and flags of the first one. Flags such
// as aes, vaes, avx2 and sha_ni decide how fast the kernel's crypto runs.
// See https://docs.kernel.org/filesystems/proc.html and
// arch/x86/kernel/cpu/proc.c.
func collectCPUInfo(fs hostfs.FS, h *snapshot.Host, s *snapshot.Snapshot) {
	cpus, ok := readProc(fs, s, "host.cpuinfo", "cpuinfo", procfs.FS.CPUInfo)
	if !ok {
		return
	}
	p := fs.ProcPath("cpuinfo")
	if len(cpus) == 0 {
		s.AddError("host.cpuinfo", p, errors.New("no processor entries"))
		return
	}
	h.NumCPU = len(cpus)
	h.CPUModel = cpus[0].ModelName
	h.CPUFlags = slices.Clone(cpus[0].Flags)
	slices.Sort(h.CPUFlags)
	h.CPUFlags = slices.Compact(h.CPUFlags)
	if len(h.CPUFlags) == 0 {
		// Every x86 and arm64 kernel prints flags (or Features); none
		// means a cut-short file, and "no aes" must not be inferred from it.
		s.AddError("host.cpuinfo", p, fmt.Errorf("%s: first processor lists no flags (truncated file?)", p))
	}
}
