// Package agent exposes slowpath's analysis as Prometheus metrics. Each
// scrape takes a snapshot from a Source (a saved one, or the live host with
// the topology cached and counters fresh), runs the same pure analysis as
// doctor, and turns findings, storage paths, dm-crypt flags, rings and drop
// counters into metrics. docs/agent.md lists every metric and bounds its
// labels.
package agent

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/netmodel"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/safetext"
	"github.com/slowpath/slowpath/internal/snapshot"
)

const ns = "slowpath"

// CryptFlags are the optional dm-crypt table flags exported per mapping,
// each at 0 or 1, in the kernel's spelling
// (Documentation/admin-guide/device-mapper/dm-crypt.rst).
var CryptFlags = []string{
	"allow_discards", "same_cpu_crypt", "submit_from_crypt_cpus",
	"no_read_workqueue", "no_write_workqueue", "high_priority", "iv_large_sectors",
}

var (
	descFinding = newDesc(ns+"_finding",
		"A check's finding: 1 when it fires on subject. Every registered check is exported, at 0 with subject=\"\" when it fires nowhere.",
		[]string{"id", "severity", "subject"})
	descUnknown = newDesc(ns+"_finding_unknown",
		"1 when a check could not decide for subject (evidence missing); doctor's summary says why.",
		[]string{"id", "subject"})
	descNodeInfo = newDesc(ns+"_node_info",
		"The node as the snapshot describes it; labels for grouping in PromQL and `slowpath fleet --by`.",
		[]string{"cloud", "instance_type", "region", "kernel"})
	descLayers = newDesc(ns+"_storage_encryption_layers",
		"Encryption layers counted on a mounted filesystem's path down to the hardware and cloud.",
		[]string{"mountpoint", "device"})
	descUnknownLayers = newDesc(ns+"_storage_encryption_layers_unknown",
		"Layers of a path that may encrypt but cannot be seen from inside the machine (EBS, persistent disks).",
		[]string{"mountpoint", "device"})
	descLayer = newDesc(ns+"_storage_encryption_layer",
		"One encrypting layer of a path (1), with where its encryption runs: service-cpu, kernel-cpu, hypervisor-host, drive, cloud-storage-service.",
		[]string{"mountpoint", "device", "depth", "kind", "name", "encrypted_by"})
	descEngine = newDesc(ns+"_storage_engine_encryption",
		"A database engine's own encryption setting that is on, on the path holding its data (1): the engine layer, which runs in the service's threads (service-cpu).",
		[]string{"mountpoint", "engine", "setting"})
	descCryptFlag = newDesc(ns+"_dmcrypt_flag",
		"A dm-crypt mapping's optional flag: 1 set, 0 not set.",
		[]string{"device", "name", "flag"})
	descCryptSector = newDesc(ns+"_dmcrypt_sector_size_bytes",
		"A dm-crypt mapping's encryption sector size.",
		[]string{"device", "name"})
	descRing = newDesc(ns+"_net_ring_entries",
		"NIC descriptor ring size in use (ethtool -g current).",
		[]string{"interface", "queue"})
	descRingMax = newDesc(ns+"_net_ring_max_entries",
		"NIC descriptor ring pre-set maximum (ethtool -g maximums).",
		[]string{"interface", "queue"})
	descDrops = newDesc(ns+"_net_drops_total",
		"Packets lost, by receive-path layer (ring, driver, backlog, socket, qdisc) and the kernel counter that counted them; counters that repeat other layers' drops are in slowpath_net_drops_aggregate_total instead.",
		[]string{"layer", "counter", "subject"})
	descAggregate = newDesc(ns+"_net_drops_aggregate_total",
		"Drop counters that also count drops of other layers (rx_dropped, Udp InErrors, ...): shown, never summed with slowpath_net_drops_total.",
		[]string{"layer", "counter", "subject"})
	descSqueeze = newDesc(ns+"_net_time_squeeze_total",
		"NAPI rounds that stopped with work left (budget layer, softnet_stat time_squeeze), per CPU.",
		[]string{"layer", "counter", "subject"})
	descSysctl = newDesc(ns+"_net_sysctl",
		"A receive-path sysctl as read (net.core.netdev_max_backlog, ...).",
		[]string{"name"})
	descFixApplied = newDesc(ns+"_fix_applied",
		"A runtime setting slowpath fix --apply changed on this node and that still holds: the Unix time it was set (0 when its state file did not record it). Which node runs which change, for canary verdicts.",
		[]string{"id", "subject", "key", "value"})
	descSuccess = newDesc(ns+"_scrape_collector_success",
		"1 when the collector produced its section of the snapshot.",
		[]string{"collector"})
	descDuration = newDesc(ns+"_scrape_collector_duration_seconds",
		"Time the collector took the last time it ran (topology collectors run on the slow interval).",
		[]string{"collector"})
	descErrors = newDesc(ns+"_scrape_collector_errors",
		"Things the collector could not read in the snapshot being served (manifest errors).",
		[]string{"collector"})
)

