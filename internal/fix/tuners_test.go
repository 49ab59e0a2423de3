package fix

import (
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// TestPlanRefusesTunerKnobs: with bpftune and tuned running, every knob
// they drive is refused, naming the tuner and how to exclude the knob;
// with tuned stopped (its profile still active) its ring is planned.
func TestPlanRefusesTunerKnobs(t *testing.T) {
	s, err := snapshot.Load(hostsDir + "/net-tuned-bpftune.json")
	if err != nil {
		t.Fatal(err)
	}
	plan := func() *Plan { return planOf(t, s, findingsOf(t, s)) }
	for _, e := range plan().Entries {
		if e.ID == "net.tuner-conflict" {
			// The conflict itself has no setting to change: by hand.
			if e.ByHand == "" || len(e.Steps) != 0 {
				t.Errorf("%s on %s: %+v, want the remedy by hand", e.ID, e.Subject, e)
			}
			continue
		}
		if len(e.Steps) != 0 || !strings.Contains(e.NotApplicable, "is driven by") {
			t.Errorf("%s: steps %v, not applicable %q: want it refused for its tuner", e.ID, e.Steps, e.NotApplicable)
		}
	}
	s.Host.Tuners[1].PID = 0 // tuned stopped
	rings := 0
	for _, e := range plan().Entries {
		for _, st := range e.Steps {
			if _, ok := st.Change.(Ring); ok {
				rings++
			}
		}
		if e.ID == "net.backlog-drops" && len(e.Steps) != 0 {
			t.Errorf("backlog planned while bpftune runs: %+v", e)
		}
	}
	if rings != 1 {
		t.Errorf("with tuned stopped, %d ring steps; want the ring planned", rings)
	}
}

// TestTwoTunersOneKnob: when bpftune and a running tuned both drive
// netdev_max_backlog, the refusal names both, each with how to take the
// knob from it, and each tuner's conflict finding names the other.
func TestTwoTunersOneKnob(t *testing.T) {
	s, err := snapshot.Load(hostsDir + "/net-tuned-bpftune.json")
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Host.Tuners {
		if s.Host.Tuners[i].Name == "tuned" {
			s.Host.Tuners[i].Sysctls = append(s.Host.Tuners[i].Sysctls, snapshot.TunerSysctl{Key: "net.core.netdev_max_backlog", Value: "4096"})
		}
	}
	fs := findingsOf(t, s)
	p := planOf(t, s, fs)
	found := false
	for _, e := range p.Entries {
		if e.ID != "net.backlog-drops" {
			continue
		}
		found = true
		for _, w := range []string{"driven by 2 tuners", "bpftune (pid", "tuned (pid", "take it from each", "[sysctl] unit", "bpftune"} {
			if !strings.Contains(e.NotApplicable, w) {
				t.Errorf("refusal %q does not say %q", e.NotApplicable, w)
			}
		}
	}
	if !found {
		t.Fatal("no net.backlog-drops entry: the fixture no longer drops in the backlog")
	}
	conflicts := 0
	for _, f := range fs {
		if f.ID != "net.tuner-conflict" || f.Status != check.Fail {
			continue
		}
		conflicts++
		other := map[string]string{"bpftune": "by tuned", "tuned": "by bpftune"}[f.Subject]
		if !strings.Contains(f.Summary, "net.core.netdev_max_backlog "+other) {
			t.Errorf("%s's conflict finding does not name the other tuner (%q): %s", f.Subject, other, f.Summary)
		}
	}
	if conflicts != 2 {
		t.Errorf("%d conflict findings, want one per tuner", conflicts)
	}
}
