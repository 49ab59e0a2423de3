package netcheck

import (
	"testing"

	"github.com/slowpath/slowpath/internal/model/netmodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// TestDropCost: a share only when packets passed the layer; a counter
// that went backwards (reset) or is missing gives no rate.
func TestDropCost(t *testing.T) {
	if c := dropCost(100, 900, true, "x"); c.Share == nil || *c.Share != 0.1 {
		t.Errorf("100 dropped of 1000: %+v", c)
	}
	for _, tt := range []struct {
		passed float64
		have   bool
	}{{0, true}, {900, false}} {
		if c := dropCost(100, tt.passed, tt.have, "x"); c.Share != nil || c.Figure == "" {
			t.Errorf("passed %v (known %v): %+v, want a figure and no share", tt.passed, tt.have, c)
		}
	}
	s := &snapshot.Snapshot{Net: &snapshot.Net{Samples: []snapshot.NetSample{
		{SNMP: map[string]int64{"Udp.InDatagrams": 1000}},
		{SNMP: map[string]int64{"Udp.InDatagrams": 3000, "Udp6.InDatagrams": 0}},
	}}}
	m := &netmodel.Model{IntervalSeconds: 2}
	if r, ok := flowRate(s, m, udpDelivered); !ok || r != 1000 {
		t.Errorf("delivered rate %v %v, want 1000/s", r, ok)
	}
	s.Net.Samples[1].SNMP["Udp.InDatagrams"] = 10 // reset
	if _, ok := flowRate(s, m, udpDelivered); ok {
		t.Error("a counter that went backwards gave a rate")
	}
	delete(s.Net.Samples[0].SNMP, "Udp.InDatagrams")
	if _, ok := flowRate(s, m, udpDelivered); ok {
		t.Error("a missing counter gave a rate")
	}
}

// TestSoftnetRateAcrossAWrap: softnet_stat's processed column is 32 bits
// per CPU; one CPU wrapping between the samples still counts its packets.
func TestSoftnetRateAcrossAWrap(t *testing.T) {
	s := &snapshot.Snapshot{Net: &snapshot.Net{Samples: []snapshot.NetSample{
		{Softnet: []snapshot.SoftnetCPU{{CPU: 0, Processed: 1000}, {CPU: 1, Processed: 0xFFFFFF00}}},
		{Softnet: []snapshot.SoftnetCPU{{CPU: 0, Processed: 3000}, {CPU: 1, Processed: 0x100}}},
	}}}
	r, ok := softnetRate(s, &netmodel.Model{IntervalSeconds: 2})
	if want := (2000.0 + 0x200) / 2; !ok || r != want {
		t.Errorf("rate %v %v, want %v", r, ok, want)
	}
}
