// Package netmodel builds the network data-path model from a snapshot: per
// interface and per CPU, every drop counter with its total and (when the
// snapshot holds two samples) its rate, grouped by the layer of the
// receive path it belongs to. It is pure: no I/O, no clock. Checks,
// `slowpath net` and `slowpath net watch` all read it.
package netmodel

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// Layer is where in the data path a counter counts losses. The names are
// part of the JSON contract of `slowpath net watch`.
type Layer string

const (
	// LayerRing: the NIC had no free RX descriptor (ring too small or not
	// refilled fast enough): rx_missed_errors, mlx5 rx_out_of_buffer,
	// mana hc_rx_discards_no_wqe.
	LayerRing Layer = "ring"
	// LayerDriver: other drops the driver or device counts (cloud
	// allowances, hv_netvsc rx_comp_busy, virtio per-queue drops, and the
	// generic rx_dropped/tx_dropped, which also include stack drops).
	LayerDriver Layer = "driver"
	// LayerBacklog: the per-CPU input backlog was full
	// (net.core.netdev_max_backlog): softnet_stat dropped, flow limit.
	LayerBacklog Layer = "backlog"
	// LayerBudget: softirq processing stopped with work left
	// (net.core.netdev_budget, netdev_budget_usecs): softnet time_squeeze.
	// Not a drop by itself; it is why backlogs and rings fill.
	LayerBudget Layer = "budget"
	// LayerSocket: a socket's receive or send buffer was full
	// (Udp RcvbufErrors, TcpExt ListenDrops, ...).
	LayerSocket Layer = "socket"
	// LayerQdisc: the transmit queueing discipline dropped.
	LayerQdisc Layer = "qdisc"
)

// Layers lists the layers in receive-path order, NIC first.
var Layers = []Layer{LayerRing, LayerDriver, LayerBacklog, LayerBudget, LayerSocket, LayerQdisc}

// SubjectSockets is the subject of socket-layer counters: they count for
// every socket of the network namespace the sample was read in.
const SubjectSockets = "sockets"

// Model is the network data path of one host.
type Model struct {
	Interfaces []Interface `json:"interfaces"`
	// Sysctls are the receive-path sysctls as collected.
	Sysctls     map[string]int64      `json:"sysctls,omitempty"`
	DropReasons *snapshot.DropReasons `json:"drop_reasons,omitempty"`
	// CPUs is the number of CPUs softnet_stat listed.
	CPUs int `json:"cpus"`
	// IntervalSeconds is the time between the two samples rates come from;
	// 0 when the snapshot holds one sample and rates are unknown.
	IntervalSeconds float64 `json:"interval_seconds"`
	// RatesUnknown says why there are no rates, when there are none.
	RatesUnknown string `json:"rates_unknown,omitempty"`
	// Counters are the drop counters whose total is not zero, ordered by
	// layer, subject and name.
	Counters []Counter `json:"counters"`
	// Summary is one line per layer: the summed rate and total of its
	// counters, leaving out aggregate ones.
	Summary []LayerSummary `json:"summary"`
}

// Interface is one network interface with what matters for the data path.
type Interface struct {
	Name      string   `json:"name"`
	Kind      string   `json:"kind,omitempty"`
	Driver    string   `json:"driver,omitempty"`
	BusInfo   string   `json:"bus_info,omitempty"`
	SpeedMbps *int64   `json:"speed_mbps,omitempty"`
	MTU       int      `json:"mtu,omitempty"`
	OperState string   `json:"operstate,omitempty"`
	Master    string   `json:"master,omitempty"`
	Lower     []string `json:"lower,omitempty"`
	Upper     []string `json:"upper,omitempty"`
	// PeerIfindex is a veth's peer.
	PeerIfindex int `json:"peer_ifindex,omitempty"`
	// Role explains the interface's place: "synthetic NIC of VF mlx5_0"
	// (Azure accelerated networking), "SR-IOV VF of eth0", "veth", ...
	Role     string             `json:"role,omitempty"`
	Ring     *snapshot.Ring     `json:"ring,omitempty"`
	Channels *snapshot.Channels `json:"channels,omitempty"`
	// RingUnsupported is true when the driver has no ring parameters.
	RingUnsupported bool `json:"ring_unsupported,omitempty"`
	RXQueues        int  `json:"rx_queues,omitempty"`
	// RPSQueues counts RX queues with a non-empty RPS mask.
	RPSQueues int `json:"rps_queues,omitempty"`
	IRQs      int `json:"irqs,omitempty"`
}

