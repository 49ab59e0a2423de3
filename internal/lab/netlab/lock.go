package netlab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// stateDir holds the host-wide lock and one state file per live lab.
// /run is a tmpfs: a reboot clears it, as it clears namespaces and sysctls.
var stateDir = "/run/slowpath/netlab"

// fileLock is an exclusive flock on stateDir/lock. One lab runs at a time on
// a host: netdev_max_backlog and softnet_stat are global, so two labs (say
// two test packages run in parallel by `go test ./...`) would spoil each
// other's numbers.
type fileLock struct{ f *os.File }

func acquireLock(ctx context.Context) (*fileLock, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("netlab state dir: %w", err)
	}
	p := filepath.Join(stateDir, "lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return &fileLock{f: f}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", p, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for another netlab to finish (lock %s): %w", p, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (l *fileLock) release() error {
	// Closing the descriptor drops the flock.
	return l.f.Close()
}
