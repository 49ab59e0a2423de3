package fleetcmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/cli/fleetcmd"
	"github.com/slowpath/slowpath/internal/fleet"
	"github.com/slowpath/slowpath/internal/fleettax"
	"github.com/slowpath/slowpath/internal/testing/agenttest"
	"github.com/slowpath/slowpath/internal/testing/golden"
	"github.com/slowpath/slowpath/internal/testing/prometheustest"
)

const hostsDir = "../../../testdata/hosts"

func runFleet(t *testing.T, args ...string) []byte {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := fleetcmd.NewCmdFleet(&clienv.Env{Stdout: &out, Stderr: &errOut}, nil)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.Execute(); err != nil {
		t.Fatalf("fleet %v: %v", args, err)
	}
	return out.Bytes()
}

// TestFleet: Debian's Prometheus scrapes three agents serving fixture hosts
// (Azure with double encryption, AWS i4i with default LUKS, a plain host);
// their series appear and fleet groups them by instance type, cloud and a
// target label as a node pool would be attached in Kubernetes.
func TestFleet(t *testing.T) {
	var targets []prometheustest.Target
	for _, h := range []struct{ name, pool string }{
		{"azure-e16dv5-eah", "pool-a"}, {"aws-i4i-luks-default", "pool-a"}, {"plain-host", "pool-b"},
	} {
		addr := agenttest.Start(t, "--from", filepath.Join(hostsDir, h.name+".json"))
		targets = append(targets, prometheustest.Target{Addr: addr, Labels: map[string]string{"node_pool": h.pool}})
	}
	prom := prometheustest.Start(t, targets)
	// Series appear: one info series per node, every check per node.
	prom.WaitFor(t, "count(slowpath_node_info) == 3", 20*time.Second)
	if v := prom.Query(t, `count(count by (instance) (slowpath_finding{id="storage.stacked-encryption"}))`); len(v) != 1 || v[0].Value != 3 {
		t.Errorf("stacked-encryption series on %v nodes, want 3", v)
	}

	for _, by := range []string{"instance_type", "cloud", "node_pool"} {
		t.Run(by, func(t *testing.T) {
			got := runFleet(t, "--prometheus", prom.URL, "--by", by)
			golden.Compare(t, filepath.Join("testdata", "by-"+by+".txt"), got)
		})
	}

	// A --by typed wrong is refused naming the labels there are, with
	// and without --tax, as fleet verdict refuses it; the default
	// (instance_type, which plain-host lacks) still groups, below.
	for _, args := range [][]string{{"--by", "nodepool"}, {"--tax", "--by", "nodepool"}} {
		var out, errOut bytes.Buffer
		cmd := fleetcmd.NewCmdFleet(&clienv.Env{Stdout: &out, Stderr: &errOut}, nil)
		cmd.SetArgs(append([]string{"--prometheus", prom.URL}, args...))
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.Execute()
		var ee *clienv.ExitError
		if !errors.As(err, &ee) || ee.Code != clienv.ExitUsage || out.Len() != 0 ||
			!strings.Contains(err.Error(), "--by nodepool: no node's slowpath_node_info has the label nodepool; labels it has: ") ||
			!strings.Contains(err.Error(), "instance_type, ") || !strings.Contains(err.Error(), "node_pool") {
			t.Errorf("%v: %v (%d bytes out), want exit 2 naming the labels there are", args, err, out.Len())
		}
	}

	var s fleet.Summary
	js := runFleet(t, "--prometheus", prom.URL, "--format", "json")
	if !bytes.HasPrefix(js, []byte("{\n  \"format_version\": 1,")) {
		t.Errorf("fleet JSON does not start with format_version 1:\n%.200s", js)
	}
	if err := json.Unmarshal(js, &s); err != nil {
		t.Fatal(err)
	}
	want := fleet.Summary{By: "instance_type", Groups: []fleet.Group{
		{Value: "", Nodes: 1, Findings: []fleet.GroupCount{}},
		{Value: "Standard_E16d_v5", Nodes: 1, Findings: []fleet.GroupCount{
			{ID: "storage.stacked-encryption", Severity: "warning", Subject: "/mnt/data", Nodes: 1},
		}},
		{Value: "i4i.2xlarge", Nodes: 1, Findings: []fleet.GroupCount{
			{ID: "dmcrypt.tax", Severity: "warning", Subject: "/dev/mapper/scratch", Nodes: 1},
			{ID: "dmcrypt.workqueue", Severity: "warning", Subject: "/dev/mapper/scratch", Nodes: 1},
			{ID: "storage.stacked-encryption", Severity: "warning", Subject: "/data", Nodes: 1},
		}},
	}}
	if d := cmp.Diff(want, s); d != "" {
		t.Errorf("fleet JSON (-want +got):\n%s", d)
	}
}

