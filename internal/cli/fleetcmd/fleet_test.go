package fleetcmd_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/cli/agentcmd/agenttest"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/cli/fleetcmd"
	"github.com/slowpath/slowpath/internal/golden"
	"github.com/slowpath/slowpath/internal/prometheustest"
)

const hostsDir = "../../../testdata/hosts"

func fleet(t *testing.T, args ...string) []byte {
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
			got := fleet(t, "--prometheus", prom.URL, "--by", by)
			golden.Compare(t, filepath.Join("testdata", "by-"+by+".txt"), got)
		})
	}

	var s fleetcmd.Summary
	if err := json.Unmarshal(fleet(t, "--prometheus", prom.URL, "--format", "json"), &s); err != nil {
		t.Fatal(err)
	}
	want := fleetcmd.Summary{By: "instance_type", Groups: []fleetcmd.Group{
		{Value: "", Nodes: 1, Findings: []fleetcmd.GroupCount{}},
		{Value: "Standard_E16d_v5", Nodes: 1, Findings: []fleetcmd.GroupCount{
			{ID: "storage.stacked-encryption", Severity: "warning", Subject: "/mnt/data", Nodes: 1},
		}},
		{Value: "i4i.2xlarge", Nodes: 1, Findings: []fleetcmd.GroupCount{
			{ID: "dmcrypt.tax", Severity: "warning", Subject: "/dev/mapper/scratch", Nodes: 1},
			{ID: "dmcrypt.workqueue", Severity: "warning", Subject: "/dev/mapper/scratch", Nodes: 1},
			{ID: "storage.stacked-encryption", Severity: "warning", Subject: "/data", Nodes: 1},
		}},
	}}
	if d := cmp.Diff(want, s); d != "" {
		t.Errorf("fleet JSON (-want +got):\n%s", d)
	}
}
