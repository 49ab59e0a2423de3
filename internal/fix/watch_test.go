package fix

import (
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/netmodel"
)

func rate(v float64) *float64 { return &v }

func model(cs ...netmodel.Counter) *netmodel.Model {
	return &netmodel.Model{IntervalSeconds: 1, Counters: cs}
}

func TestVerify(t *testing.T) {
	backlog := Entry{ID: "net.backlog-drops", Subject: "softnet"}
	ring := Entry{ID: "net.ring-undersized", Subject: "eth0"}
	drops := func(r float64) netmodel.Counter {
		return netmodel.Counter{Layer: netmodel.LayerBacklog, Counter: "softnet_dropped", Subject: "cpu0", PerSecond: rate(r)}
	}
	ringDrops := func(ifc string, r float64) netmodel.Counter {
		return netmodel.Counter{Layer: netmodel.LayerRing, Counter: "rx_missed_errors", Subject: ifc, PerSecond: rate(r)}
	}
	for _, tt := range []struct {
		name          string
		e             Entry
		before, after *netmodel.Model
		findings      []check.Finding
		holds         bool
		why           string
	}{
		{"drops stopped", backlog, model(drops(900)), model(), nil, true, ""},
		{"drops fewer", backlog, model(drops(900)), model(drops(10)), nil, true, ""},
		{"drops worse", backlog, model(drops(100)), model(drops(300)), nil, false, "got worse: 100.0/s before, 300.0/s after"},
		{"finding remains", backlog, model(drops(100)), model(drops(10)), []check.Finding{{ID: "net.backlog-drops", Subject: "softnet", Status: check.Fail, Summary: "still"}}, false, "still there: still"},
		{"an unknown is not a failure", backlog, model(drops(100)), model(), []check.Finding{{ID: "net.backlog-drops", Subject: "softnet", Status: check.Unknown}}, true, ""},
		{"aggregate counters do not count", backlog, model(drops(100)), model(netmodel.Counter{Layer: netmodel.LayerBacklog, Counter: "softnet_dropped", Subject: "cpu0", PerSecond: rate(500), Aggregate: true}), nil, true, ""},
		{"ring: only its interface", ring, model(ringDrops("eth0", 50)), model(ringDrops("eth1", 5000)), nil, true, ""},
		{"ring worse", ring, model(ringDrops("eth0", 50)), model(ringDrops("eth0", 80)), nil, false, "got worse"},
		{"no counters for dm-crypt", Entry{ID: "dmcrypt.workqueue", Subject: "/dev/mapper/x"}, model(), model(), nil, true, ""},
		{"one sample after", backlog, model(drops(100)), &netmodel.Model{}, nil, true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := Verify(tt.e, tt.before, tt.findings, tt.after)
			if v.Holds != tt.holds || !strings.Contains(v.Why, tt.why) {
				t.Errorf("Verify = %+v, want holds %v and why containing %q", v, tt.holds, tt.why)
			}
		})
	}
}
