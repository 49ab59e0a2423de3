package fix

import (
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/analyze"
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
	plan := func() *Plan {
		r, err := analyze.Run(s, check.Config{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := Build(s, r.Findings, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, e := range plan().Entries {
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
