package fix

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/collect/network"
	"github.com/slowpath/slowpath/internal/model/netmodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// model is a 2 s window with counters given as counts over it.
func model(cs ...netmodel.Counter) *netmodel.Model {
	return &netmodel.Model{IntervalSeconds: 2, Counters: cs}
}

func counted(c netmodel.Counter, n uint64) netmodel.Counter {
	c.Delta = &n
	return c
}

func TestVerify(t *testing.T) {
	backlog := Entry{ID: "net.backlog-drops", Subject: "softnet"}
	ring := Entry{ID: "net.ring-undersized", Subject: "eth0"}
	drops := func(n uint64) netmodel.Counter {
		return counted(netmodel.Counter{Layer: netmodel.LayerBacklog, Counter: "softnet_dropped", Subject: "cpu0"}, n)
	}
	ringDrops := func(ifc string, n uint64) netmodel.Counter {
		return counted(netmodel.Counter{Layer: netmodel.LayerRing, Counter: "rx_missed_errors", Subject: ifc}, n)
	}
	for _, tt := range []struct {
		name          string
		e             Entry
		before, after *netmodel.Model
		findings      []check.Finding
		status        Status
		why           string
	}{
		{"drops stopped", backlog, model(drops(1800)), model(), nil, Verified, ""},
		{"drops fewer", backlog, model(drops(1800)), model(drops(20)), nil, Verified, ""},
		// 200 vs 600 over 2 s: 100/s vs 300/s, margin 3·sqrt(200+600)/2 = 42.4/s.
		{"drops worse", backlog, model(drops(200)), model(drops(600)), nil, Failed, "got worse: 100.0/s before, 300.0/s after (beyond the noise margin ±42.4/s)"},
		// 100 vs 110 over 2 s: 50/s vs 55/s, margin 3·sqrt(210)/2 = 21.7/s.
		{"a rise within the noise", backlog, model(drops(100)), model(drops(110)), nil, NotProven, "did not fall beyond the noise margin: 50.0/s before, 55.0/s after (±21.7/s)"},
		{"a fall within the noise", backlog, model(drops(110)), model(drops(100)), nil, NotProven, "did not fall beyond the noise margin"},
		{"no drops before or after", backlog, model(), model(), nil, NotProven, "±0.0/s"},
		{"finding remains", backlog, model(drops(200)), model(drops(20)), []check.Finding{{ID: "net.backlog-drops", Subject: "softnet", Status: check.Fail, Summary: "still"}}, Failed, "still there: still"},
		{"an unknown is not a failure", backlog, model(drops(200)), model(), []check.Finding{{ID: "net.backlog-drops", Subject: "softnet", Status: check.Unknown}}, Verified, ""},
		{"a failure on another subject is not this one's", ring, model(ringDrops("eth0", 100)), model(), []check.Finding{{ID: "net.ring-undersized", Subject: "eth1", Status: check.Fail}}, Verified, ""},
		{"aggregate counters do not count", backlog, model(drops(200)), model(counted(netmodel.Counter{Layer: netmodel.LayerBacklog, Counter: "softnet_dropped", Subject: "cpu0", Aggregate: true}, 5000)), nil, Verified, ""},
		{"ring: only its interface", ring, model(ringDrops("eth0", 100)), model(ringDrops("eth1", 10000)), nil, Verified, ""},
		{"ring worse", ring, model(ringDrops("eth0", 100)), model(ringDrops("eth0", 400)), nil, Failed, "got worse"},
		{"dm-crypt: no counter measures it", Entry{ID: "dmcrypt.workqueue", Subject: "/dev/mapper/x"}, model(), model(), nil, NotProven, "--prove PROFILE --dir DIR"},
		{"dm-crypt finding remains", Entry{ID: "dmcrypt.workqueue", Subject: "/dev/mapper/x"}, model(), model(), []check.Finding{{ID: "dmcrypt.workqueue", Subject: "/dev/mapper/x", Status: check.Fail, Summary: "no flags"}}, Failed, "still there"},
		{"one sample after", backlog, model(drops(200)), &netmodel.Model{}, nil, NotProven, "not sampled over a window"},
		{"one sample before", backlog, &netmodel.Model{}, model(), nil, NotProven, "not sampled over a window"},
		{"no model", backlog, nil, nil, nil, NotProven, "not sampled"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := Verify(tt.e, tt.before, tt.findings, tt.after)
			if v.Status != tt.status || !strings.Contains(v.Why, tt.why) {
				t.Errorf("Verify = %+v, want %q and why containing %q", v, tt.status, tt.why)
			}
			if v.Holds() != (tt.status != Failed) {
				t.Errorf("Holds = %v for %q", v.Holds(), v.Status)
			}
			if tt.status == Verified && v.Why != "" {
				t.Errorf("a verified change has a why: %q", v.Why)
			}
		})
	}
}

