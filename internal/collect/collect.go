// Package collect runs the collectors that read the live host and assembles
// their answers into a snapshot. Collectors are the only code that touches
// the host; each records what it could not read in the manifest rather than
// failing the whole run.
package collect

import (
	"context"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/collect/host"
	"github.com/slowpath/slowpath/internal/collect/network"
	"github.com/slowpath/slowpath/internal/collect/storage"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Options selects what to collect and from where.
type Options struct {
	FS hostfs.FS
	// LiveSources decides whether the live-only sources run (FS.Live is
	// set from it): auto (the zero value) when the roots are this host's.
	LiveSources hostfs.LiveSources
	Version     string // slowpath version, recorded in the manifest
	Cloud       cloud.Options
	Net         network.Options
	// Now is the clock; tests fix it.
	Now func() time.Time
}

// AddFlags registers --live-sources; the cloud and network options add
// their own.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.Var(&o.LiveSources, "live-sources", hostfs.FlagUsage)
	o.Cloud.AddFlags(fs)
	o.Net.AddFlags(fs)
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
	fs := o.FS.WithLiveSources(o.LiveSources)
	// The tree's own name (what os.Hostname reads for the live root), not
	// this machine's.
	if h, err := hostfs.ReadValue(fs.ProcPath("sys", "kernel", "hostname")); err == nil {
		s.Manifest.Hostname = h
	}
	s.Manifest.LiveSources = &snapshot.LiveSources{Mode: o.LiveSources.String(), Used: fs.Live}
	if err := fs.NotLive(); err != nil {
		s.Manifest.LiveSources.Reason = err.Error()
	}
	// The network collector shares nothing with the others: it runs at
	// the same time, into its own snapshot (AddError is not safe for
	// concurrent use), and is merged after. On a 2-CPU host this takes
	// doctor's collection from the sum of the two to about the longer.
	ns := &snapshot.Snapshot{}
	var wg sync.WaitGroup
	wg.Go(func() { network.Collect(ctx, fs, o.Net, ns) })
	host.Collect(fs, s)
	storage.Collect(ctx, fs, s)
	// After storage (it measures only where something encrypts on this
	// CPU), while the network collector still sleeps between its samples.
	host.CollectCipher(ctx, fs, s, nil)
	co := o.Cloud
	co.NotLive = fs.NotLive()
	cloud.Collect(ctx, co, s) // after host: it reads the DMI
	wg.Wait()
	s.Net = ns.Net
	s.Manifest.Errors = append(s.Manifest.Errors, ns.Manifest.Errors...)
	s.SortErrors()
	return s
}
