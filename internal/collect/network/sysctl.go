package network

import (
	"path/filepath"
	"strings"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Sysctls are the integer sysctls of the receive path that slowpath reads
// (Documentation/admin-guide/sysctl/net.rst). rmem/wmem and somaxconn are
// per network namespace on current kernels; the rest are global.
var Sysctls = []string{
	"net.core.netdev_max_backlog",
	"net.core.netdev_budget",
	"net.core.netdev_budget_usecs",
	"net.core.dev_weight",
	"net.core.rmem_max",
	"net.core.rmem_default",
	"net.core.wmem_max",
	"net.core.wmem_default",
	"net.core.somaxconn",
}

// readSysctls reads /proc/sys/net/core/*. A missing sysctl is recorded as
// missing (older kernels lack netdev_budget_usecs, added in 4.12).
func readSysctls(f hostfs.FS, s *snapshot.Snapshot) map[string]int64 {
	out := map[string]int64{}
	for _, name := range Sysctls {
		p := f.ProcPath(append([]string{"sys"}, strings.Split(name, ".")...)...)
		v, err := readInt(filepath.Clean(p))
		if err != nil {
			s.AddError("net.sysctl", p, err)
			continue
		}
		out[name] = v
	}
	return out
}