// TestVerifyUnequalWindows: the margin uses each window's own length, so
// rates from windows of different lengths compare as rates.
func TestVerifyUnequalWindows(t *testing.T) {
	e := Entry{ID: "net.backlog-drops", Subject: "softnet"}
	c := func(n uint64) netmodel.Counter {
		return counted(netmodel.Counter{Layer: netmodel.LayerBacklog, Counter: "softnet_dropped", Subject: "cpu0"}, n)
	}
	// 100 in 1 s and 1000 in 10 s: the same rate.
	v := Verify(e, &netmodel.Model{IntervalSeconds: 1, Counters: []netmodel.Counter{c(100)}}, nil, &netmodel.Model{IntervalSeconds: 10, Counters: []netmodel.Counter{c(1000)}})
	if v.Status != NotProven {
		t.Errorf("equal rates over unequal windows: %+v", v)
	}
}

// TestWatchedCountersExist: the counters a check declares for its fix
// (check.Check.Watch) are ones netmodel gives, under the layer the check
// names: seen in a fixture host's samples, or kept by the collector
// (network.SNMPKeys). A misspelt name would leave a fix nothing to watch:
// never verified, never rolled back. A per-interface watch needs a layer
// whose counters are all an interface's.
func TestWatchedCountersExist(t *testing.T) {
	type key struct {
		layer   netmodel.Layer
		counter string // "" for any counter of the layer
	}
	seen := map[key]bool{}
	notIface := map[netmodel.Layer]bool{} // a counter of the layer is not an interface's
	add := func(s snapshot.NetSample) {
		ifaces := map[string]bool{}
		for _, i := range s.Interfaces {
			ifaces[i.Name] = true
		}
		for _, c := range netmodel.Totals(s) {
			seen[key{c.Layer, c.Counter}], seen[key{c.Layer, ""}] = true, true
			if !ifaces[c.Subject] {
				notIface[c.Layer] = true
			}
		}
	}
	hosts, err := filepath.Glob("../../testdata/hosts/*.json")
	if err != nil || len(hosts) == 0 {
		t.Fatalf("no fixture hosts: %v", err)
	}
	for _, h := range hosts {
		s, err := snapshot.Load(h)
		if err != nil {
			t.Fatal(err)
		}
		if s.Net != nil {
			for _, smp := range s.Net.Samples {
				add(smp)
			}
		}
	}
	snmp := map[string]int64{}
	for _, k := range network.SNMPKeys {
		snmp[k] = 1
	}
	add(snapshot.NetSample{SNMP: snmp})

	watches := 0
	for _, c := range check.All() {
		w := c.Watch
		if w == nil {
			continue
		}
		watches++
		if !seen[key{w.Layer, ""}] {
			t.Errorf("%s watches layer %q: no counter of it in any fixture", c.ID, w.Layer)
		}
		for _, n := range w.Counters {
			if !seen[key{w.Layer, n}] {
				t.Errorf("%s watches %s counter %q: netmodel gives none of that name in that layer", c.ID, w.Layer, n)
			}
		}
		if w.PerInterface && notIface[w.Layer] {
			t.Errorf("%s watches %s per interface, but the layer has counters of other subjects", c.ID, w.Layer)
		}
		if !Watched(Entry{ID: c.ID}) {
			t.Errorf("%s declares a watch that fix does not see", c.ID)
		}
	}
	if watches == 0 {
		t.Error("no check declares a watch: the check packages are not imported")
	}
}
