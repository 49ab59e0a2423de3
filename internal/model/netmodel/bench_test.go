package netmodel

import (
	"fmt"
	"testing"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// synthSample is a host with 64 NICs (13 statistics and 100 driver drop
// counters each) and 192 CPUs.
func synthSample(t int64, k uint64) snapshot.NetSample {
	s := snapshot.NetSample{MonotonicNS: t, SNMP: map[string]int64{"Udp.RcvbufErrors": int64(k), "Udp.InErrors": int64(k)}}
	for i := 0; i < 64; i++ {
		c := snapshot.NetCounters{Name: fmt.Sprintf("eth%d", i), Stats: map[string]uint64{}, Driver: map[string]uint64{}}
		for _, n := range []string{"rx_packets", "tx_packets", "rx_dropped", "rx_missed_errors", "rx_fifo_errors", "rx_over_errors", "rx_errors", "rx_nohandler", "tx_dropped", "tx_fifo_errors", "tx_errors", "tx_aborted_errors", "tx_carrier_errors"} {
			c.Stats[n] = k
		}
		for q := 0; q < 100; q++ {
			c.Driver[fmt.Sprintf("rx%d_buff_alloc_err", q)] = k
		}
		s.Interfaces = append(s.Interfaces, c)
	}
	for c := 0; c < 192; c++ {
		s.Softnet = append(s.Softnet, snapshot.SoftnetCPU{CPU: c, Dropped: k, TimeSqueeze: k})
	}
	return s
}

// BenchmarkRates is the analysis half of one watch interval on that host.
func BenchmarkRates(b *testing.B) {
	a, c := synthSample(0, 1), synthSample(1e9, 2)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Rates(a, c); err != nil {
			b.Fatal(err)
		}
	}
}
