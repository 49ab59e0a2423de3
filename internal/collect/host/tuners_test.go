package host

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testenv"
)

func TestCollectTuners(t *testing.T) {
	fs := fixture(t, "tuners.txtar")
	var s snapshot.Snapshot
	h := &snapshot.Host{}
	collectTuners(fs, h, &s)
	want := []snapshot.Tuner{
		{Name: "bpftune", PID: 812, Seen: []string{fs.ProcPath("812", "comm")}, Plugins: []string{"net_buffer_tuner", "tcp_buffer_tuner"}},
		{Name: "tuned", PID: 900, Profile: "site-net",
			Seen: []string{fs.ProcPath("900", "comm"), "/etc/tuned/active_profile", "/etc/tuned/site-net/tuned.conf",
				"/usr/lib/tuned/network-throughput/tuned.conf", "/usr/lib/tuned/throughput-performance/tuned.conf"},
			Sysctls: []snapshot.TunerSysctl{
				{Key: "net.ipv4.tcp_rmem", Value: `"4096 87380 16777216"`},
				{Key: "net.core.netdev_max_backlog", Value: "32768"},
				{Key: "net.core.rmem_max", Value: "26214400"},
			},
			Rings: []snapshot.TunerRing{{Devices: "eth0", Value: "rx 8192"}}},
		{Name: "slowpath-node-tuning", Seen: []string{"/run/slowpath/node-tuning"},
			Sysctls: []snapshot.TunerSysctl{{Key: "net.core.netdev_budget", Value: "600"}},
			Rings:   []snapshot.TunerRing{{Devices: "eth1", Value: "rx 4096"}}},
	}
	if diff := cmp.Diff(want, h.Tuners); diff != "" {
		t.Errorf("tuners (-want +got):\n%s", diff)
	}
	if len(s.Manifest.Errors) != 0 {
		t.Errorf("unexpected errors: %+v", s.Manifest.Errors)
	}
	if err := snapshot.ValidateHost("host", h); err != nil {
		t.Errorf("collected tuners fail validation: %v", err)
	}
}

// TestCollectTunersNone: no tuner process, no files: nothing, no error.
func TestCollectTunersNone(t *testing.T) {
	fs := fixture(t, "truncated.txtar")
	var s snapshot.Snapshot
	h := &snapshot.Host{}
	collectTuners(fs, h, &s)
	if len(h.Tuners) != 0 {
		t.Errorf("tuners on a host without any: %+v", h.Tuners)
	}
}

// TestTunedMergeAgreesWithTuned: the sysctls and rings the collector
// merges from the fixture's profile tree are what tuned's own loader
// (Debian's tuned 2.20, unpacked, never installed) merges from it.
func TestTunedMergeAgreesWithTuned(t *testing.T) {
	fs := fixture(t, "tuners.txtar")
	var s snapshot.Snapshot
	h := &snapshot.Host{}
	collectTuners(fs, h, &s)
	var mine snapshot.Tuner
	for _, tu := range h.Tuners {
		if tu.Name == "tuned" {
			mine = tu
		}
	}
	got := testenv.LoadTuned(t, []string{fs.RootPath("usr/lib/tuned"), fs.RootPath("etc/tuned")}, mine.Profile)
	want := map[string]string{}
	for k, v := range got.Units["sysctl"].Options {
		want[strings.ReplaceAll(k, "/", ".")] = v
	}
	have := map[string]string{}
	for _, c := range mine.Sysctls {
		have[c.Key] = c.Value
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("sysctls: tuned's loader (-) vs the collector (+):\n%s", diff)
	}
	var wantRings []snapshot.TunerRing
	for _, n := range got.NetOrder {
		if r := got.Units[n].Options["ring"]; r != "" {
			wantRings = append(wantRings, snapshot.TunerRing{Devices: got.Units[n].Devices, Value: r})
		}
	}
	if diff := cmp.Diff(wantRings, mine.Rings); diff != "" {
		t.Errorf("rings: tuned's loader (-) vs the collector (+):\n%s", diff)
	}
}
