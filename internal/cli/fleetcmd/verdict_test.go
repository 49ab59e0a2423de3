package fleetcmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/cli/fleetcmd"
	"github.com/slowpath/slowpath/internal/fleetverdict"
	"github.com/slowpath/slowpath/internal/testing/agenttest"
	"github.com/slowpath/slowpath/internal/testing/nettree"
	"github.com/slowpath/slowpath/internal/testing/prometheustest"
)

// verdictGroup is one node pool of the verdict fleet: its nodes, how many
// run the change, and what the change does to the canaries' service.
type verdictGroup struct {
	pool            string
	nodes, canaries int
	docsFactor      float64 // the canaries' indexing rate after the change, relative
}

const (
	verdictWindow = 6 * time.Second
	verdictRate   = 3 * time.Second
	canaryLabel   = "slowpath.dev/canary=net-backlog"
)

// TestFleetVerdict: Debian's Prometheus scrapes 24 agents on node trees the
// test keeps moving (backlog drops at 400 to 680 per second, a different
// rate per node) and each node's service exporter (indexed documents, 2000
// to 2700 per second). At a whole second the canaries get
// netdev_max_backlog 32768 from fix's state file and their drops fall to
// 40 per second; in pool-a their indexing rises by a fifth (promote), in
// pool-b it falls by 30% (roll back on the service's guard), and pool-c
// has 2 canaries of 8, which the U test cannot decide (hold: 3 would).
// Before the window after the change is over, every pool holds.
func TestFleetVerdict(t *testing.T) {
	groups := []verdictGroup{{"pool-a", 8, 4, 1.2}, {"pool-b", 8, 4, 0.7}, {"pool-c", 8, 2, 1.2}}
	type node struct {
		tree   *nettree.Tree
		name   string
		canary bool
		docs   uint64
		drops  uint64
		factor float64
	}
	var nodes []*node
	var targets []prometheustest.Target
	for _, g := range groups {
		for i := range g.nodes {
			tr := nettree.Write(t, 2)
			n := &node{tree: tr, name: fmt.Sprintf("%s-node-%d", g.pool, i), canary: i < g.canaries,
				drops: uint64(400 + 40*i), docs: uint64(2000 + 100*i), factor: g.docsFactor}
			tr.SetRates(float64(n.drops), float64(n.docs))
			tr.Keep(t)
			labels := map[string]string{"node": n.name, "node_pool": g.pool}
			targets = append(targets,
				prometheustest.Target{Addr: agenttest.StartRoot(t, tr.FS, "--topology-interval", "1s"), Labels: labels},
				prometheustest.Target{Addr: tr.Service, Labels: labels})
			nodes = append(nodes, n)
		}
	}
	prom := prometheustest.Start(t, targets)
	// The window before the change needs rates all through it.
	time.Sleep(verdictWindow + verdictRate + time.Second)
	at := time.Now().Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(at))
	for _, n := range nodes {
		if !n.canary {
			continue
		}
		n.tree.SetRates(40, float64(n.docs)*n.factor)
		if err := n.tree.Apply("net.backlog-drops", "net.core.netdev_max_backlog", 32768, at); err != nil {
			t.Fatal(err)
		}
	}
	prom.WaitFor(t, `count(slowpath_fix_applied{id="net.backlog-drops"}) == 10`, 20*time.Second)

	args := []string{"--prometheus", prom.URL, "--change", "net.backlog-drops", "--by", "node_pool", "--node-label", "node",
		"--window", verdictWindow.String(), "--rate-interval", verdictRate.String(),
		"--metric", "indexing_docs_per_second=sum by (node) (rate(indexed_docs_total[$__rate_interval]))",
		"--canary", canaryLabel, "--format", "json"}

	// Too early: the window after the change is not over anywhere (unless
	// a loaded machine took that long to get here).
	early := verdict(t, args...)
	if time.Since(at) >= verdictRate+verdictWindow {
		t.Logf("the early verdict came %v after the change, past the window: not checked", time.Since(at))
		early.Groups = nil
	}
	for _, g := range early.Groups {
		if g.Outcome != "hold" || !strings.Contains(g.Reason, "window after the change ends at") || len(g.Actions) != 0 {
			t.Errorf("%s before the window ended: %s: %s (%d actions)", g.Value, g.Outcome, g.Reason, len(g.Actions))
		}
	}

	time.Sleep(time.Until(at.Add(verdictRate + verdictWindow + time.Second)))
	r := verdict(t, args...)
	want := map[string]struct {
		outcome, drops, docs string
		canaries, actions    int
		verb                 string
	}{
		"pool-a": {"promote", "better", "better", 4, 4, "label"},
		"pool-b": {"roll back", "better", "worse", 4, 4, "unlabel"},
		"pool-c": {"hold", "", "", 2, 0, ""},
	}
	if len(r.Groups) != 3 || len(r.Unchanged) != 0 {
		t.Fatalf("groups %d, unchanged %v", len(r.Groups), r.Unchanged)
	}
	for _, g := range r.Groups {
		w := want[g.Value]
		if g.Outcome != w.outcome || len(g.Canaries) != w.canaries || g.Nodes != 8 || len(g.Metrics) != 2 {
			t.Errorf("%s: %s (%s), %d canaries of %d nodes, %d series; want %s, %d of 8, 2", g.Value, g.Outcome, g.Reason, len(g.Canaries), g.Nodes, len(g.Metrics), w.outcome, w.canaries)
			continue
		}
		if !g.FirstChange.Equal(at) || !g.Before.To.Equal(at) || !g.After.From.Equal(at.Add(verdictRate)) {
			t.Errorf("%s: changed %v, before %v, after %v; want the change at %v", g.Value, g.FirstChange, g.Before, g.After, at)
		}
		for i, m := range g.Metrics {
			wantChange := []string{w.drops, w.docs}[i]
			if m.Change != wantChange || m.Canaries != w.canaries || m.Controls != 8-w.canaries || len(m.Nodes) != 8 {
				t.Errorf("%s %s: %s (%s, p %v), %d canaries %d others %d nodes; want %q", g.Value, m.Name, m.Change, m.Test, m.AdjustedP, m.Canaries, m.Controls, len(m.Nodes), wantChange)
			}
		}
		// The drops' difference in differences is the canaries' fall: from
		// 400 to 680 a second to 40, 90 to 94%.
		if d := g.Metrics[0]; d.Effect == nil || *d.Effect > -0.85 || *d.Effect < -0.97 || *d.ControlChange < -0.05 || *d.ControlChange > 0.05 {
			t.Errorf("%s drops: canaries %v others %v effect %v; want the others near 0 and an effect of -0.90 to -0.94", g.Value, d.CanaryChange, d.ControlChange, d.Effect)
		}
		if len(g.Actions) != w.actions {
			t.Errorf("%s: %d actions, want %d: %+v", g.Value, len(g.Actions), w.actions, g.Actions)
		}
		for _, a := range g.Actions {
			canary := strings.HasSuffix(a.Node, "-0") || strings.HasSuffix(a.Node, "-1") || strings.HasSuffix(a.Node, "-2") || strings.HasSuffix(a.Node, "-3")
			if a.Verb != w.verb || canary != (w.verb == "unlabel") {
				t.Errorf("%s: action %+v", g.Value, a)
			}
		}
		if g.Value == "pool-c" && (g.NeedCanaries != 3 || !strings.Contains(g.Reason, "at least 3 canaries")) {
			t.Errorf("pool-c: need %d canaries (%s), want 3", g.NeedCanaries, g.Reason)
		}
	}

	// The other formats say the same.
	text := string(runVerdict(t, nil, append(args[:len(args)-2:len(args)-2], "--format", "text")...))
	for _, s := range []string{"pool-a (8 nodes, 4 canaries): promote", "pool-b (8 nodes, 4 canaries): roll back", "pool-c (8 nodes, 2 canaries): hold",
		"unlabel: kubectl label --overwrite node pool-b-node-0 slowpath.dev/canary-"} {
		if !strings.Contains(text, s) {
			t.Errorf("text lacks %q:\n%s", s, text)
		}
	}
	md := string(runVerdict(t, nil, append(args[:len(args)-2:len(args)-2], "--format", "markdown")...))
	if !strings.Contains(md, "| pool-b | 8 | 4 | roll back | backlog_drops_per_second |") {
		t.Errorf("markdown:\n%s", md)
	}
	page := string(runVerdict(t, nil, append(args[:len(args)-2:len(args)-2], "--format", "html")...))
	if !strings.Contains(page, "pool-a: promote") || !strings.Contains(page, "pool-b-node-7") {
		t.Errorf("html lacks a group or a node")
	}

	// What the queries cannot answer is said, never guessed.
	base := args[:4:4] // --prometheus URL --change net.backlog-drops
	for _, tc := range []struct {
		args []string
		err  string
	}{
		// The service's series carry instance too, but its own address,
		// not the agent's: no node of the group.
		{[]string{"--by", "node_pool", "--node-label", "instance", "--window", "6s", "--rate-interval", "3s", "--metric", "docs=sum by (instance) (rate(indexed_docs_total[3s]))"}, "none of its series names a node of slowpath_node_info by instance"},
		{[]string{"--by", "node_pool", "--node-label", "pod"}, `has no label "pod"`},
		{[]string{"--by", "node_pool", "--node-label", "node", "--window", "6s", "--rate-interval", "3s", "--metric", "all=sum(rate(indexed_docs_total[1m]))"}, `has no label "node": aggregate per node`},
		{[]string{"--by", "node_pool", "--node-label", "node", "--window", "6s", "--rate-interval", "3s", "--metric", "up=up"}, `has more than one series: aggregate per node`},
		// A query no node answers is a mistake in it, not a group to hold.
		{[]string{"--by", "node_pool", "--node-label", "node", "--window", "6s", "--rate-interval", "3s", "--metric", "nothing=sum by (node) (rate(no_such_total[3s]))"}, "series nothing: no values for any node in the windows before and after pool-a's change"},
		// A --by typed wrong names the labels there are.
		{[]string{"--by", "nodepool", "--node-label", "node", "--window", "6s", "--rate-interval", "3s"}, "--by nodepool: no node's slowpath_node_info has the label nodepool; labels it has: "},
	} {
		var out bytes.Buffer
		err := execVerdict(&out, nil, append(append([]string(nil), base...), tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.err)
		}
	}
	var byErr bytes.Buffer
	if err := execVerdict(&byErr, nil, append(append([]string(nil), base...), "--by", "nodepool")...); err == nil || !strings.Contains(err.Error(), "node, node_pool") {
		t.Errorf("--by nodepool: %v, want the labels there are, node_pool among them", err)
	}
	// The default --by, instance_type, which these nodes lack: one group
	// of every node, as before.
	all := verdict(t, append(append([]string(nil), base...), "--node-label", "node", "--window", "6s", "--rate-interval", "3s", "--format", "json")...)
	if len(all.Groups) != 1 || all.Groups[0].Value != "" || all.Groups[0].Nodes != 24 || len(all.Groups[0].Canaries) != 10 {
		t.Errorf("default --by on a fleet without instance_type: %+v", all.Groups)
	}

	// A primary after one that is not significant is not tested, and a
	// series only pool-a has holds the other pools for no data.
	seqArgs := append(append([]string(nil), base...), "--by", "node_pool", "--node-label", "node", "--window", "6s", "--rate-interval", "3s",
		"--finding-series=false", "--metric", "flat,primary=max by (node) (slowpath_node_info)",
		"--metric", `drops,lower,primary=sum by (node) (rate(slowpath_net_drops_total{layer="backlog"}[$__rate_interval]))`,
		"--metric", `docs_a=sum by (node) (rate(indexed_docs_total{node_pool="pool-a"}[$__rate_interval]))`)
	seq := verdict(t, append(seqArgs, "--format", "json")...)
	for _, g := range seq.Groups {
		if len(g.Metrics) != 3 {
			t.Fatalf("%s: %d series, want 3", g.Value, len(g.Metrics))
		}
		if d := g.Metrics[1]; d.AdjustedP != nil || d.Change != "" || d.Test != fleetverdict.NotTested {
			t.Errorf("%s drops after a flat primary: adjusted p %v, change %q, test %q; want null, none and not tested", g.Value, d.AdjustedP, d.Change, d.Test)
		}
		// One answer: a test of significant is a change, and none is
		// significant beside an adjusted p above alpha.
		for _, m := range g.Metrics {
			if (m.Test == "significant") != (m.Change != "") || m.AdjustedP != nil && *m.AdjustedP > seq.Alpha && m.Test == "significant" {
				t.Errorf("%s %s: test %q, change %q, adjusted p %v", g.Value, m.Name, m.Test, m.Change, m.AdjustedP)
			}
		}
		docs := g.Metrics[2]
		if g.Value == "pool-a" {
			if docs.Test == "no data" || docs.Effect == nil || g.Outcome != "hold" || !strings.Contains(g.Reason, "no significant change of flat") {
				t.Errorf("pool-a: %s (%s); docs_a %s effect %v", g.Outcome, g.Reason, docs.Test, docs.Effect)
			}
			continue
		}
		// pool-c's reason goes on with too few nodes for flat (3 canaries).
		if g.Outcome != "hold" || !strings.Contains(g.Reason, "no data: docs_a has no values on any node of the group") || g.NeedCanaries != map[string]int{"pool-b": 0, "pool-c": 3}[g.Value] ||
			docs.Test != "no data" || docs.CanaryChange != nil || docs.ControlChange != nil || docs.Effect != nil || len(docs.Nodes) != 0 {
			t.Errorf("%s: %s (%s, need %d); docs_a %s canaries %v others %v effect %v, %d nodes", g.Value, g.Outcome, g.Reason, g.NeedCanaries,
				docs.Test, docs.CanaryChange, docs.ControlChange, docs.Effect, len(docs.Nodes))
		}
	}
	seqJSON := runVerdict(t, nil, append(seqArgs, "--format", "json")...)
	if !bytes.HasPrefix(seqJSON, []byte("{\n  \"format_version\": 2,")) || !bytes.Contains(seqJSON, []byte(`"test": "not tested"`)) {
		t.Errorf("JSON of a stopped sequence: want format_version 2 first and a primary not tested:\n%.400s", seqJSON)
	}
	seqText := string(runVerdict(t, nil, append(seqArgs, "--format", "text")...))
	if !strings.Contains(seqText, "not tested: an earlier primary was not significant") {
		t.Errorf("text of a stopped sequence and a series without data:\n%s", seqText)
	}
	var dashes int
	for _, line := range strings.Split(seqText, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "docs_a" && strings.Join(f[len(f)-6:], " ") == "- - - - no data" {
			dashes++
		}
	}
	if dashes != 2 {
		t.Errorf("%d docs_a rows of dashes and no data, want pool-b's and pool-c's:\n%s", dashes, seqText)
	}

	var none bytes.Buffer
	if err := execVerdict(&none, nil, "--prometheus", prom.URL, "--change", "net.ring-undersized", "--by", "node_pool", "--node-label", "node"); err == nil || !strings.Contains(err.Error(), "no node runs net.ring-undersized") {
		t.Errorf("a change no node runs: %v", err)
	}

	// --fail-on: a rollback fails the pipeline.
	var out bytes.Buffer
	err := execVerdict(&out, nil, append(args[:len(args)-2:len(args)-2], "--fail-on", "rollback")...)
	var ee *clienv.ExitError
	if !errors.As(err, &ee) || ee.Code != clienv.ExitFindings || !strings.Contains(err.Error(), "pool-b roll back") {
		t.Errorf("--fail-on rollback: %v", err)
	}

	// --apply through client-go: the fake cluster's nodes are relabelled,
	// each change printed before it is made.
	var objs []runtime.Object
	for _, n := range nodes {
		labels := map[string]string{}
		if n.canary {
			labels["slowpath.dev/canary"] = "net-backlog"
		}
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: labels}})
	}
	cs := dynamicfake.NewSimpleDynamicClient(scheme.Scheme, objs...)
	out.Reset()
	if err := execVerdict(&out, cs, append(args[:len(args)-2:len(args)-2], "--apply")...); err != nil {
		t.Fatalf("--apply: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "--apply: 8 label changes\npool-a: kubectl label --overwrite node pool-a-node-4 'slowpath.dev/canary=net-backlog'\n") {
		t.Errorf("--apply output:\n%s", out.String())
	}
	for _, n := range nodes {
		got, err := cs.Resource(fleetverdict.Nodes).Get(context.Background(), n.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, labelled := got.GetLabels()["slowpath.dev/canary"]
		want := n.canary
		switch {
		case strings.HasPrefix(n.name, "pool-a"):
			want = true
		case strings.HasPrefix(n.name, "pool-b"):
			want = false
		}
		if labelled != want {
			t.Errorf("node %s labelled %v after --apply, want %v", n.name, labelled, want)
		}
	}
}

func verdict(t *testing.T, args ...string) fleetverdict.Report {
	t.Helper()
	var r fleetverdict.Report
	if err := json.Unmarshal(runVerdict(t, nil, args...), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func runVerdict(t *testing.T, kube dynamic.Interface, args ...string) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := execVerdict(&out, kube, args...); err != nil {
		t.Fatalf("fleet verdict %v: %v", args, err)
	}
	return out.Bytes()
}

func execVerdict(out io.Writer, kube dynamic.Interface, args ...string) error {
	env := &clienv.Env{Stdout: out, Stderr: io.Discard}
	cmd := fleetcmd.NewCmdVerdict(env, func(ctx context.Context, o *fleetcmd.VerdictOptions) error {
		o.Kube = func(string) (dynamic.Interface, error) {
			if kube == nil {
				return nil, errors.New("no cluster in this test")
			}
			return kube, nil
		}
		return clienv.Usage(fleetcmd.RunVerdict(ctx, env, o))
	})
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	return cmd.Execute()
}

// TestVerdictUsage: flags are checked before any query.
func TestVerdictUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--change", "net.backlog-drops"}, "--prometheus URL is required"},
		{[]string{"--prometheus", "http://127.0.0.1:1"}, "--change ID is required"},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--change", "net.backlog"}, "no such check"},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--change", "storage.stacked-encryption"}, "has no series of its own"},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--change", "storage.stacked-encryption", "--finding-series=false", "--metric", "x=y"}, "no primary series"},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--change", "net.backlog-drops", "--apply"}, "--apply needs --canary"},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--change", "net.backlog-drops", "--canary", "a=b", "--apply", "--format", "json"}, "use --format text"},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--change", "net.backlog-drops", "--canary", "a b=c"}, "--canary"},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--change", "net.backlog-drops", "--format", "yaml"}, "unknown --format"},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--change", "net.backlog-drops", "--fail-on", "worse"}, "--fail-on"},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--change", "net.backlog-drops", "--changed-at", "yesterday"}, "RFC 3339"},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--change", "net.backlog-drops", "--by", "node"}, "is the node label"},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--change", "net.backlog-drops", "--metric", "a,b=c"}, "unknown option"},
	} {
		cmd := fleetcmd.NewCmdVerdict(&clienv.Env{Stdout: io.Discard, Stderr: io.Discard}, nil)
		cmd.SetArgs(tc.args)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.Execute()
		var ee *clienv.ExitError
		if !errors.As(err, &ee) || ee.Code != clienv.ExitUsage || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: %v, want a usage error with %q", tc.args, err, tc.err)
		}
	}
}
