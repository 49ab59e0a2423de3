package netcheck

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/netmodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

func input(t *testing.T, s *snapshot.Snapshot) *check.Input {
	t.Helper()
	m, err := netmodel.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	return &check.Input{Snapshot: s, Network: m}
}

func fixture(t *testing.T, name string) *check.Input {
	t.Helper()
	s, err := snapshot.Load(filepath.Join("../../../testdata/hosts", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return input(t, s)
}

// statuses runs one check and returns "subject=status" for non-pass results.
func statuses(run func(*check.Input) []check.Finding, in *check.Input) []string {
	var out []string
	for _, f := range run(in) {
		st := f.Status
		if st == "" {
			st = check.Fail
		}
		if st != check.Pass {
			out = append(out, f.Subject+"="+string(st))
		}
	}
	return out
}

// TestFixtures is the fires/silent pair of every network check on the
// fixture hosts (the golden reports show the full text).
func TestFixtures(t *testing.T) {
	checks := map[string]func(*check.Input) []check.Finding{
		"net.ring-undersized": ringUndersized, "net.backlog-drops": backlogDrops, "net.time-squeeze": timeSqueeze,
		"net.socket-rcvbuf": socketRcvbuf, "net.no-drop-reasons": noDropReasons, "net.tuner-conflict": tunerConflict,
	}
	want := map[string]map[string][]string{
		"net-azure-accelnet": {
			"net.ring-undersized": {"enP30832s1=fail"}, "net.backlog-drops": {"softnet=fail"},
			"net.time-squeeze": {"softnet=fail"},
		},
		// The same host with bpftune and tuned running: the findings stay,
		// and the tuners that own their knobs are named.
		"net-tuned-bpftune": {
			"net.ring-undersized": {"enP30832s1=fail"}, "net.backlog-drops": {"softnet=fail"},
			"net.time-squeeze": {"softnet=fail"}, "net.tuner-conflict": {"bpftune=fail", "tuned=fail"},
		},
		"net-aws-ena":           {"net.socket-rcvbuf": {"sockets=fail"}},
		"net-virtio-one-sample": {"net.backlog-drops": {"softnet=unknown"}, "net.time-squeeze": {"softnet=unknown"}, "net.no-drop-reasons": {"kernel=fail"}},
		"net-healthy":           {},
		// No reasons but kernel BTF: fires, and says `net drops` runs.
		"net-kvm-5.10-btf-no-reasons": {"net.backlog-drops": {"softnet=unknown"}, "net.time-squeeze": {"softnet=unknown"}, "net.no-drop-reasons": {"kernel=fail"}},
	}
	for host, w := range want {
		in := fixture(t, host)
		for id, run := range checks {
			got := statuses(run, in)
			if d := cmp.Diff(w[id], got); d != "" {
				t.Errorf("%s %s (-want +got):\n%s", host, id, d)
			}
		}
	}
}

func twoSamples(speed int64, ring snapshot.Ring, missed0, missed1 uint64) *snapshot.Snapshot {
	sample := func(t int64, missed uint64) snapshot.NetSample {
		return snapshot.NetSample{MonotonicNS: t, Interfaces: []snapshot.NetCounters{{Name: "eth0", Stats: map[string]uint64{"rx_missed_errors": missed}}},
			Softnet: []snapshot.SoftnetCPU{{CPU: 0}}}
	}
	return &snapshot.Snapshot{Net: &snapshot.Net{
		Interfaces: []snapshot.NetInterface{{Name: "eth0", OperState: "up", SpeedMbps: &speed, Ring: &ring, MTU: 1500}},
		Samples:    []snapshot.NetSample{sample(0, missed0), sample(2e9, missed1)},
	}}
}

func TestRingUndersized(t *testing.T) {
	small := snapshot.Ring{RX: 512, RXMax: 8192}
	tests := []struct {
		name string
		s    *snapshot.Snapshot
		want check.Status
		sev  check.Severity
	}{
		{"rising misses, ring below max", twoSamples(10000, small, 10, 2010), check.Fail, 0},
		{"rising misses, ring at max", twoSamples(10000, snapshot.Ring{RX: 8192, RXMax: 8192}, 10, 2010), check.Pass, 0},
		{"fast link, small ring, quiet", twoSamples(100000, small, 10, 10), check.Fail, check.Info},
		{"slow link, small ring, quiet", twoSamples(1000, small, 10, 10), check.Pass, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := ringUndersized(input(t, tt.s))
			if len(fs) != 1 {
				t.Fatalf("got %d findings", len(fs))
			}
			st := fs[0].Status
			if st == "" {
				st = check.Fail
			}
			if st != tt.want || fs[0].Severity != tt.sev {
				t.Errorf("status %s severity %v, want %s %v: %s", st, fs[0].Severity, tt.want, tt.sev, fs[0].Summary)
			}
		})
	}
	// One sample with old misses: unknown, with the reason.
	s := twoSamples(10000, small, 10, 10)
	s.Net.Samples = s.Net.Samples[:1]
	fs := ringUndersized(input(t, s))
	if len(fs) != 1 || fs[0].Status != check.Unknown || !strings.Contains(fs[0].Summary, "one counter sample") {
		t.Errorf("one sample: %+v", fs)
	}
	if fs[0].Remediation != "" {
		t.Error("an unknown finding must not prescribe a fix")
	}
}

func TestRecommendBacklog(t *testing.T) {
	speed := func(v int64) *int64 { return &v }
	tests := []struct {
		speed *int64
		cur   int64
		want  int64
	}{
		{speed(25000), 1000, 32768}, // 20834 packets in 10 ms -> 32768
		{speed(10000), 1000, 16384},
		{speed(1000), 1000, 2048},
		{speed(400000), 1000, 65536}, // capped
		{nil, 16, 1024},              // no speed: at least the kernel default
		{nil, 1000, 4096},
	}
	for _, tt := range tests {
		m := &netmodel.Model{Interfaces: []netmodel.Interface{{Name: "eth0", OperState: "up", SpeedMbps: tt.speed, MTU: 1500}}}
		got, why := recommendBacklog(m, tt.cur)
		if got != tt.want || why == "" {
			t.Errorf("speed %v cur %d: got %d (%s), want %d", tt.speed, tt.cur, got, why, tt.want)
		}
	}
}

func TestNoNetworkSection(t *testing.T) {
	in := &check.Input{Snapshot: &snapshot.Snapshot{}}
	for _, run := range []func(*check.Input) []check.Finding{ringUndersized, backlogDrops, timeSqueeze, socketRcvbuf, noDropReasons} {
		if fs := run(in); len(fs) != 0 {
			t.Errorf("findings without a network section: %+v", fs)
		}
	}
}

// TestBacklogWithoutSoftnet: a snapshot without softnet_stat gives an
// unknown that says what to do, graded info so it does not fail the run.
func TestBacklogWithoutSoftnet(t *testing.T) {
	s := &snapshot.Snapshot{Net: &snapshot.Net{Samples: []snapshot.NetSample{{}}}}
	fs := backlogDrops(input(t, s))
	if len(fs) != 1 || fs[0].Status != check.Unknown || fs[0].Severity != check.Info || !strings.Contains(fs[0].Summary, "collect again") {
		t.Errorf("backlog check without softnet_stat: %+v", fs)
	}
}

// TestSqueezeRemedy: the time-squeeze fix doubles what the host has; a
// fixed 8000 µs would be the default itself on an HZ=250 kernel
// (2 * USEC_PER_SEC / HZ). The remedy and the plan's steps are the same
// numbers (before, doctor said 16000 while fix set 8000).
func TestSqueezeRemedy(t *testing.T) {
	tests := []struct {
		sysctls       map[string]int64
		budget, usecs string
	}{
		{map[string]int64{"net.core.netdev_budget": 300, "net.core.netdev_budget_usecs": 8000}, "600", "16000"},
		{map[string]int64{"net.core.netdev_budget": 300, "net.core.netdev_budget_usecs": 2000}, "600", "4000"},
		{nil, "600", "TWICE_CURRENT"},
	}
	for _, tt := range tests {
		targets, _ := squeezeTargets(&netmodel.Model{Sysctls: tt.sysctls})
		b, u := expect(targets, "net.core.netdev_budget"), expect(targets, "net.core.netdev_budget_usecs")
		if b != tt.budget || u != tt.usecs {
			t.Errorf("%v: got %s %s, want %s %s", tt.sysctls, b, u, tt.budget, tt.usecs)
		}
	}
}

// TestNoDropReasonsSaysWhatThisKernelOffers: without drop reasons, what
// the finding promises about `net drops` depends on kernel BTF, which the
// tracer needs (tp_btf/kfree_skb): with it, drops are grouped by the
// function that dropped them; without it, `net drops` cannot run and the
// finding says so and names what can (perf record on the tracepoint).
func TestNoDropReasonsSaysWhatThisKernelOffers(t *testing.T) {
	tests := []struct {
		name      string
		d         snapshot.DropReasons
		release   string
		status    check.Status
		want      []string
		wantNot   []string
		fixEmpty  bool
		btfSource bool
	}{
		{name: "no reasons, BTF present",
			d:       snapshot.DropReasons{Status: "no", Source: "/sys/kernel/tracing/events/skb/kfree_skb/format", KernelBTF: "yes"},
			release: "5.10.0-32-amd64", status: check.Fail,
			want: []string{"Kernel BTF is present", "by the kernel function that dropped them", "--stacks", "attributes drops by location",
				"enqueue_to_backlog is the CPU backlog", "Lost: drops cannot be told apart by reason", "--collector.drops", "refuses to start",
				"Still there: the kernel's drop counters", "some are not drops"},
			wantNot: []string{"cannot run"}, btfSource: true},
		{name: "no reasons, BTF but before BTF tracepoints",
			d:       snapshot.DropReasons{Status: "no", Source: "/sys/kernel/tracing/events/skb/kfree_skb/format", KernelBTF: "yes"},
			release: "5.4.0-200-generic", status: check.Fail,
			want:    []string{"cannot run on this kernel", "predates BTF tracepoints", "perf record"},
			wantNot: []string{"groups drops"}, btfSource: true},
		{name: "no reasons, no BTF",
			d:       snapshot.DropReasons{Status: "no", Source: "/sys/kernel/debug/tracing/events/skb/kfree_skb/format", KernelBTF: "no"},
			release: "4.19.0-27-amd64", status: check.Fail,
			want:    []string{"cannot run on this kernel", "CONFIG_DEBUG_INFO_BTF", "perf record"},
			wantNot: []string{"will attribute"}, btfSource: true},
		{name: "no reasons, BTF not checked (older snapshot)",
			d:       snapshot.DropReasons{Status: "no", Source: "/sys/kernel/tracing/events/skb/kfree_skb/format"},
			release: "5.10.0-32-amd64", status: check.Fail,
			want:    []string{"Whether `slowpath net drops` can run here is unknown", "kernel BTF"},
			wantNot: []string{"will attribute"}},
		{name: "reasons, no BTF",
			d:       snapshot.DropReasons{Status: "yes", Source: "/sys/kernel/tracing/events/skb/kfree_skb/format", KernelBTF: "no"},
			release: "6.1.0-27-amd64", status: check.Pass,
			want: []string{"names skb drop reasons", "cannot run on this kernel"}, btfSource: true},
		{name: "reasons, BTF",
			d:       snapshot.DropReasons{Status: "yes", Source: "/sys/kernel/btf/vmlinux", KernelBTF: "yes"},
			release: "6.1.0-27-amd64", status: check.Pass,
			want: []string{"names skb drop reasons"}, wantNot: []string{"cannot run"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.d
			s := &snapshot.Snapshot{Host: &snapshot.Host{KernelRelease: tt.release}, Net: &snapshot.Net{DropReasons: &d}}
			fs := noDropReasons(input(t, s))
			if len(fs) != 1 {
				t.Fatalf("%d findings", len(fs))
			}
			f := fs[0]
			st := f.Status
			if st == "" {
				st = check.Fail
			}
			if st != tt.status {
				t.Errorf("status %s, want %s", st, tt.status)
			}
			text := f.Summary + "\n" + f.Remediation
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("text lacks %q:\n%s", w, text)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(text, w) {
					t.Errorf("text has %q:\n%s", w, text)
				}
			}
			if tt.btfSource && !slices.ContainsFunc(f.Evidence, func(e check.Evidence) bool { return e.Source == "/sys/kernel/btf/vmlinux" }) {
				t.Errorf("no kernel BTF evidence: %+v", f.Evidence)
			}
		})
	}
}

