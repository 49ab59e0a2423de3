package host

import (
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// collectKernel reads /proc/sys/kernel/osrelease (uname -r) and
// /proc/sys/kernel/arch (uname -m).
// See https://docs.kernel.org/admin-guide/sysctl/kernel.html
//
// Both come from proc rather than uname(2) so that a fixture tree or a
// mounted host root answers for its own host.
func collectKernel(fs hostfs.FS, h *snapshot.Host, s *snapshot.Snapshot) {
	p := fs.ProcPath("sys", "kernel", "osrelease")
	rel, err := readTrimmed(p)
	s.AddError("host.kernel", p, err)
	h.KernelRelease = rel

	// kernel.arch exists since Linux 4.? on all architectures that matter
	// here; its absence is recorded, not guessed from the build.
	p = fs.ProcPath("sys", "kernel", "arch")
	arch, err := readTrimmed(p)
	s.AddError("host.kernel", p, err)
	h.Arch = arch
}
