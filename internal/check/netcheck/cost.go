package netcheck

import (
	"fmt"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/netmodel"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/units"
)

// flowRate is the rate, over the model's interval (its last two samples),
// of a quantity read from each sample: the packets that reached a layer,
// which its drops are a share of. ok is false when a sample lacks it or
// it went backwards (a counter reset).
func flowRate(s *snapshot.Snapshot, m *netmodel.Model, get func(snapshot.NetSample) (uint64, bool)) (float64, bool) {
	if s == nil || s.Net == nil || len(s.Net.Samples) < 2 || m.IntervalSeconds <= 0 {
		return 0, false
	}
	a, b := s.Net.Samples[len(s.Net.Samples)-2], s.Net.Samples[len(s.Net.Samples)-1]
	va, oka := get(a)
	vb, okb := get(b)
	if !oka || !okb || vb < va {
		return 0, false
	}
	return float64(vb-va) / m.IntervalSeconds, true
}

// dropCost is the cost of drops at a layer: dropped/s, and, when the
// packets that passed the layer are known, the share of all that reached
// it (passed + dropped). None passed is a counter that did not move (a
// hand-made or damaged sample), not a layer that drops everything: no share.
func dropCost(dropped, passed float64, havePassed bool, layer string) *check.Cost {
	c := &check.Cost{Figure: fmt.Sprintf("%s packets/s dropped at the %s", units.Rate(dropped), layer)}
	if havePassed && passed > 0 {
		share := dropped / (dropped + passed)
		c.Share = &share
		c.Figure = fmt.Sprintf("%s packets/s dropped at the %s of %s/s that reached it", units.Rate(dropped), layer, units.Rate(dropped+passed))
	}
	return c
}

// softnetRate is the packets the CPUs' softnet processed per second over
// the model's interval: each CPU's own difference, across a wrap of its
// 32-bit column (netmodel.Delta), summed. A CPU missing from one sample
// is left out.
func softnetRate(s *snapshot.Snapshot, m *netmodel.Model) (float64, bool) {
	if s == nil || s.Net == nil || len(s.Net.Samples) < 2 || m.IntervalSeconds <= 0 {
		return 0, false
	}
	a, b := s.Net.Samples[len(s.Net.Samples)-2], s.Net.Samples[len(s.Net.Samples)-1]
	prev := map[int]uint64{}
	for _, c := range a.Softnet {
		prev[c.CPU] = c.Processed
	}
	var n uint64
	seen := false
	for _, c := range b.Softnet {
		if p, ok := prev[c.CPU]; ok {
			n += netmodel.Delta(p, c.Processed)
			seen = true
		}
	}
	return float64(n) / m.IntervalSeconds, seen
}

// udpDelivered is the UDP datagrams delivered to sockets, v4 and v6.
func udpDelivered(smp snapshot.NetSample) (uint64, bool) {
	v4, ok4 := smp.SNMP["Udp.InDatagrams"]
	v6, ok6 := smp.SNMP["Udp6.InDatagrams"]
	if (!ok4 && !ok6) || v4 < 0 || v6 < 0 {
		return 0, false
	}
	return uint64(v4) + uint64(v6), true
}

// rxPackets is the packets an interface received.
func rxPackets(name string) func(snapshot.NetSample) (uint64, bool) {
	return func(smp snapshot.NetSample) (uint64, bool) {
		for _, ifc := range smp.Interfaces {
			if ifc.Name == name {
				v, ok := ifc.Stats["rx_packets"]
				return v, ok
			}
		}
		return 0, false
	}
}