// TestNoDropReasonsDecidesByFacility: the check follows what the kernel
// offers, not its version. The 5.10 fixture fires; the same host with
// drop reasons backported (its tracepoint has the reason field, as some
// distribution kernels do) stays silent although it is still 5.10.
func TestNoDropReasonsDecidesByFacility(t *testing.T) {
	in := fixture(t, "net-kvm-5.10-btf-no-reasons")
	if got := statuses(noDropReasons, in); !slices.Equal(got, []string{"kernel=fail"}) {
		t.Fatalf("5.10 without reasons: %v, want it to fire", got)
	}
	s := *in.Snapshot
	n := *s.Net
	n.DropReasons = &snapshot.DropReasons{Status: "yes", Source: "/sys/kernel/tracing/events/skb/kfree_skb/format",
		Detail: "kfree_skb tracepoint has a reason field", KernelBTF: "yes"}
	s.Net = &n
	backported := input(t, &s)
	if got := statuses(noDropReasons, backported); len(got) != 0 {
		t.Errorf("5.10 with reasons backported: %v, want silent", got)
	}
	if fs := noDropReasons(backported); len(fs) != 1 || !strings.Contains(fs[0].Summary, "names skb drop reasons") {
		t.Errorf("5.10 with reasons backported: %+v", fs)
	}
}
