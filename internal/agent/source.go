package agent

import (
	"bufio"
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/slowpath/slowpath/internal/collect"
	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/collect/network"
	"github.com/slowpath/slowpath/internal/collect/storage"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// CollectorRun is how one collector fared in the snapshot a scrape reads:
// the registry's (collect.Names), and net.counters, storage.counters,
// snapshot and drops, which are the agent's own.
type CollectorRun = collect.CollectorRun

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
//
// The cipher of dmcrypt.tax is measured with the topology (the host.cipher
// collector doctor runs: one core, CipherDuration, only where something
// encrypts on this CPU and only on this host's own roots), and the
// counters of the devices on encrypted paths are read on every scrape, so
// the check judges the scrape interval, not the time since boot.
type Live struct {
	// FS is the roots, their live sources already decided (LiveSources
	// is recorded in the snapshot's manifest).
	FS               hostfs.FS
	LiveSources      hostfs.LiveSources
	Version          string
	Cloud            cloud.Options
	TopologyInterval time.Duration
	// Cipher says where dmcrypt.tax's cipher figure comes from.
	Cipher collect.Cipher
	// OpenDM opens the device-mapper control; nil is the host's own, only
	// when FS.Live (storage.Collector). Tests answer for a fixture tree.
	OpenDM func() (storage.DMControl, error)
	// Now is the clock; tests fix it.
	Now func() time.Time

	mu       sync.Mutex
	topo     *snapshot.Snapshot
	topoRuns []CollectorRun
	topoAt   time.Time
	sampler  *network.Sampler
	prev     *snapshot.NetSample
	// statDevs are the devices on encrypted paths, whose stat is read on
	// every scrape; prevStat is the last reading of each, at prevStatAt.
	statDevs []string
	// model is the storage model of topo and its encrypted devices: it
	// holds no counters, so one serves every scrape until the topology is
	// read again.
	model      *topology
	prevStat   map[string]*snapshot.BlockStat
	prevStatAt time.Time
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
	s, runs, _ := l.snapshotTopology(ctx)
	return s, runs
}

// topology is what a Source knows of a snapshot's topology that the
// exporter would otherwise derive again on every scrape.
type topology struct {
	// model is storagemodel.Build of the snapshot's topology.
	model *storagemodel.Model
	// encrypted is EncryptedDevices(model.Paths).
	encrypted []string

	once   sync.Once
	static []*family
}

// rendered are the families of the model alone (emitStorage,
// emitTaxPaths: 3,076 of the 12,894 series at 512 dm-crypt devices) as
// text, made at the first scrape that needs them.
func (t *topology) rendered() []*family {
	t.once.Do(func() {
		out := newTextSink(nil)
		emitStorage(out, t.model.Paths)
		emitTaxPaths(out, t.model.Paths)
		for _, f := range out.families() {
			var buf bytes.Buffer
			w := bufio.NewWriter(&buf)
			f.writeText(w)
			w.Flush()
			t.static = append(t.static, &family{d: f.d, typ: f.typ, text: buf.Bytes()})
		}
	})
	return t.static
}

// topologySource is a Source that keeps its topology's model.
type topologySource interface {
	snapshotTopology(ctx context.Context) (*snapshot.Snapshot, []CollectorRun, *topology)
}

// snapshotTopology is Snapshot with the model of the cached topology,
// taken under the same lock.
func (l *Live) snapshotTopology(ctx context.Context) (*snapshot.Snapshot, []CollectorRun, *topology) {
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
	if l.topo.Storage != nil && len(l.statDevs) > 0 {
		start := time.Now()
		ok := l.readStats(&s, now)
		runs = append(runs, CollectorRun{Name: "storage.counters", Success: ok, Duration: time.Since(start)})
	}
	s.SortErrors()
	return &s, runs, l.model
}

// diskstatsAbove is how many devices on encrypted paths the agent reads
// with a stat file each; above it, /proc/diskstats once. A typical node
// has 2-4, fewer files than diskstats has lines (every loop device of a
// Kubernetes node is one).
const diskstatsAbove = 16

// readStats reads the counters of every device on an encrypted path into
// a copy of the storage section: Stat the counters now, StatWindow their
// growth since the last reading. A counter that went backwards (the device
// was removed and made again under its name) gives no window for that
// device this time.
func (l *Live) readStats(s *snapshot.Snapshot, now time.Time) bool {
	st := *l.topo.Storage
	st.BlockDevices = append([]snapshot.BlockDevice(nil), st.BlockDevices...)
	byName := map[string]*snapshot.BlockDevice{}
	for i := range st.BlockDevices {
		byName[st.BlockDevices[i].Name] = &st.BlockDevices[i]
	}
	cur := map[string]*snapshot.BlockStat{}
	ok := true
	// Many devices: one /proc/diskstats for all instead of a stat file
	// each (512 dm-crypt devices over partitions follow 1,028: 13 ms of
	// a scrape in opens). A device it lacks, or a diskstats that cannot
	// be read, falls back to the device's stat file.
	var all map[string]*snapshot.BlockStat
	if len(l.statDevs) > diskstatsAbove {
		want := make(map[string]bool, len(l.statDevs))
		for _, name := range l.statDevs {
			want[name] = true
		}
		all, _ = storage.ReadDiskstats(l.FS, want)
	}
	for _, name := range l.statDevs {
		v := all[name]
		if v == nil {
			var err error
			if v, err = storage.ReadBlockStat(l.FS, name); err != nil {
				s.AddError("storage.counters", l.FS.SysPath("class", "block", name, "stat"), err)
				ok = false
				continue
			}
		}
		cur[name] = v
		d := byName[name]
		if d == nil {
			continue
		}
		d.Stat = v
		if p := l.prevStat[name]; p != nil && now.After(l.prevStatAt) {
			d.StatWindow = subStat(v, p)
		}
	}
	st.Windowed = true
	if now.After(l.prevStatAt) {
		st.StatWindowMS = max(now.Sub(l.prevStatAt).Milliseconds(), 1)
	}
	s.Storage = &st
	l.prevStat, l.prevStatAt = cur, now
	return ok
}

// subStat is cur minus prev, field by field; nil when any counter went
// backwards. in_flight is a gauge: cur's.
func subStat(cur, prev *snapshot.BlockStat) *snapshot.BlockStat {
	pairs := [][2]uint64{
		{cur.ReadIOs, prev.ReadIOs}, {cur.ReadMerges, prev.ReadMerges}, {cur.ReadSectors, prev.ReadSectors}, {cur.ReadTicksMS, prev.ReadTicksMS},
		{cur.WriteIOs, prev.WriteIOs}, {cur.WriteMerges, prev.WriteMerges}, {cur.WriteSectors, prev.WriteSectors}, {cur.WriteTicksMS, prev.WriteTicksMS},
		{cur.IOTicksMS, prev.IOTicksMS}, {cur.TimeInQueueMS, prev.TimeInQueueMS},
		{cur.DiscardIOs, prev.DiscardIOs}, {cur.DiscardMerges, prev.DiscardMerges}, {cur.DiscardSectors, prev.DiscardSectors}, {cur.DiscardTicksMS, prev.DiscardTicksMS},
		{cur.FlushIOs, prev.FlushIOs}, {cur.FlushTicksMS, prev.FlushTicksMS},
	}
	d := make([]uint64, len(pairs))
	for i, p := range pairs {
		if p[0] < p[1] {
			return nil
		}
		d[i] = p[0] - p[1]
	}
	return &snapshot.BlockStat{Fields: cur.Fields,
		ReadIOs: d[0], ReadMerges: d[1], ReadSectors: d[2], ReadTicksMS: d[3],
		WriteIOs: d[4], WriteMerges: d[5], WriteSectors: d[6], WriteTicksMS: d[7],
		InFlight: cur.InFlight, IOTicksMS: d[8], TimeInQueueMS: d[9],
		DiscardIOs: d[10], DiscardMerges: d[11], DiscardSectors: d[12], DiscardTicksMS: d[13],
		FlushIOs: d[14], FlushTicksMS: d[15]}
}

// refreshTopology runs the collector registry once, as doctor does.
func (l *Live) refreshTopology(ctx context.Context, now time.Time) {
	s, runs := collect.Collect(ctx, collect.Options{FS: l.FS, LiveSources: l.LiveSources, Version: l.Version,
		Cloud: l.Cloud, OpenDM: l.OpenDM, Cipher: l.Cipher, Now: func() time.Time { return now }})
	l.topo, l.topoRuns, l.topoAt = s, runs, now
	m := storagemodel.Build(s)
	l.statDevs = nil
	if s.Storage != nil {
		l.statDevs = EncryptedDevices(m.Paths)
	}
	l.model = &topology{model: m, encrypted: l.statDevs}
	// The topology's own stat reading starts the first window. Later
	// refreshes keep the last scrape's readings, so the scrape that reads
	// the topology again still judges a whole interval (a device made
	// again under its name shows as counters gone backwards: no window).
	if l.prevStat == nil && s.Storage != nil {
		l.prevStat, l.prevStatAt = map[string]*snapshot.BlockStat{}, now
		for i := range s.Storage.BlockDevices {
			if d := &s.Storage.BlockDevices[i]; d.Stat != nil {
				l.prevStat[d.Name] = d.Stat
			}
		}
	}
	// The topology's own counter sample is as good as a scrape's.
	if s.Net != nil && len(s.Net.Samples) > 0 && l.prev == nil {
		smp := s.Net.Samples[len(s.Net.Samples)-1]
		l.prev = &smp
	}
}
