package netlab

import (
	"context"

	"github.com/slowpath/slowpath/internal/lab/hostlock"
)

// stateDir holds the host-wide lock and one state file per live lab.
// /run is a tmpfs: a reboot clears it, as it clears namespaces and sysctls.
var stateDir = "/run/slowpath/netlab"

// acquireLock takes the host-wide netlab lock. One lab runs at a time on a
// host: netdev_max_backlog and softnet_stat are global, so two labs (say two
// test packages run in parallel by `go test ./...`) would spoil each other's
// numbers.
func acquireLock(ctx context.Context) (*hostlock.Lock, error) {
	return hostlock.Acquire(ctx, stateDir, "wait for another netlab to finish")
}
