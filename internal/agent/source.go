package agent

import (
	"context"
	"sync"
	"time"

	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/collect/host"
	"github.com/slowpath/slowpath/internal/collect/network"
	"github.com/slowpath/slowpath/internal/collect/storage"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// CollectorRun is how one collector fared in the snapshot a scrape reads:
// slowpath_scrape_collector_success and _duration_seconds.
type CollectorRun struct {
	Name     string // host, storage, cloud, net, net.counters, snapshot, drops
	Success  bool   // the collector produced its section
	Duration time.Duration
}

// Source gives the exporter the snapshot to analyse on each scrape.
type Source interface {
	Snapshot(ctx context.Context) (*snapshot.Snapshot, []CollectorRun)
}

// Fixed serves one saved snapshot (`slowpath agent --from FILE`): what a
// fleet test or a replay of a field snapshot needs.
type Fixed struct {
	S        *snapshot.Snapshot
	LoadTime time.Duration
}

// Snapshot returns the saved snapshot.
func (f *Fixed) Snapshot(context.Context) (*snapshot.Snapshot, []CollectorRun) {
	return f.S, []CollectorRun{{Name: "snapshot", Success: f.S != nil, Duration: f.LoadTime}}
}

// Live reads this host. The topology (host identity, storage stack, cloud
// facts, interfaces with their rings and the sysctls) changes rarely and
// costs the most to read (a DM ioctl per mapping, an IMDS request), so it
// is read again only after TopologyInterval; drop counters are sampled on
// every scrape. The previous scrape's sample is kept as the first of two,
// so checks that need rates see the rate between two scrapes.
type Live struct {
	FS               hostfs.FS
	Version          string
	Cloud            cloud.Options
	TopologyInterval time.Duration
	// Now is the clock; tests fix it.
	Now func() time.Time

	mu       sync.Mutex
	topo     *snapshot.Snapshot
	topoRuns []CollectorRun
	topoAt   time.Time
	sampler  *network.Sampler
	prev     *snapshot.NetSample
}

// Close releases the sampler's ethtool socket.
func (l *Live) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sampler != nil {
		l.sampler.Close()
		l.sampler = nil
	}
}

func (l *Live) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// Snapshot returns the cached topology with fresh counters. Scrapes are
// serialised: two at once would read the same counters twice.
func (l *Live) Snapshot(ctx context.Context) (*snapshot.Snapshot, []CollectorRun) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if l.topo == nil || now.Sub(l.topoAt) >= l.TopologyInterval {
		l.refreshTopology(ctx, now)
	}
	runs := append([]CollectorRun(nil), l.topoRuns...)

	if l.sampler == nil {
		l.sampler = network.NewSampler(l.FS, network.Options{})
	}
	start := time.Now()
	cur, errs := l.sampler.Sample()
	runs = append(runs, CollectorRun{Name: "net.counters", Success: len(cur.Interfaces) > 0 || len(cur.Softnet) > 0, Duration: time.Since(start)})

	// A shallow copy: sections are shared with the cache and never
	// modified after collection; only the samples and errors are new.
	s := *l.topo
	s.Manifest.Errors = append([]snapshot.CollectError(nil), l.topo.Manifest.Errors...)
	for _, e := range errs {
		s.AddError(e.Collector, e.Path, e.Err)
	}
	if l.topo.Net != nil {
		n := *l.topo.Net
		n.Samples = []snapshot.NetSample{cur}
		if l.prev != nil && l.prev.MonotonicNS < cur.MonotonicNS {
			n.Samples = []snapshot.NetSample{*l.prev, cur}
		}
		s.Net = &n
	}
	l.prev = &cur
	s.SortErrors()
	return &s, runs
}

// refreshTopology runs every collector once, timing each, as collect.Run
// does for doctor.
func (l *Live) refreshTopology(ctx context.Context, now time.Time) {
	s := &snapshot.Snapshot{Manifest: snapshot.Manifest{
		FormatVersion: snapshot.FormatVersion,
		Tool:          "slowpath " + l.Version,
		CollectedAt:   now.UTC(),
	}}
	var runs []CollectorRun
	timed := func(name string, fn func(), ok func() bool) {
		start := time.Now()
		fn()
		runs = append(runs, CollectorRun{Name: name, Success: ok(), Duration: time.Since(start)})
	}
	timed("host", func() { host.Collect(l.FS, s) }, func() bool { return s.Host != nil })
	timed("storage", func() { storage.Collect(ctx, l.FS, s) }, func() bool { return s.Storage != nil })
	// No cloud detected is a success: the collector ran and found none.
	timed("cloud", func() { cloud.Collect(ctx, l.Cloud, s) }, func() bool { return s.Cloud == nil || s.Cloud.MetadataError == "" })
	timed("net", func() { network.Collect(ctx, l.FS, network.Options{}, s) }, func() bool { return s.Net != nil && len(s.Net.Interfaces) > 0 })
	s.SortErrors()
	l.topo, l.topoRuns, l.topoAt = s, runs, now
	// The topology's own counter sample is as good as a scrape's.
	if s.Net != nil && len(s.Net.Samples) > 0 && l.prev == nil {
		smp := s.Net.Samples[len(s.Net.Samples)-1]
		l.prev = &smp
	}
}
