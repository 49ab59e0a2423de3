package netmodel

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// statLayer classifies /sys/class/net/IF/statistics counters
// (Documentation/networking/statistics.rst). rx_packets and tx_packets
// are context, not drops, and are left out.
var statLayer = map[string]struct {
	layer     Layer
	aggregate bool
}{
	// The NIC found no free descriptor or its FIFO overflowed. mlx5 moved
	// rx_out_of_buffer here in 2024; mana maps hc_rx_discards_no_wqe here.
	"rx_missed_errors": {LayerRing, false},
	"rx_fifo_errors":   {LayerRing, false},
	"rx_over_errors":   {LayerRing, false},
	// rx_dropped also counts packets the core dropped (backlog full: see
	// enqueue_to_backlog's dev_core_stats_rx_dropped_inc), so it repeats
	// other layers' drops.
	"rx_dropped":        {LayerDriver, true},
	"rx_errors":         {LayerDriver, true}, // sum of the rx_*_errors
	"rx_nohandler":      {LayerDriver, false},
	"tx_dropped":        {LayerDriver, true},
	"tx_errors":         {LayerDriver, true},
	"tx_fifo_errors":    {LayerDriver, false},
	"tx_aborted_errors": {LayerDriver, false},
	"tx_carrier_errors": {LayerDriver, false},
}

// DriverCounterLayer classifies an `ethtool -S` counter: ring when its
// name says the device had no receive buffer (mlx5 rx_out_of_buffer,
// mana hc_rx_discards_no_wqe, gve rx_no_buffers_posted), driver otherwise.
func DriverCounterLayer(name string) Layer {
	for _, w := range []string{"out_of_buffer", "no_wqe", "no_buf", "missed", "rx_fifo", "rx_over"} {
		if strings.Contains(name, w) {
			return LayerRing
		}
	}
	return LayerDriver
}

// snmpAggregate are socket counters that include others: Udp InErrors
// counts RcvbufErrors and checksum errors too (net/ipv4/udp.c).
// SNMPTraffic are the SNMP counters of traffic, not drops: the datagrams
// delivered, which a socket drop's share is taken of. They are no layer's
// drop counter.
var SNMPTraffic = map[string]bool{"Udp.InDatagrams": true, "Udp6.InDatagrams": true}

var snmpAggregate = map[string]bool{"Udp.InErrors": true, "Udp6.InErrors": true, "TcpExt.ListenDrops": true}

// Totals lists every drop counter of one sample with its total only.
func Totals(s snapshot.NetSample) []Counter {
	var out []Counter
	eachCounter(s, func(c Counter) { out = append(out, c) })
	sortCounters(out)
	return out
}

type counterKey struct {
	layer            Layer
	counter, subject string
}

// Rates lists every drop counter of b with its rate since a. Counters
// absent from a (an interface that appeared) get no rate. A counter that
// went backwards wrapped (softnet_stat and qdisc counters are 32-bit) or
// was reset with its device; 32-bit wraps are unwrapped, resets count from 0.
func Rates(a, b snapshot.NetSample) ([]Counter, error) {
	dt := float64(b.MonotonicNS-a.MonotonicNS) / 1e9
	if dt <= 0 {
		return nil, fmt.Errorf("counter samples not in time order (%d ns then %d ns)", a.MonotonicNS, b.MonotonicNS)
	}
	// Sized to the sample: a fixed 1024 allocated 125 kB at every agent
	// scrape of a host with 100 counters.
	n := 0
	eachCounter(a, func(Counter) { n++ })
	prev := make(map[counterKey]uint64, n)
	eachCounter(a, func(c Counter) { prev[counterKey{c.Layer, c.Counter, c.Subject}] = c.Total })
	out := make([]Counter, 0, len(prev))
	// Deltas and rates live in two arrays the counters point into: one
	// allocation each instead of two per counter.
	deltas := make([]uint64, 0, len(prev))
	known := make([]bool, 0, len(prev))
	eachCounter(b, func(c Counter) {
		p, ok := prev[counterKey{c.Layer, c.Counter, c.Subject}]
		out = append(out, c)
		deltas = append(deltas, Delta(p, c.Total))
		known = append(known, ok)
	})
	rates := make([]float64, len(out))
	for i := range out {
		if known[i] {
			rates[i] = float64(deltas[i]) / dt
			out[i].Delta, out[i].PerSecond = &deltas[i], &rates[i]
		}
	}
	sortCounters(out)
	return out, nil
}

// Delta is how far a counter moved from prev to cur: a 32-bit counter
// (softnet_stat's columns) that wrapped is counted across the wrap; a
// larger one that went backwards was reset, and counts from zero.
func Delta(prev, cur uint64) uint64 {
	switch {
	case cur >= prev:
		return cur - prev
	case prev <= math.MaxUint32:
		return cur + (1 << 32) - prev
	default:
		return cur
	}
}

// eachCounter calls fn for every drop counter in a sample.
func eachCounter(s snapshot.NetSample, fn func(Counter)) {
	for _, ifc := range s.Interfaces {
		for name, v := range ifc.Stats {
			cl, ok := statLayer[name]
			if !ok {
				continue
			}
			fn(Counter{Layer: cl.layer, Counter: name, Subject: ifc.Name, Total: v, Aggregate: cl.aggregate})
		}
		for name, v := range ifc.Driver {
			fn(Counter{Layer: DriverCounterLayer(name), Counter: name, Subject: ifc.Name, Total: v})
		}
		if q := ifc.Qdisc; q != nil {
			fn(Counter{Layer: LayerQdisc, Counter: "qdisc_drops", Subject: ifc.Name, Total: q.Drops})
		}
	}
	for _, c := range s.Softnet {
		sub := "cpu" + strconv.Itoa(c.CPU)
		fn(Counter{Layer: LayerBacklog, Counter: "softnet_dropped", Subject: sub, Total: c.Dropped})
		fn(Counter{Layer: LayerBacklog, Counter: "softnet_flow_limit", Subject: sub, Total: c.FlowLimitCount})
		fn(Counter{Layer: LayerBudget, Counter: "softnet_time_squeeze", Subject: sub, Total: c.TimeSqueeze})
	}
	for name, v := range s.SNMP {
		if v < 0 || SNMPTraffic[name] {
			continue
		}
		fn(Counter{Layer: LayerSocket, Counter: name, Subject: SubjectSockets, Total: uint64(v), Aggregate: snmpAggregate[name]})
	}
}
