package fleetverdict

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/canary"
	"github.com/slowpath/slowpath/internal/fix"
)

func TestParseSeries(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want Series
		err  string
	}{
		{spec: "docs=sum by (node) (rate(docs_total[1m]))", want: Series{Name: "docs", Expr: "sum by (node) (rate(docs_total[1m]))", Role: canary.RoleGuard, Better: Higher}},
		{spec: "p99,lower,primary=histogram_quantile(0.99, x{a=\"b\"})", want: Series{Name: "p99", Expr: `histogram_quantile(0.99, x{a="b"})`, Role: canary.RolePrimary, Better: Lower}},
		{spec: "search/p99.9:ms,guard,lower= x ", want: Series{Name: "search/p99.9:ms", Expr: "x", Role: canary.RoleGuard, Better: Lower}},
		{spec: "docs", err: "want NAME"},
		{spec: "docs=", err: "want NAME"},
		{spec: "=x", err: "1 to 64"},
		{spec: "a b=x", err: "only letters"},
		{spec: "a|b=x", err: "only letters"},
		{spec: "<b>=x", err: "only letters"},
		{spec: "docs,faster=x", err: `unknown option "faster"`},
		{spec: strings.Repeat("a", 65) + "=x", err: "1 to 64"},
	} {
		got, err := ParseSeries(tc.spec)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v %v, want %+v", tc.spec, got, err, tc.want)
		}
	}
}

func TestFindingSeries(t *testing.T) {
	s, ok := FindingSeries("net.backlog-drops", "node")
	if !ok || s.Role != canary.RolePrimary || s.Better != Lower || s.Expr != `sum by (node) (rate(slowpath_net_drops_total{layer="backlog"}[$__rate_interval]))` {
		t.Errorf("net.backlog-drops: %+v %v", s, ok)
	}
	for _, id := range FindingIDs() {
		s, ok := FindingSeries(id, "instance")
		if !ok || strings.Contains(s.Expr, "$node") || !strings.Contains(s.Expr, "by (instance)") || checkName(s.Name) != nil {
			t.Errorf("%s: %+v", id, s)
		}
	}
	if _, ok := FindingSeries("storage.stacked-encryption", "node"); ok {
		t.Error("a check without a series of its own has one")
	}
}

func TestValidate(t *testing.T) {
	good := Options{Change: "net.backlog-drops", By: "node_pool", NodeLabel: "node", Window: time.Hour, RateInterval: time.Minute, Alpha: 0.05,
		Series: []Series{{Name: "d", Expr: "x", Role: canary.RolePrimary, Better: Lower}}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		mod func(*Options)
		err string
	}{
		"by not a label":     {func(o *Options) { o.By = "node-pool" }, "not a Prometheus label name"},
		"node label digit":   {func(o *Options) { o.NodeLabel = "1node" }, "not a Prometheus label name"},
		"by is node":         {func(o *Options) { o.By = "node" }, "is the node label"},
		"short window":       {func(o *Options) { o.Window = time.Second }, "at least 2s"},
		"alpha":              {func(o *Options) { o.Alpha = 1 }, "--alpha"},
		"no primary":         {func(o *Options) { o.Series[0].Role = canary.RoleGuard }, "no primary series"},
		"same name twice":    {func(o *Options) { o.Series = append(o.Series, o.Series[0]) }, `two series named "d"`},
		"injected change id": {func(o *Options) { o.Change = `x"} or vector(1) #` }, "--change"},
	} {
		o := good
		o.Series = append([]Series(nil), good.Series...)
		tc.mod(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", name, err, tc.err)
		}
	}
}

func f(v float64) *float64 { return &v }

func fixtureReport() *Report {
	nodes := func(names ...string) []Node {
		var out []Node
		for i, n := range names {
			out = append(out, Node{Name: n, Canary: i < 2, Before: f(10), After: f(1)})
		}
		return out
	}
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	p := 0.029
	return &Report{Change: "net.backlog-drops", By: "node_pool", NodeLabel: "node", Window: "30m", Alpha: 0.05, Groups: []Group{
		{Value: "pool-a", Nodes: 5, Canaries: []string{"a0", "a1"}, Others: []string{"a2", "a3", "a4"}, Outcome: canary.Promote, Reason: "better", FirstChange: at, LastChange: at,
			Metrics: []Metric{{Name: "drops", Role: canary.RolePrimary, Better: Lower, AdjustedP: &p, Test: "significant", Change: "better", Nodes: nodes("a0", "a1", "a2", "a3")}}},
		{Value: "pool-b", Nodes: 3, Canaries: []string{"b0", "b1"}, Others: []string{"b2"}, Outcome: canary.Rollback, Reason: "worse", FirstChange: at, LastChange: at.Add(time.Minute),
			Metrics: []Metric{{Name: "drops", Role: canary.RolePrimary, Better: Lower, Nodes: nodes("b0", "b1", "b2")}}},
		{Value: "pool\x1b[31m|<i>", Nodes: 3, Canaries: []string{"c0"}, Outcome: canary.Hold, Reason: "too few", FirstChange: at, LastChange: at},
	}}
}

// TestPlan: promote labels the group's other nodes (a4 too, which had no
// value in any series), roll back unlabels the
// canaries, hold changes nothing; a node label that is not a node name is
// refused rather than turned into a command.
func TestPlan(t *testing.T) {
	r := fixtureReport()
	c := fix.Canary{Key: "slowpath.dev/canary", Value: "backlog"}
	if err := Plan(r, c); err != nil {
		t.Fatal(err)
	}
	got := map[string][]Action{}
	for _, g := range r.Groups {
		got[g.Value] = g.Actions
	}
	want := map[string][]Action{
		"pool-a": {{"label", "a2", "kubectl label --overwrite node a2 'slowpath.dev/canary=backlog'"}, {"label", "a3", "kubectl label --overwrite node a3 'slowpath.dev/canary=backlog'"},
			{"label", "a4", "kubectl label --overwrite node a4 'slowpath.dev/canary=backlog'"}},
		"pool-b":           {{"unlabel", "b0", "kubectl label --overwrite node b0 slowpath.dev/canary-"}, {"unlabel", "b1", "kubectl label --overwrite node b1 slowpath.dev/canary-"}},
		"pool\x1b[31m|<i>": nil,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}

	r = fixtureReport()
	r.Groups[1].Canaries[0] = "10.0.0.7:9877"
	if err := Plan(r, c); err == nil || !strings.Contains(err.Error(), "not a Kubernetes node name") {
		t.Errorf("instance as a node name: %v", err)
	}
}
