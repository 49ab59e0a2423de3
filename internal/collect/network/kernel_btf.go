package network

import (
	"os"

	"github.com/slowpath/slowpath/internal/hostfs"
)

// kernelBTF says whether the kernel exposes its BTF at
// /sys/kernel/btf/vmlinux (CONFIG_DEBUG_INFO_BTF=y, Linux 5.4+;
// Documentation/bpf/btf.rst). `slowpath net drops` loads a BTF tracepoint
// program relocated against it, so the net.no-drop-reasons check tells
// from this whether the tracer can run here. A stat only: the file is
// megabytes.
func kernelBTF(f hostfs.FS) string {
	_, err := os.Stat(f.SysPath("kernel", "btf", "vmlinux"))
	switch {
	case err == nil:
		return "yes"
	case hostfs.Classify(err) == hostfs.KindMissing:
		return "no"
	default:
		return "unknown"
	}
}
