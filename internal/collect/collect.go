// Package collect runs the collectors that read the live host and assembles
// their answers into a snapshot. Collectors are the only code that touches
// the host; each records what it could not read in the manifest rather than
// failing the whole run. The registry below is the one list of them:
// doctor and collect run it once, the agent at each topology refresh.
package collect

import (
	"context"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/collect/engine"
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
	// OpenDM opens the device-mapper control; nil is the host's own, only
	// when FS.Live (storage.Collector). Tests answer for a fixture tree.
	OpenDM func() (storage.DMControl, error)
	// Cipher is how the host.cipher collector gets its figure.
	Cipher Cipher
	// Now is the clock; tests fix it.
	Now func() time.Time
}

// Cipher is how the cipher figure of dmcrypt.tax is had. The zero value
// measures it (host.CollectCipher: one core, only where something
// encrypts on this CPU, only on this host's own roots).
type Cipher struct {
	// Off takes no figure: dmcrypt.tax stays unknown.
	Off bool
	// BytesPerSec, when set, is taken instead of measuring (one core's
	// AES-XTS, from slowpath lab crypto-limit on a node of the same type).
	BytesPerSec float64
	// What says where BytesPerSec came from, for the snapshot.
	What string
	// Measure measures; nil is cipherlimit.Measure.
	Measure host.CipherMeasure
}

// AddFlags registers --live-sources; the cloud and network options add
// their own.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.Var(&o.LiveSources, "live-sources", hostfs.FlagUsage)
	o.Cloud.AddFlags(fs)
	o.Net.AddFlags(fs)
}

// Validate checks the options' values as the flags gave them.
func (o Options) Validate() error {
	if err := o.Cloud.Validate(); err != nil {
		return err
	}
	return o.Net.Validate()
}

// Collector is one entry of the registry.
type Collector struct {
	// Name is the collector's name in the agent's
	// slowpath_scrape_collector_success{collector}.
	Name string
	// Apart runs the collector beside the others, into a snapshot of its
	// own merged after (AddError is not safe for concurrent use): the
	// network collector sleeps between its two samples, so on a 2-CPU host
	// collecting takes about the longer of it and the rest, not the sum.
	Apart bool
	// Collect fills its part of s; false when it did not run (a cipher
	// figure given or turned off).
	Collect func(ctx context.Context, o *Options, s *snapshot.Snapshot) bool
	// OK says whether it produced its part.
	OK func(s *snapshot.Snapshot) bool
}

// registry is every collector, in the order they run: the cipher reads
// what storage found, cloud the DMI the host collector read.
var registry = []Collector{
	{Name: "host",
		Collect: func(_ context.Context, o *Options, s *snapshot.Snapshot) bool { host.Collect(o.FS, s); return true },
		OK:      func(s *snapshot.Snapshot) bool { return s.Host != nil }},
	{Name: "storage",
		Collect: func(ctx context.Context, o *Options, s *snapshot.Snapshot) bool {
			(&storage.Collector{FS: o.FS, OpenDM: o.OpenDM}).Collect(ctx, s)
			return true
		},
		OK: func(s *snapshot.Snapshot) bool { return s.Storage != nil }},
	{Name: "cipher", Collect: collectCipher,
		OK: func(s *snapshot.Snapshot) bool { return !hasError(s, host.CipherCollector) }},
	// No cloud detected is a success: the collector ran and found none.
	{Name: "cloud",
		Collect: func(ctx context.Context, o *Options, s *snapshot.Snapshot) bool {
			co := o.Cloud
			co.NotLive = o.FS.NotLive()
			cloud.Collect(ctx, co, s)
			return true
		},
		OK: func(s *snapshot.Snapshot) bool { return s.Cloud == nil || s.Cloud.MetadataError == "" }},
	// Database servers and their own encryption: files of each
	// process's root, read through /proc like the rest.
	{Name: "engine",
		Collect: func(_ context.Context, o *Options, s *snapshot.Snapshot) bool { engine.Collect(o.FS, s); return true },
		OK:      func(s *snapshot.Snapshot) bool { return s.Engines != nil }},
	{Name: "net", Apart: true,
		Collect: func(ctx context.Context, o *Options, s *snapshot.Snapshot) bool {
			network.Collect(ctx, o.FS, o.Net, s)
			return true
		},
		OK: func(s *snapshot.Snapshot) bool { return s.Net != nil && len(s.Net.Interfaces) > 0 }},
}

