package benchcmd

import (
	"github.com/slowpath/slowpath/internal/experiment"
	"github.com/slowpath/slowpath/internal/hostfs"
)

// ClaimDevice is experiment.ClaimDevice for the external tests: the
// exclusive open a --device run holds, and its release.
func ClaimDevice(fs hostfs.FS, dev, mm string) (release func() error, err error) {
	f, err := experiment.ClaimDevice(fs, dev, mm)
	if err != nil {
		return nil, err
	}
	return f.Close, nil
}
