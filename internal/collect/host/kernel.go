package host

import (
	"errors"

	"golang.org/x/sys/unix"

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
	rel, err := hostfs.ReadValue(p)
	s.AddError("host.kernel", p, err)
	h.KernelRelease = rel

	// kernel.arch is recent (commit 52826d3b2d1d, kernel/utsname_sysctl.c);
	// many production kernels lack it. With live roots, uname(2) is the
	// same kernel's answer; for any other root the absence is recorded.
	p = fs.ProcPath("sys", "kernel", "arch")
	arch, err := hostfs.ReadValue(p)
	if err != nil && fs.Live && hostfs.Classify(err) == hostfs.KindMissing {
		var u unix.Utsname
		if uerr := unix.Uname(&u); uerr == nil {
			arch, err = unix.ByteSliceToString(u.Machine[:]), nil
		} else {
			err = errors.Join(err, uerr)
		}
	}
	s.AddError("host.kernel", p, err)
	h.Arch = arch
}
