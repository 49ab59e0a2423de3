package verdictreport

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/canary"
	"github.com/slowpath/slowpath/internal/fleetverdict"
)

func f(v float64) *float64 { return &v }

// fixtureReport is a report of two groups decided and a hold whose label
// holds an escape sequence, a Markdown cell end and HTML (fleetverdict's
// TestPlan plans the same report).
func fixtureReport() *fleetverdict.Report {
	nodes := func(names ...string) []fleetverdict.Node {
		var out []fleetverdict.Node
		for i, n := range names {
			out = append(out, fleetverdict.Node{Name: n, Canary: i < 2, Before: f(10), After: f(1)})
		}
		return out
	}
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	p := 0.029
	return &fleetverdict.Report{Change: "net.backlog-drops", By: "node_pool", NodeLabel: "node", Window: "30m", Alpha: 0.05, Groups: []fleetverdict.Group{
		{Value: "pool-a", Nodes: 5, Canaries: []string{"a0", "a1"}, Others: []string{"a2", "a3", "a4"}, Outcome: canary.Promote, Reason: "better", FirstChange: at, LastChange: at,
			Metrics: []fleetverdict.Metric{{Name: "drops", Role: canary.RolePrimary, Better: fleetverdict.Lower, AdjustedP: &p, Test: "significant", Change: "better", Nodes: nodes("a0", "a1", "a2", "a3")}}},
		{Value: "pool-b", Nodes: 3, Canaries: []string{"b0", "b1"}, Others: []string{"b2"}, Outcome: canary.Rollback, Reason: "worse", FirstChange: at, LastChange: at.Add(time.Minute),
			Metrics: []fleetverdict.Metric{{Name: "drops", Role: canary.RolePrimary, Better: fleetverdict.Lower, Nodes: nodes("b0", "b1", "b2")}}},
		{Value: "pool\x1b[31m|<i>", Nodes: 3, Canaries: []string{"c0"}, Outcome: canary.Hold, Reason: "too few", FirstChange: at, LastChange: at},
	}}
}

// TestWriteHostileLabels: a group value from Prometheus cannot move the
// terminal, end a Markdown cell or open HTML.
func TestWriteHostileLabels(t *testing.T) {
	r := fixtureReport()
	var text, md, page bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "\x1b") || !strings.Contains(text.String(), "pool?[31m|<i> (3 nodes, 1 canary): hold") {
		t.Errorf("text:\n%q", text.String())
	}
	if strings.Contains(md.String(), "<i>") || strings.Contains(md.String(), "\x1b") || !strings.Contains(md.String(), "pool[31m&#124;&lt;i&gt;") {
		t.Errorf("markdown:\n%s", md.String())
	}
	if strings.Contains(page.String(), "<i>") {
		t.Errorf("html holds the raw label")
	}
	if !strings.Contains(text.String(), "changed 2026-11-27T10:00:00Z to 2026-11-27T10:01:00Z") {
		t.Errorf("text does not give the span of change times:\n%s", text.String())
	}
}

// TestWriteNoDataAndNotTested: a series without values prints dashes and
// "no data", not changes of 0.0%; a primary the fixed sequence did not
// reach prints no p and says it was not tested.
func TestWriteNoDataAndNotTested(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	p := 1.0
	r := &fleetverdict.Report{Change: "net.backlog-drops", By: "node_pool", Window: "30m", Alpha: 0.05, Groups: []fleetverdict.Group{
		{Value: "pool-b", Nodes: 8, Canaries: []string{"b0"}, Outcome: canary.Hold, Reason: "no data: docs has no values on any node of the group", FirstChange: at, LastChange: at,
			Metrics: []fleetverdict.Metric{
				{Name: "flat", Role: canary.RolePrimary, Better: fleetverdict.Higher, CanaryChange: f(0), ControlChange: f(0), Effect: f(0), P: 1, AdjustedP: &p, Test: "no significant difference"},
				{Name: "drops", Role: canary.RolePrimary, Better: fleetverdict.Lower, CanaryChange: f(-0.9), ControlChange: f(0), Effect: f(-0.9), P: 0.029, Test: fleetverdict.NotTested},
				{Name: "docs", Role: canary.RoleGuard, Better: fleetverdict.Higher, P: 1, AdjustedP: &p, Test: "no data"}}},
	}}
	var text, md bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(text.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = strings.Join(f, " ")
		}
	}
	if want := "docs guard higher 0 0 - - - - no data"; rows["docs"] != want {
		t.Errorf("docs row %q, want %q", rows["docs"], want)
	}
	if want := "drops primary lower 0 0 -90.0% 0.0% -90.0 pts - not tested: an earlier primary was not significant"; rows["drops"] != want {
		t.Errorf("drops row %q, want %q", rows["drops"], want)
	}
	if !strings.Contains(md.String(), "| docs | guard | - | - | - | - | no data |") {
		t.Errorf("markdown:\n%s", md.String())
	}
}