// Exporter is a prometheus.Collector over a Source.
type Exporter struct {
	Source Source
	Config check.Config
	// Drops, when set, adds slowpath_skb_drops_total from the eBPF counter.
	Drops DropsReader

	// hint is the series per family of the last scrape Handler served.
	hint atomic.Pointer[[]int]
}

// Describe sends every fixed descriptor.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*desc{descFinding, descUnknown, descNodeInfo, descLayers, descUnknownLayers, descLayer, descEngine,
		descCryptFlag, descCryptSector, descRing, descRingMax, descDrops, descAggregate, descSqueeze, descSysctl,
		descFixApplied, descSuccess, descDuration, descErrors} {
		ch <- d.prom()
	}
	for _, d := range taxDescs {
		ch <- d.prom()
	}
	if e.Drops != nil {
		ch <- descSkbDrops.prom()
	}
}

// Collect takes a snapshot, analyses it and sends the metrics as const
// metrics (what a registry gathers; tests and `Scrape`). The agent's own
// /metrics writes the same series straight as text (Handler).
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	e.collect(&sink{ch: ch})
}

// collect takes a snapshot, analyses it and adds its series to out.
func (e *Exporter) collect(out *sink) {
	var (
		s    *snapshot.Snapshot
		runs []CollectorRun
		topo *topology
	)
	if ts, ok := e.Source.(topologySource); ok {
		s, runs, topo = ts.snapshotTopology(context.Background())
	} else {
		s, runs = e.Source.Snapshot(context.Background())
	}
	if s != nil {
		start := time.Now()
		ok := emit(out, s, topo, e.Config)
		runs = append(runs, CollectorRun{Name: "analyze", Success: ok, Duration: time.Since(start)})
	}
	if e.Drops != nil {
		start := time.Now()
		ok := emitDrops(out, e.Drops)
		runs = append(runs, CollectorRun{Name: "drops", Success: ok, Duration: time.Since(start)})
	}
	errs := map[string]int{}
	if s != nil {
		for _, ce := range s.Manifest.Errors {
			errs[collectorOf(ce.Collector)]++
		}
	}
	for _, r := range runs {
		out.add(descSuccess, prometheus.GaugeValue, b2f(r.Success), r.Name)
		out.add(descDuration, prometheus.GaugeValue, r.Duration.Seconds(), r.Name)
		if r.Name != "analyze" && r.Name != "drops" {
			out.add(descErrors, prometheus.GaugeValue, float64(errsFor(errs, r.Name)), r.Name)
		}
	}
}

// collectorOf maps a manifest collector ("storage.dm", "net.ethtool.stats")
// to the exporter's collector names: the counter readers of every scrape
// are net.counters, the rest is named by its first element.
func collectorOf(c string) string {
	switch c {
	case "net.stats", "net.softnet", "net.qdisc", "net.ethtool.stats", "net.snmp":
		return "net.counters"
	case "host.cipher":
		return "cipher"
	case "storage.counters":
		return c
	}
	first, _, _ := strings.Cut(c, ".")
	return first
}

