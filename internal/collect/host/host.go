// Package host collects kernel release, CPU flags, DMI identity and crypto
// drivers into snapshot.Host.
package host

import (
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Collect fills s.Host. Placeholder until the storage collectors land (issue 2).
func Collect(fs hostfs.FS, s *snapshot.Snapshot) {}
