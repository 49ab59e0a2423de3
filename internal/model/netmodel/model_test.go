package netmodel

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/snapshot"
)

func f64(v float64) *float64 { return &v }
func u64(v uint64) *uint64   { return &v }

func TestRates(t *testing.T) {
	a := snapshot.NetSample{
		MonotonicNS: 1e9,
		Interfaces:  []snapshot.NetCounters{{Name: "eth0", Stats: map[string]uint64{"rx_missed_errors": 10, "rx_dropped": 5, "rx_packets": 1}, Driver: map[string]uint64{"rx_out_of_buffer": 7}, Qdisc: &snapshot.QdiscCounters{Drops: math.MaxUint32 - 1}}},
		Softnet:     []snapshot.SoftnetCPU{{CPU: 0, Dropped: math.MaxUint32 - 9, TimeSqueeze: 3}},
		SNMP:        map[string]int64{"Udp.RcvbufErrors": 100, "Udp.InErrors": 100},
	}
	b := snapshot.NetSample{
		MonotonicNS: 3e9, // two seconds later
		Interfaces:  []snapshot.NetCounters{{Name: "eth0", Stats: map[string]uint64{"rx_missed_errors": 30, "rx_dropped": 5, "rx_packets": 9}, Driver: map[string]uint64{"rx_out_of_buffer": 7}, Qdisc: &snapshot.QdiscCounters{Drops: 3}}, {Name: "veth0", Stats: map[string]uint64{"rx_dropped": 4}}},
		Softnet:     []snapshot.SoftnetCPU{{CPU: 0, Dropped: 10, TimeSqueeze: 3}},
		SNMP:        map[string]int64{"Udp.RcvbufErrors": 140, "Udp.InErrors": 140},
	}
	got, err := Rates(a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := []Counter{
		{Layer: LayerRing, Counter: "rx_missed_errors", Subject: "eth0", Total: 30, Delta: u64(20), PerSecond: f64(10)},
		{Layer: LayerRing, Counter: "rx_out_of_buffer", Subject: "eth0", Total: 7, Delta: u64(0), PerSecond: f64(0)},
		{Layer: LayerDriver, Counter: "rx_dropped", Subject: "eth0", Total: 5, Delta: u64(0), PerSecond: f64(0), Aggregate: true},
		// veth0 appeared between the samples: total only.
		{Layer: LayerDriver, Counter: "rx_dropped", Subject: "veth0", Total: 4, Aggregate: true},
		// softnet counters are 32-bit and wrapped: 10 more than 2^32-10 is 20.
		{Layer: LayerBacklog, Counter: "softnet_dropped", Subject: "cpu0", Total: 10, Delta: u64(20), PerSecond: f64(10)},
		{Layer: LayerBacklog, Counter: "softnet_flow_limit", Subject: "cpu0", Total: 0, Delta: u64(0), PerSecond: f64(0)},
		{Layer: LayerBudget, Counter: "softnet_time_squeeze", Subject: "cpu0", Total: 3, Delta: u64(0), PerSecond: f64(0)},
		{Layer: LayerSocket, Counter: "Udp.InErrors", Subject: "sockets", Total: 140, Delta: u64(40), PerSecond: f64(20), Aggregate: true},
		{Layer: LayerSocket, Counter: "Udp.RcvbufErrors", Subject: "sockets", Total: 140, Delta: u64(40), PerSecond: f64(20)},
		{Layer: LayerQdisc, Counter: "qdisc_drops", Subject: "eth0", Total: 3, Delta: u64(5), PerSecond: f64(2.5)},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	top, ok := Top(got)
	if !ok || top.Counter != "Udp.RcvbufErrors" {
		t.Errorf("top = %+v, want Udp.RcvbufErrors (aggregate Udp.InErrors ties but is never top)", top)
	}
	sum := Summarize(got)
	if *sum[0].PerSecond != 10 || sum[1].Total != 0 || *sum[4].PerSecond != 20 {
		t.Errorf("summary: ring %v driver total %d socket %v", *sum[0].PerSecond, sum[1].Total, *sum[4].PerSecond)
	}
	if _, err := Rates(b, a); err == nil {
		t.Error("samples out of order: no error")
	}
}

func TestBuild(t *testing.T) {
	if m, err := Build(&snapshot.Snapshot{}); m != nil || err != nil {
		t.Fatalf("no net section: %v %v", m, err)
	}
	speed := int64(25000)
	s := &snapshot.Snapshot{Net: &snapshot.Net{
		Interfaces: []snapshot.NetInterface{
			{Name: "eth0", Driver: "hv_netvsc"},
			{Name: "enP1s1", Driver: "mlx5_core", Master: "eth0", SpeedMbps: &speed, Queues: []snapshot.NetQueue{{Name: "rx-0", RPSCPUs: "00000000,00000001"}, {Name: "rx-1", RPSCPUs: "0"}, {Name: "tx-0"}}},
			{Name: "veth1", Kind: "veth", Iflink: 7},
		},
		Samples: []snapshot.NetSample{{Softnet: []snapshot.SoftnetCPU{{CPU: 0, Dropped: 4}}}},
	}}
	m, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	if m.IntervalSeconds != 0 || m.RatesUnknown == "" || m.CPUs != 1 {
		t.Errorf("one sample: interval %v unknown %q cpus %d", m.IntervalSeconds, m.RatesUnknown, m.CPUs)
	}
	if len(m.Counters) != 1 || m.Counters[0].Counter != "softnet_dropped" || m.Counters[0].PerSecond != nil {
		t.Errorf("counters (zero totals left out, no rates): %+v", m.Counters)
	}
	roles := []string{m.Interfaces[0].Role, m.Interfaces[1].Role, m.Interfaces[2].Role}
	for i, want := range []string{"synthetic NIC (Azure); VF enP1s1 (mlx5_core) carries the data path", "SR-IOV VF of eth0", "veth, peer ifindex 7"} {
		if len(roles[i]) < len(want) || roles[i][:len(want)] != want {
			t.Errorf("role %d = %q, want prefix %q", i, roles[i], want)
		}
	}
	if m.Interfaces[1].RXQueues != 2 || m.Interfaces[1].RPSQueues != 1 {
		t.Errorf("queues: %+v", m.Interfaces[1])
	}
}

func TestTopPrefersDrops(t *testing.T) {
	cs := []Counter{
		{Layer: LayerBudget, Counter: "softnet_time_squeeze", Subject: "cpu0", Delta: u64(900), PerSecond: f64(900)},
		{Layer: LayerBacklog, Counter: "softnet_dropped", Subject: "cpu0", Delta: u64(5), PerSecond: f64(5)},
	}
	if top, ok := Top(cs); !ok || top.Layer != LayerBacklog {
		t.Errorf("top = %+v: a drop counter must win over a squeeze", top)
	}
	if top, ok := Top(cs[:1]); !ok || top.Layer != LayerBudget {
		t.Errorf("top = %+v: squeeze alone is the top offender", top)
	}
	if _, ok := Top(nil); ok {
		t.Error("top of nothing")
	}
}

// TestBuildSamplesOutOfOrder: a damaged snapshot whose samples go back in
// time still gives a model, with totals and the reason there are no rates.
func TestBuildSamplesOutOfOrder(t *testing.T) {
	smp := func(ns int64, dropped uint64) snapshot.NetSample {
		return snapshot.NetSample{MonotonicNS: ns, Softnet: []snapshot.SoftnetCPU{{CPU: 0, Dropped: dropped}}}
	}
	s := &snapshot.Snapshot{Net: &snapshot.Net{Samples: []snapshot.NetSample{smp(5e9, 3), smp(4e9, 7)}}}
	m, err := Build(s)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if m.IntervalSeconds != 0 || m.CPUs != 1 || !strings.Contains(m.RatesUnknown, "not in time order") || !strings.Contains(m.RatesUnknown, "collect it again") {
		t.Errorf("model of out-of-order samples: interval %v, CPUs %d, rates unknown %q", m.IntervalSeconds, m.CPUs, m.RatesUnknown)
	}
	want := []Counter{{Layer: LayerBacklog, Counter: "softnet_dropped", Subject: "cpu0", Total: 7}}
	if d := cmp.Diff(want, m.Counters); d != "" {
		t.Errorf("counters (-want +got):\n%s", d)
	}
}

// TestTrafficIsNoDropCounter: Udp.InDatagrams is kept for the share of a
// socket drop, and is no layer's drop counter.
func TestTrafficIsNoDropCounter(t *testing.T) {
	for _, c := range Totals(snapshot.NetSample{SNMP: map[string]int64{"Udp.InDatagrams": 5, "Udp6.InDatagrams": 6, "Udp.RcvbufErrors": 1}}) {
		if SNMPTraffic[c.Counter] {
			t.Errorf("%s counted as a %s drop counter", c.Counter, c.Layer)
		}
	}
}