// errsFor counts manifest errors under name; a saved snapshot has one
// collector ("snapshot") for all of them.
func errsFor(errs map[string]int, name string) int {
	if name != "snapshot" {
		return errs[name]
	}
	n := 0
	for _, v := range errs {
		n += v
	}
	return n
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Emit analyses s and sends its metrics. It reports false when analysis
// failed (a model could not be built); collector metrics still go out.
func Emit(ch chan<- prometheus.Metric, s *snapshot.Snapshot, cfg check.Config) bool {
	return emit(&sink{ch: ch}, s, nil, cfg)
}

// emit is Emit with the topology's model when the source keeps it (nil:
// built from s).
func emit(out *sink, s *snapshot.Snapshot, topo *topology, cfg check.Config) bool {
	var (
		r   *analyze.Report
		err error
	)
	if topo != nil {
		r, err = analyze.RunStorage(s, topo.model, cfg)
	} else {
		r, err = analyze.Run(s, cfg)
	}
	if err != nil {
		return false
	}
	var encrypted []string
	if topo != nil {
		encrypted = topo.encrypted
	} else {
		encrypted = EncryptedDevices(r.Storage)
	}
	emitNode(out, s)
	emitFixes(out, s.Host)
	emitFindings(out, r.Findings)
	// The storage series come from the model alone: with the model kept
	// with the topology, written once for every scrape until it changes.
	static := topo != nil && out.ch == nil
	if static {
		for _, f := range topo.rendered() {
			out.fams[f.d.id] = f
		}
	} else {
		emitStorage(out, r.Storage)
	}
	emitTax(out, s, r.Storage, encrypted, !static)
	if s.Net != nil {
		emitNet(out, s.Net, r.Network)
	}
	return true
}

func emitNode(out *sink, s *snapshot.Snapshot) {
	var provider, itype, region, kernel string
	if c := s.Cloud; c != nil {
		provider, itype, region = c.Provider, c.InstanceType, c.Region
	}
	if s.Host != nil {
		kernel = s.Host.KernelRelease
	}
	out.add(descNodeInfo, prometheus.GaugeValue, 1, provider, itype, region, kernel)
}

// emitFixes sends one slowpath_fix_applied per change slowpath's fix made
// that still holds on the node.
func emitFixes(out *sink, h *snapshot.Host) {
	if h == nil {
		return
	}
	for _, f := range h.Fixes {
		at := 0.0
		if !f.AppliedAt.IsZero() {
			at = float64(f.AppliedAt.Unix())
		}
		out.add(descFixApplied, prometheus.GaugeValue, at, f.ID, f.Subject, f.Key, f.Value)
	}
}

func emitFindings(out *sink, fs []check.Finding) {
	fired := map[string]bool{}
	type key struct{ id, sev, subject string }
	seen := map[key]bool{}
	for _, f := range fs {
		switch f.Status {
		case check.Fail:
			k := key{f.ID, f.Severity.String(), f.Subject}
			if seen[k] {
				continue // one series per label set
			}
			seen[k] = true
			fired[f.ID] = true
			out.add(descFinding, prometheus.GaugeValue, 1, k.id, k.sev, k.subject)
		case check.Unknown:
			k := key{f.ID, "unknown", f.Subject}
			if seen[k] {
				continue
			}
			seen[k] = true
			out.add(descUnknown, prometheus.GaugeValue, 1, f.ID, f.Subject)
		}
	}
	// Absence must never read as healthy: a check that did not fire says
	// so with a 0 at its default severity.
	for _, c := range check.All() {
		if !fired[c.ID] {
			out.add(descFinding, prometheus.GaugeValue, 0, c.ID, c.Severity.String(), "")
		}
	}
}

func emitStorage(out *sink, paths []storagemodel.Path) {
	type pathKey struct{ mp, dev string }
	seen := map[pathKey]bool{}
	crypts := map[string]*storagemodel.Layer{}
	for i := range paths {
		p := &paths[i]
		if p.Empty {
			continue // a detached loop or empty zram device: listed by doctor, not analysed
		}
		k := pathKey{p.MountPoint, pathDevice(p)}
		if seen[k] {
			continue
		}
		seen[k] = true
		out.add(descLayers, prometheus.GaugeValue, float64(p.EncryptionLayers), k.mp, k.dev)
		out.add(descUnknownLayers, prometheus.GaugeValue, float64(p.UnknownEncryptionLayers), k.mp, k.dev)
		type layerKey struct {
			depth      int
			kind, name string
		}
		lseen := map[layerKey]bool{}
		for j := range p.Layers {
			l := &p.Layers[j]
			if l.Crypt != nil && l.Device != "" {
				crypts[l.Device] = l
			}
			if !l.Encrypted {
				continue
			}
			lk := layerKey{l.Depth, l.Kind, l.Name}
			if lseen[lk] {
				continue
			}
			lseen[lk] = true
			out.add(descLayer, prometheus.GaugeValue, 1,
				k.mp, k.dev, strconv.Itoa(l.Depth), l.Kind, safetext.Clean(l.Name), l.EncryptedBy)
			emitEngine(out, k.mp, l)
		}
	}
	devs := make([]string, 0, len(crypts))
	for d := range crypts {
		devs = append(devs, d)
	}
	sort.Strings(devs)
	for _, d := range devs {
		l := crypts[d]
		set := map[string]bool{}
		for _, f := range l.Crypt.Flags() {
			set[f] = true
		}
		for _, f := range CryptFlags {
			out.add(descCryptFlag, prometheus.GaugeValue, b2f(set[f]), d, l.Name, f)
		}
		sector := l.Crypt.SectorSize
		if sector == 0 {
			sector = 512 // the kernel's default when the table names none
		}
		out.add(descCryptSector, prometheus.GaugeValue, float64(sector), d, l.Name)
	}
}

// maxEngineSeries bounds the engine settings exported per path: an engine
// has a handful (MariaDB's tables, log, temporary files, binary log); more
// is a malformed snapshot, not more to watch.
const maxEngineSeries = 32

// emitEngine exports the settings of an engine layer that encrypt, one
// series each, labelled by the engine's name (the snapshot's constant, not
// the product) so the series stay few.
func emitEngine(out *sink, mp string, l *storagemodel.Layer) {
	if l.Kind != storagemodel.LayerEngine {
		return
	}
	seen := map[[2]string]bool{}
	for _, e := range l.Engines {
		for _, s := range e.Settings {
			k := [2]string{safetext.Clean(e.Engine), safetext.Clean(s.Setting)}
			if seen[k] || len(seen) >= maxEngineSeries {
				continue
			}
			seen[k] = true
			out.add(descEngine, prometheus.GaugeValue, 1, mp, k[0], k[1])
		}
	}
}

// pathDevice is the block device a path's filesystem sits on: the first
// layer below the filesystem that has a kernel name.
func pathDevice(p *storagemodel.Path) string {
	if p.Device != "" {
		return p.Device
	}
	for _, l := range p.Layers {
		if l.Device != "" {
			return l.Device
		}
	}
	return ""
}

func emitNet(out *sink, n *snapshot.Net, m *netmodel.Model) {
	if m != nil {
		for _, ifc := range m.Interfaces {
			if ifc.Ring == nil {
				continue
			}
			out.add(descRing, prometheus.GaugeValue, float64(ifc.Ring.RX), ifc.Name, "rx")
			out.add(descRing, prometheus.GaugeValue, float64(ifc.Ring.TX), ifc.Name, "tx")
			out.add(descRingMax, prometheus.GaugeValue, float64(ifc.Ring.RXMax), ifc.Name, "rx")
			out.add(descRingMax, prometheus.GaugeValue, float64(ifc.Ring.TXMax), ifc.Name, "tx")
		}
	}
	names := make([]string, 0, len(n.Sysctls))
	for k := range n.Sysctls {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		out.add(descSysctl, prometheus.GaugeValue, float64(n.Sysctls[k]), k)
	}
	if len(n.Samples) == 0 {
		return
	}
	// Totals of the last sample: Prometheus computes rates itself, and a
	// zero counter is exported too, so rate() has a start.
	for _, c := range netmodel.Totals(n.Samples[len(n.Samples)-1]) {
		d := descDrops
		switch {
		case c.Layer == netmodel.LayerBudget:
			d = descSqueeze
		case c.Aggregate:
			d = descAggregate
		}
		out.add(d, prometheus.CounterValue, float64(c.Total), string(c.Layer), c.Counter, c.Subject)
	}
}
