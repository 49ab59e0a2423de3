package host

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/hostfstest"
	"github.com/slowpath/slowpath/internal/testing/testenv"
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

// TestNodeTuningMarkerFixes: the marker's fix lines are applied fixes,
// each at its own time; an older marker without them names none, and
// malformed lines are errors, never fixes.
func TestNodeTuningMarkerFixes(t *testing.T) {
	for _, tc := range []struct {
		name, marker string
		fixes        []snapshot.AppliedFix
		errs         int
	}{
		{"new", "# written by\nsysctl net.core.netdev_max_backlog=32768\nring eth0 rx 8192\nfix 1795773969 net.backlog-drops sysctl:net.core.netdev_max_backlog 32768 softnet\nfix 1795774000 net.ring-undersized ring:eth0:rx 8192 eth0\n",
			[]snapshot.AppliedFix{
				{ID: "net.backlog-drops", Subject: "softnet", Key: "sysctl:net.core.netdev_max_backlog", Value: "32768", AppliedAt: time.Unix(1795773969, 0).UTC()},
				{ID: "net.ring-undersized", Subject: "eth0", Key: "ring:eth0:rx", Value: "8192", AppliedAt: time.Unix(1795774000, 0).UTC()},
			}, 0},
		{"older marker", "sysctl net.core.netdev_max_backlog=32768\n", nil, 0},
		{"no subject", "fix 1795773969 net.backlog-drops sysctl:net.core.netdev_max_backlog 32768\n",
			[]snapshot.AppliedFix{{ID: "net.backlog-drops", Key: "sysctl:net.core.netdev_max_backlog", Value: "32768", AppliedAt: time.Unix(1795773969, 0).UTC()}}, 0},
		{"no time", "fix net.backlog-drops sysctl:net.core.netdev_max_backlog 32768 softnet\n", nil, 1},
		{"truncated fix", "fix 1 net.backlog-drops sysctl:x\n", nil, 1},
		{"bad time", "fix yesterday a.b k v s\nfix -5 a.b k v s\nfix 99999999999999999999 a.b k v s\n", nil, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			hostfstest.WriteFile(t, root, "run/slowpath/node-tuning", tc.marker)
			hostfstest.WriteFile(t, root, "proc/1/comm", "systemd\n") // no tuner process
			var s snapshot.Snapshot
			h := &snapshot.Host{}
			collectTuners(hostfs.New(root), h, &s)
			if d := cmp.Diff(tc.fixes, h.Fixes); d != "" {
				t.Errorf("fixes (-want +got):\n%s", d)
			}
			if len(s.Manifest.Errors) != tc.errs {
				t.Errorf("errors %v, want %d", s.Manifest.Errors, tc.errs)
			}
		})
	}
}