// TestFleetTax: Debian's Prometheus with the recording rules of
// deploy/kubernetes scrapes the tax fleet (two Standard_E16d_v5 nodes with
// the search incident, three r6i.4xlarge nodes tuned), and fleet --tax
// groups them worst first, in text, Markdown and JSON. Node addresses are
// random ports: the goldens name each node by its group (nodes of a group
// are alike, so which one is the highest is not part of the answer).
func TestFleetTax(t *testing.T) {
	nodes, targets := agenttest.TaxFleet(t,
		agenttest.Incident, agenttest.Tuned, agenttest.Incident, agenttest.Tuned, agenttest.Tuned)
	prom := prometheustest.StartRules(t, targets, prometheustest.RulesOf(t, "../../../deploy/kubernetes/prometheusrule.yaml", false))
	prom.WaitFor(t, "count(instance_mountpoint:slowpath_dmcrypt_ios:increase5m >= 1000) == 5", 60*time.Second)

	names := make([]string, 0, 2*len(nodes))
	for _, n := range nodes {
		names = append(names, n.Addr, n.Group+"-node")
	}
	anon := strings.NewReplacer(names...)
	for _, f := range []string{"text", "markdown"} {
		got := anon.Replace(string(runFleet(t, "--tax", "--prometheus", prom.URL, "--format", f)))
		golden.Compare(t, filepath.Join("testdata", "tax."+f), []byte(got))
	}

	var s fleettax.Summary
	if err := json.Unmarshal(runFleet(t, "--tax", "--prometheus", prom.URL, "--by", "instance_type", "--format", "json"), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Groups) != 2 || s.By != "instance_type" {
		t.Fatalf("groups %+v", s)
	}
	perIO := 16384 / agenttest.TaxCipher
	for i, want := range []agenttest.TaxNode{agenttest.Incident, agenttest.Tuned} {
		g := s.Groups[i]
		added := float64(want.TopUS-want.BottomUS) * 1e-6
		wantNodes := 2
		if want.Group == agenttest.Tuned.Group {
			wantNodes = 3
		}
		if g.Value != want.Group || g.Nodes != wantNodes || g.Mounts != wantNodes || g.NotJudged != 0 {
			t.Errorf("group %d: %s %d nodes %d mounts %d not judged; want %s, %d", i, g.Value, g.Nodes, g.Mounts, g.NotJudged, want.Group, wantNodes)
		}
		for what, v := range map[string][2]float64{
			"added": {g.AddedPerIOSeconds, added}, "cipher": {g.CipherPerIOSeconds, perIO},
			"median ratio": {g.Ratio.Median, added / perIO}, "min ratio": {g.Ratio.Min, added / perIO}, "max ratio": {g.Ratio.Max, added / perIO},
		} {
			if r := v[0] / v[1]; r < 0.95 || r > 1.05 {
				t.Errorf("%s: %s %g, want %g within 5%%", g.Value, what, v[0], v[1])
			}
		}
		if g.Highest == nil || g.Lowest == nil || g.Highest.MountPoint != "/data" || g.Highest.Device != "dm-0" || g.Highest.Lower != "nvme0n1" {
			t.Errorf("%s: extremes %+v %+v", g.Value, g.Highest, g.Lowest)
		}
	}
}

// TestFleetTaxWithoutRules: agents report dm-crypt mounts, but Prometheus
// has not loaded the recording rules; the error says which file to load.
func TestFleetTaxWithoutRules(t *testing.T) {
	_, targets := agenttest.TaxFleet(t, agenttest.Tuned)
	prom := prometheustest.Start(t, targets)
	prom.WaitFor(t, "slowpath_dmcrypt_tax_span", 20*time.Second)
	var out, errOut bytes.Buffer
	cmd := fleetcmd.NewCmdFleet(&clienv.Env{Stdout: &out, Stderr: &errOut}, nil)
	cmd.SetArgs([]string{"--tax", "--prometheus", prom.URL})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	var ee *clienv.ExitError
	if !errors.As(err, &ee) || ee.Code != clienv.ExitUsage || !strings.Contains(err.Error(), "deploy/kubernetes/prometheusrule.yaml") {
		t.Errorf("want an error naming the rules file, got %v", err)
	}
}

// TestFleetFormats: markdown is for --tax only.
func TestFleetFormats(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--tax", "--format", "markdown"}, true},
		{[]string{"--format", "markdown"}, false},
		{[]string{"--tax", "--format", "html"}, false},
	} {
		cmd := fleetcmd.NewCmdFleet(&clienv.Env{Stdout: io.Discard, Stderr: io.Discard}, func(context.Context, *fleetcmd.Options) error { return nil })
		cmd.SetArgs(append([]string{"--prometheus", "http://127.0.0.1:1"}, tc.args...))
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		if err := cmd.Execute(); (err == nil) != tc.ok {
			t.Errorf("%v: error %v", tc.args, err)
		}
	}
}
