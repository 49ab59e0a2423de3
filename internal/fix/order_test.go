package fix

import (
	"math"
	"testing"

	"github.com/slowpath/slowpath/internal/check"
)

func share(v float64) *check.Cost { return &check.Cost{Share: &v, Figure: "f"} }

// TestOrder: worst first; within a severity, changes that clear their
// finding first; then the largest share, then a figure without a share,
// then nothing measured; ties keep the findings' order.
func TestOrder(t *testing.T) {
	cleared := &Proof{Result: ProofCleared}
	onHost := &Proof{Result: ProofOnHost}
	remains := &Proof{Result: ProofRemains, Remains: "x"}
	es := []Entry{
		{ID: "w-byhand-big", Severity: check.Warning, Gain: share(0.9)},
		{ID: "w-none", Severity: check.Warning, Proof: cleared},
		{ID: "w-figure", Severity: check.Warning, Proof: onHost, Gain: &check.Cost{Figure: "405/s"}},
		{ID: "w-small", Severity: check.Warning, Proof: onHost, Gain: share(0.004)},
		{ID: "c-none", Severity: check.Critical},
		{ID: "w-big", Severity: check.Warning, Proof: cleared, Gain: share(0.97)},
		{ID: "w-remains", Severity: check.Warning, Proof: remains, Gain: share(0.5)},
		{ID: "i-big", Severity: check.Info, Proof: cleared, Gain: share(0.99)},
		{ID: "w-none-2", Severity: check.Warning, Proof: cleared},
	}
	Order(es)
	want := []string{"c-none", "w-big", "w-small", "w-figure", "w-none", "w-none-2", "w-byhand-big", "w-remains", "i-big"}
	for i, e := range es {
		if e.ID != want[i] {
			var got []string
			for _, e := range es {
				got = append(got, e.ID)
			}
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}

// TestPlanGainFromCounters: on the RHEL fixture the gains are the shares
// computed here from the fixture's own counters, independently of the
// checks: backlog 4800 dropped/s against 8 CPUs × 150000 processed/s;
// socket 5200 RcvbufErrors/s against 150000 InDatagrams/s; dm-crypt the
// await above the device beneath and the cipher's time over dm-0's await.
func TestPlanGainFromCounters(t *testing.T) {
	s, fs := fixtureFindings(t, "rhel-9-i4i-luks-tuned")
	p := planOf(t, s, fs)
	cipher := 16384.0 / 2e9 // one 16 KiB I/O through one layer at 2.0 GB/s per core, 5 in flight on 8 cores
	want := map[string]float64{
		"net.backlog-drops": 4800.0 / (4800 + 8*150000),
		"net.socket-rcvbuf": 5200.0 / (5200 + 150000),
		"dmcrypt.workqueue": (0.018 - 0.00045 - cipher) / 0.018,
		"dmcrypt.tax":       (0.018 - 0.00045 - cipher) / 0.018,
	}
	var order []string
	for _, e := range p.Entries {
		order = append(order, e.ID)
		w, ok := want[e.ID]
		if !ok {
			continue
		}
		if e.Gain == nil || e.Gain.Share == nil {
			t.Errorf("%s: no gain share, want %.4f", e.ID, w)
			continue
		}
		if math.Abs(*e.Gain.Share-w) > 0.002 {
			t.Errorf("%s: gain %.4f, want %.4f (%s)", e.ID, *e.Gain.Share, w, e.Gain.Figure)
		}
	}
	wantOrder := []string{"dmcrypt.workqueue", "net.backlog-drops", "dmcrypt.tax", "net.socket-rcvbuf", "storage.stacked-encryption"}
	if len(order) != len(wantOrder) {
		t.Fatalf("entries %v, want %v", order, wantOrder)
	}
	for i := range order {
		if order[i] != wantOrder[i] {
			t.Fatalf("entries %v, want %v", order, wantOrder)
		}
	}
}
