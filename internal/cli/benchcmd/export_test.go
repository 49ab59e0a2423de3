package benchcmd

import "github.com/slowpath/slowpath/internal/hostfs"

// ClaimDevice is claimDevice for the external tests: the exclusive open a
// --device run holds, and its release.
func ClaimDevice(fs hostfs.FS, dev, mm string) (release func() error, err error) {
	f, err := claimDevice(fs, dev, mm)
	if err != nil {
		return nil, err
	}
	return f.Close, nil
}
