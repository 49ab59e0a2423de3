// Package host collects kernel release, boot and machine id, CPU flags, DMI
// identity, crypto drivers, the distribution (os-release), other tuners
// and what slowpath's own fix changed into snapshot.Host. Each reader
// lives in a file named after the file it reads; a missing file is
// recorded in the manifest and the rest is still collected.
package host

import (
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Collect fills s.Host from the roots in fs.
func Collect(fs hostfs.FS, s *snapshot.Snapshot) {
	h := &snapshot.Host{}
	s.Host = h
	collectKernel(fs, h, s)
	collectIdentity(fs, h, s)
	collectCPUInfo(fs, h, s)
	collectDMI(fs, h, s)
	collectCrypto(fs, h, s)
	collectOSRelease(fs, h, s)
	collectTuners(fs, h, s)
	collectFixes(fs, h, s)
}