// Counter is one drop counter of one subject.
type Counter struct {
	Layer   Layer  `json:"layer"`
	Counter string `json:"counter"` // rx_missed_errors, softnet_dropped, Udp.RcvbufErrors, ...
	Subject string `json:"subject"` // interface name, "cpu3" or "sockets"
	// Total is the value at the last sample: since boot or since the
	// device appeared. It proves nothing about now.
	Total uint64 `json:"total"`
	// Delta and PerSecond compare the last two samples; nil when the
	// snapshot has one sample.
	Delta     *uint64  `json:"delta,omitempty"`
	PerSecond *float64 `json:"per_second,omitempty"`
	// Aggregate marks counters that also count drops another layer counts
	// (rx_dropped includes backlog drops; Udp InErrors includes
	// RcvbufErrors). They are shown but never named the top offender.
	Aggregate bool `json:"aggregate,omitempty"`
}

// Rising reports whether the counter grew between the samples.
func (c Counter) Rising() bool { return c.Delta != nil && *c.Delta > 0 }

// LayerSummary sums a layer's non-aggregate counters.
type LayerSummary struct {
	Layer     Layer    `json:"layer"`
	Total     uint64   `json:"total"`
	PerSecond *float64 `json:"per_second,omitempty"`
}

// Build derives the model from a snapshot. A snapshot without a network
// section gives a nil model and no error.
func Build(s *snapshot.Snapshot) (*Model, error) {
	if s.Net == nil {
		return nil, nil
	}
	n := s.Net
	m := &Model{Sysctls: n.Sysctls, DropReasons: n.DropReasons, Interfaces: []Interface{}}
	byName := map[string]*snapshot.NetInterface{}
	for i := range n.Interfaces {
		byName[n.Interfaces[i].Name] = &n.Interfaces[i]
	}
	for _, ifc := range n.Interfaces {
		m.Interfaces = append(m.Interfaces, buildInterface(ifc, byName))
	}
	switch len(n.Samples) {
	case 0:
		m.RatesUnknown = "no counter sample in the snapshot"
		m.Counters = []Counter{}
	case 1:
		m.RatesUnknown = "one counter sample only (collected with --net-interval 0): totals since boot, no rates"
		m.Counters = Totals(n.Samples[0])
		m.CPUs = len(n.Samples[0].Softnet)
	default:
		a, b := n.Samples[len(n.Samples)-2], n.Samples[len(n.Samples)-1]
		cs, err := Rates(a, b)
		if err != nil {
			// A damaged or hand-edited snapshot: report the totals and
			// say why there are no rates rather than drop the whole report.
			m.RatesUnknown = err.Error() + ": the snapshot is damaged, collect it again; totals since boot of the last sample, no rates"
			m.Counters = Totals(b)
			m.CPUs = len(b.Softnet)
			break
		}
		m.IntervalSeconds = float64(b.MonotonicNS-a.MonotonicNS) / 1e9
		m.Counters = cs
		m.CPUs = len(b.Softnet)
	}
	m.Summary = Summarize(m.Counters)
	m.Counters = nonZero(m.Counters)
	return m, nil
}

func nonZero(cs []Counter) []Counter {
	out := []Counter{}
	for _, c := range cs {
		if c.Total != 0 || c.Rising() {
			out = append(out, c)
		}
	}
	return out
}

func buildInterface(ifc snapshot.NetInterface, byName map[string]*snapshot.NetInterface) Interface {
	out := Interface{
		Name: ifc.Name, Kind: ifc.Kind, Driver: ifc.Driver, BusInfo: ifc.BusInfo, SpeedMbps: ifc.SpeedMbps,
		MTU: ifc.MTU, OperState: ifc.OperState, Master: ifc.Master, Lower: ifc.Lower, Upper: ifc.Upper,
		PeerIfindex: ifc.Iflink, Ring: ifc.Ring, Channels: ifc.Channels, IRQs: len(ifc.IRQs),
	}
	for _, u := range ifc.Unsupported {
		if u == "ring" {
			out.RingUnsupported = true
		}
	}
	for _, q := range ifc.Queues {
		if len(q.Name) > 3 && q.Name[:3] == "rx-" {
			out.RXQueues++
			if !zeroMask(q.RPSCPUs) {
				out.RPSQueues++
			}
		}
	}
	out.Role = role(ifc, byName)
	return out
}