func collectCipher(ctx context.Context, o *Options, s *snapshot.Snapshot) bool {
	switch c := o.Cipher; {
	case c.Off:
		return false
	case c.BytesPerSec > 0:
		if s.Host != nil {
			s.Host.Cipher = &snapshot.CipherLimit{Algorithm: "xts(aes)", KeyBits: 512, Method: "given",
				BytesPerSecPerCore: c.BytesPerSec, What: c.What}
		}
		return false
	default:
		host.CollectCipher(ctx, o.FS, s, c.Measure)
		return true
	}
}

// Names are the registered collectors' names, in the order they run.
func Names() []string {
	out := make([]string, len(registry))
	for i, c := range registry {
		out[i] = c.Name
	}
	return out
}

// CollectorRun is how one collector fared: the agent's
// slowpath_scrape_collector_success and _duration_seconds.
type CollectorRun struct {
	Name     string
	Success  bool
	Duration time.Duration
}

// Collect runs every registered collector over o.FS as given (its live
// sources already decided) and says how each fared. It does not fail on
// missing data: errors are recorded in the manifest, and analysis reports
// them as unknowns.
func Collect(ctx context.Context, o Options) (*snapshot.Snapshot, []CollectorRun) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	s := &snapshot.Snapshot{Manifest: snapshot.Manifest{
		FormatVersion: snapshot.FormatVersion,
		Tool:          "slowpath " + o.Version,
		CollectedAt:   now().UTC(),
	}}
	// The tree's own name (what os.Hostname reads for the live root), not
	// this machine's.
	if h, err := hostfs.ReadValue(o.FS.ProcPath("sys", "kernel", "hostname")); err == nil {
		s.Manifest.Hostname = h
	}
	s.Manifest.LiveSources = &snapshot.LiveSources{Mode: o.LiveSources.String(), Used: o.FS.Live}
	if err := o.FS.NotLive(); err != nil {
		s.Manifest.LiveSources.Reason = err.Error()
	}
	runs := make([]*CollectorRun, len(registry))
	timed := func(i int, s *snapshot.Snapshot) {
		c := registry[i]
		start := time.Now()
		if c.Collect(ctx, &o, s) {
			runs[i] = &CollectorRun{Name: c.Name, Success: c.OK(s), Duration: time.Since(start)}
		}
	}
	var apart []*snapshot.Snapshot
	var wg sync.WaitGroup
	for i, c := range registry {
		if c.Apart {
			as := &snapshot.Snapshot{}
			apart = append(apart, as)
			wg.Go(func() { timed(i, as) })
		}
	}
	for i, c := range registry {
		if !c.Apart {
			timed(i, s)
		}
	}
	wg.Wait()
	for _, as := range apart {
		if as.Net != nil {
			s.Net = as.Net
		}
		s.Manifest.Errors = append(s.Manifest.Errors, as.Manifest.Errors...)
	}
	s.SortErrors()
	var out []CollectorRun
	for _, r := range runs {
		if r != nil {
			out = append(out, *r)
		}
	}
	return s, out
}

// Run collects a full snapshot, its live sources decided by o.LiveSources.
func Run(ctx context.Context, o Options) *snapshot.Snapshot {
	o.FS = o.FS.WithLiveSources(o.LiveSources)
	s, _ := Collect(ctx, o)
	return s
}

func hasError(s *snapshot.Snapshot, collector string) bool {
	for _, e := range s.Manifest.Errors {
		if e.Collector == collector {
			return true
		}
	}
	return false
}
