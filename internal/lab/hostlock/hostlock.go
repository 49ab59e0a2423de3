// Package hostlock is the host-wide exclusive lock a throwaway lab holds
// while it runs: an flock on DIR/lock under /run, so a reboot (which also
// clears the lab's namespaces, sysctls and devices) clears it too, and a
// killed holder releases it with its descriptor.
package hostlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Lock is held until Release.
type Lock struct{ f *os.File }

// Acquire takes the exclusive flock on dir/lock, creating dir, and waits
// for another holder until ctx ends; busy names the holder for that error
// ("another crypt lab is running").
func Acquire(ctx context.Context, dir, busy string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lab state dir: %w", err)
	}
	p := filepath.Join(dir, "lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return &Lock{f: f}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", p, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("%s (lock %s): %w", busy, p, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Release drops the lock (closing the descriptor drops the flock).
func (l *Lock) Release() error { return l.f.Close() }