// role names the Azure, AWS and virtual patterns.
func role(ifc snapshot.NetInterface, byName map[string]*snapshot.NetInterface) string {
	if ifc.Master != "" {
		if m, ok := byName[ifc.Master]; ok && m.Driver == "hv_netvsc" {
			return fmt.Sprintf("SR-IOV VF of %s (Azure accelerated networking): traffic flows here, not through %s", ifc.Master, ifc.Master)
		}
		return "enslaved to " + ifc.Master
	}
	if ifc.Driver == "hv_netvsc" {
		for _, other := range byName {
			if other.Master == ifc.Name {
				return fmt.Sprintf("synthetic NIC (Azure); VF %s (%s) carries the data path", other.Name, other.Driver)
			}
		}
		return "synthetic NIC (Azure) without an SR-IOV VF: accelerated networking off or VF not yet attached"
	}
	switch {
	case ifc.Kind == "veth" || ifc.Driver == "veth":
		if ifc.Iflink != 0 {
			return fmt.Sprintf("veth, peer ifindex %d", ifc.Iflink)
		}
		return "veth"
	case ifc.Driver == "ena":
		return "AWS Elastic Network Adapter"
	case ifc.Driver == "virtio_net":
		return "virtio NIC"
	case ifc.Driver == "mana":
		return "Azure MANA NIC"
	}
	return ""
}

// zeroMask reports whether a sysfs CPU mask ("00000000,00000001") is empty.
func zeroMask(s string) bool {
	for _, r := range s {
		if r != '0' && r != ',' {
			return false
		}
	}
	return true
}

// Summarize sums each layer's non-aggregate counters, in layer order.
func Summarize(cs []Counter) []LayerSummary {
	out := make([]LayerSummary, 0, len(Layers))
	for _, l := range Layers {
		s := LayerSummary{Layer: l}
		var rate float64
		haveRate := false
		for _, c := range cs {
			if c.Layer != l || c.Aggregate {
				continue
			}
			s.Total += c.Total
			if c.PerSecond != nil {
				rate += *c.PerSecond
				haveRate = true
			}
		}
		if haveRate {
			s.PerSecond = &rate
		}
		out = append(out, s)
	}
	return out
}

// Top returns the top offender: the non-aggregate rising counter with the
// highest rate. Packet drops come first: time_squeeze (budget layer)
// counts softirq rounds, not packets, so it is named only when no drop
// counter rose. ok is false when nothing rose.
func Top(cs []Counter) (Counter, bool) {
	var best, squeeze Counter
	ok, okSqueeze := false, false
	for _, c := range cs {
		if c.Aggregate || c.PerSecond == nil || *c.PerSecond <= 0 {
			continue
		}
		if c.Layer == LayerBudget {
			if !okSqueeze || *c.PerSecond > *squeeze.PerSecond {
				squeeze, okSqueeze = c, true
			}
			continue
		}
		if !ok || *c.PerSecond > *best.PerSecond {
			best, ok = c, true
		}
	}
	if ok {
		return best, true
	}
	return squeeze, okSqueeze
}

func layerIndex(l Layer) int {
	for i, x := range Layers {
		if x == l {
			return i
		}
	}
	return len(Layers)
}

// sortCounters orders by layer, subject (cpu2 before cpu10) and name. Keys
// are computed once: watch sorts thousands of counters every interval.
func sortCounters(cs []Counter) {
	type key struct {
		layer, cpu int
	}
	keys := make([]key, len(cs))
	for i, c := range cs {
		keys[i] = key{layerIndex(c.Layer), cpuNumber(c.Subject)}
	}
	idx := make([]int, len(cs))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool {
		ka, kb := keys[idx[a]], keys[idx[b]]
		if ka.layer != kb.layer {
			return ka.layer < kb.layer
		}
		ca, cb := &cs[idx[a]], &cs[idx[b]]
		if ca.Subject != cb.Subject {
			if ka.cpu >= 0 && kb.cpu >= 0 {
				return ka.cpu < kb.cpu
			}
			return ca.Subject < cb.Subject
		}
		return ca.Counter < cb.Counter
	})
	sorted := make([]Counter, len(cs))
	for i, j := range idx {
		sorted[i] = cs[j]
	}
	copy(cs, sorted)
}

// cpuNumber is N for a "cpuN" subject, -1 otherwise.
func cpuNumber(s string) int {
	if !strings.HasPrefix(s, "cpu") {
		return -1
	}
	n, err := strconv.Atoi(s[3:])
	if err != nil {
		return -1
	}
	return n
}
