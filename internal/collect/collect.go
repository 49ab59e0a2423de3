// Package collect runs the collectors that read the live host and assembles
// their answers into a snapshot. Collectors are the only code that touches
// the host; each records what it could not read in the manifest rather than
// failing the whole run.
package collect

import (
	"context"
	"os"
	"time"

	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/collect/host"
	"github.com/slowpath/slowpath/internal/collect/network"
	"github.com/slowpath/slowpath/internal/collect/storage"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Options selects what to collect and from where.
type Options struct {
	FS      hostfs.FS
	Version string // slowpath version, recorded in the manifest
	Cloud   cloud.Options
	Net     network.Options
	// Now is the clock; tests fix it.
	Now func() time.Time
}

// Run collects a full snapshot. It does not fail on missing data: errors are
// recorded in the manifest, and analysis reports them as unknowns.
func Run(ctx context.Context, o Options) *snapshot.Snapshot {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	s := &snapshot.Snapshot{Manifest: snapshot.Manifest{
		FormatVersion: snapshot.FormatVersion,
		Tool:          "slowpath " + o.Version,
		CollectedAt:   now().UTC(),
	}}
	if h, err := os.Hostname(); err == nil {
		s.Manifest.Hostname = h
	}
	host.Collect(o.FS, s)
	storage.Collect(ctx, o.FS, s)
	cloud.Collect(ctx, o.Cloud, s)
	network.Collect(ctx, o.FS, o.Net, s)
	s.SortErrors()
	return s
}
