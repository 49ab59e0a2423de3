package agent

import (
	"sort"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// The encryption tax in PromQL (docs/agent.md, "The encryption tax"): the
// cipher figure, the layer graph and the block counters of the devices on
// encrypted paths, so the recording rules in
// deploy/kubernetes/prometheusrule.yaml compute, per node and mount, the
// await the dm-crypt layers add against what the cipher costs per I/O.
var (
	descCipher = newDesc(ns+"_cipher_bytes_per_second",
		"One core's AES-XTS throughput as measured at the last topology refresh (host.cipher), or as given with --collector.cipher.bytes-per-second (driver=\"\").",
		[]string{"algorithm", "driver", "key_bits"})
	descCPUs = newDesc(ns+"_cpus",
		"CPUs of the node: the cores that can encrypt at once, in the cipher's expected cost per I/O.",
		nil)
	descLayerInfo = newDesc(ns+"_storage_layer_info",
		"One edge of the storage layer graph: the block device of a layer of mountpoint's path and the device directly beneath it (lower=\"\" at the bottom); joins node_exporter's node_disk_* by device.",
		[]string{"mountpoint", "device", "lower", "kind", "encrypts", "runs_on"})
	descTaxSpan = newDesc(ns+"_dmcrypt_tax_span",
		"The dm-crypt layers of a path's encryption chain (the value), from the topmost dm-crypt device (device) to the one device beneath the lowest (lower): where the encryption tax is read. table=\"unread\": a layer's device-mapper table was not read (no CAP_SYS_ADMIN) and it is dm-crypt by its cryptsetup uuid, its cipher assumed AES-XTS.",
		[]string{"mountpoint", "device", "lower", "table"})
	descDiskIOs = newDesc(ns+"_disk_ios_total",
		"I/Os completed by a device on an encrypted path (/sys/class/block/NAME/stat reads, writes).",
		[]string{"device", "direction"})
	descDiskTime = newDesc(ns+"_disk_io_time_seconds_total",
		"Time the device's completed I/Os took, summed over I/Os (stat read_ticks, write_ticks): over _disk_ios_total it is the await.",
		[]string{"device", "direction"})
	descDiskBytes = newDesc(ns+"_disk_io_bytes_total",
		"Bytes the device's completed I/Os moved (stat sectors × 512).",
		[]string{"device", "direction"})
	descDiskBusy = newDesc(ns+"_disk_io_busy_seconds_total",
		"Time the device had I/O in flight (stat io_ticks).",
		[]string{"device"})
	descDiskWeighted = newDesc(ns+"_disk_io_time_weighted_seconds_total",
		"Sum over I/Os of their time in flight (stat time_in_queue); over _disk_io_busy_seconds_total it is the mean I/Os in flight while busy.",
		[]string{"device"})
)

var taxDescs = []*desc{descCipher, descCPUs, descLayerInfo, descTaxSpan, descDiskIOs, descDiskTime, descDiskBytes, descDiskBusy, descDiskWeighted}

// EncryptedDevices lists the block devices of every path with an
// encryption layer or a dm-crypt span (one inferred from a dm uuid has no
// known encryption layer), sorted: the devices whose counters are exported
// and read on every scrape.
func EncryptedDevices(paths []storagemodel.Path) []string {
	set := map[string]bool{}
	for i := range paths {
		p := &paths[i]
		if p.Empty {
			continue
		}
		if _, span := p.CryptSpan(); p.EncryptionLayers == 0 && !span {
			continue
		}
		for _, l := range p.Layers {
			if l.Device != "" {
				set[l.Device] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

func encrypts(l *storagemodel.Layer) string {
	switch {
	case l.Encrypted:
		return "true"
	case l.EncryptionUnknown:
		return "unknown"
	}
	return "false"
}

// tableLabel is the span's table label: "unread" when a layer of it is
// dm-crypt by its uuid only (storagemodel.InferredCrypt), else "read". Two
// values, one per span: no added cardinality.
func tableLabel(cs storagemodel.CryptSpan) string {
	if len(cs.Inferred()) > 0 {
		return "unread"
	}
	return "read"
}

// emitTax sends the cipher figure, the layer graph and spans of paths
// (emitTaxPaths, topology only) and the counters of the encrypted devices.
func emitTax(out *sink, s *snapshot.Snapshot, paths []storagemodel.Path, encrypted []string, withPaths bool) {
	if s.Host != nil {
		if c := s.Host.Cipher; c != nil && c.BytesPerSecPerCore > 0 {
			out.add(descCipher, prometheus.GaugeValue, c.BytesPerSecPerCore, c.Algorithm, c.Driver, strconv.Itoa(c.KeyBits))
		}
		if s.Host.NumCPU > 0 {
			out.add(descCPUs, prometheus.GaugeValue, float64(s.Host.NumCPU))
		}
	}
	if withPaths {
		emitTaxPaths(out, paths)
	}
	if s.Storage == nil {
		return
	}
	devs := map[string]*snapshot.BlockDevice{}
	for i := range s.Storage.BlockDevices {
		devs[s.Storage.BlockDevices[i].Name] = &s.Storage.BlockDevices[i]
	}
	for _, name := range encrypted {
		d := devs[name]
		if d == nil || d.Stat == nil {
			continue
		}
		st := d.Stat
		for _, dir := range []struct {
			name                string
			ios, sectors, ticks uint64
		}{{"read", st.ReadIOs, st.ReadSectors, st.ReadTicksMS}, {"write", st.WriteIOs, st.WriteSectors, st.WriteTicksMS}} {
			out.add(descDiskIOs, prometheus.CounterValue, float64(dir.ios), name, dir.name)
			out.add(descDiskTime, prometheus.CounterValue, float64(dir.ticks)/1000, name, dir.name)
			out.add(descDiskBytes, prometheus.CounterValue, float64(dir.sectors)*512, name, dir.name)
		}
		out.add(descDiskBusy, prometheus.CounterValue, float64(st.IOTicksMS)/1000, name)
		out.add(descDiskWeighted, prometheus.CounterValue, float64(st.TimeInQueueMS)/1000, name)
	}
}

// emitTaxPaths sends the layer graph's edges and the dm-crypt spans of
// paths: the storage model's alone, the same until the topology is read
// again.
func emitTaxPaths(out *sink, paths []storagemodel.Path) {
	type edge struct{ mp, dev, lower string }
	seen := map[edge]bool{}
	spans := map[[2]string]bool{}
	for i := range paths {
		p := &paths[i]
		if p.Empty {
			continue
		}
		for j := range p.Layers {
			l := &p.Layers[j]
			if l.Device == "" {
				continue
			}
			var lowers []string
			for _, b := range p.Below(j) {
				if b.Depth == l.Depth+1 && b.Device != "" {
					lowers = append(lowers, b.Device)
				}
			}
			if len(lowers) == 0 {
				lowers = []string{""}
			}
			for _, lo := range lowers {
				e := edge{p.MountPoint, l.Device, lo}
				if seen[e] {
					continue
				}
				seen[e] = true
				out.add(descLayerInfo, prometheus.GaugeValue, 1, e.mp, e.dev, e.lower, l.Kind, encrypts(l), l.EncryptedBy)
			}
		}
		if cs, ok := p.CryptSpan(); ok && cs.Beneath != nil && cs.Top().Device != "" {
			k := [2]string{p.MountPoint, cs.Top().Device}
			if !spans[k] {
				spans[k] = true
				out.add(descTaxSpan, prometheus.GaugeValue, float64(len(cs.Crypts)), p.MountPoint, cs.Top().Device, cs.Beneath.Device, tableLabel(cs))
			}
		}
	}
}
