package fleet

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/model"
)

// series is one sample of an instant vector with the given labels, as
// Prometheus returns it (job and instance come from the scrape target).
func series(labels ...string) *model.Sample {
	m := model.Metric{}
	for i := 0; i+1 < len(labels); i += 2 {
		m[model.LabelName(labels[i])] = model.LabelValue(labels[i+1])
	}
	return &model.Sample{Metric: m, Value: 1}
}

func info(instance, typ string) *model.Sample {
	if typ == "" {
		return series("job", "slowpath", "instance", instance)
	}
	return series("job", "slowpath", "instance", instance, "instance_type", typ)
}

func finding(instance, id, sev, subject string, target ...string) *model.Sample {
	return series(append([]string{"job", "slowpath", "instance", instance, "id", id, "severity", sev, "subject", subject}, target...)...)
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name         string
		info, firing model.Vector
		want         *Summary
	}{
		{name: "nothing", want: &Summary{By: "instance_type", Groups: []Group{}}},
		{name: "quiet nodes, one without the label",
			info: model.Vector{info("a:1", "m5"), info("b:1", "m5"), info("c:1", "")},
			want: &Summary{By: "instance_type", Groups: []Group{
				{Value: "", Nodes: 1, Findings: []GroupCount{}},
				{Value: "m5", Nodes: 2, Findings: []GroupCount{}},
			}}},
		{name: "a finding counted per node, once per node",
			info: model.Vector{info("a:1", "m5"), info("b:1", "m5"), info("c:1", "r6i")},
			firing: model.Vector{
				finding("a:1", "dmcrypt.workqueue", "warning", "/dev/mapper/data"),
				finding("b:1", "dmcrypt.workqueue", "warning", "/dev/mapper/data"),
				// Two series of one node (differing in a target label) are one node.
				finding("b:1", "dmcrypt.workqueue", "warning", "/dev/mapper/data", "pod", "agent-x"),
				finding("c:1", "dmcrypt.workqueue", "warning", "/dev/mapper/data"),
			},
			want: &Summary{By: "instance_type", Groups: []Group{
				{Value: "m5", Nodes: 2, Findings: []GroupCount{{ID: "dmcrypt.workqueue", Severity: "warning", Subject: "/dev/mapper/data", Nodes: 2}}},
				{Value: "r6i", Nodes: 1, Findings: []GroupCount{{ID: "dmcrypt.workqueue", Severity: "warning", Subject: "/dev/mapper/data", Nodes: 1}}},
			}}},
		{name: "worst severity first, then most nodes, then id and subject",
			info: model.Vector{info("a:1", "m5"), info("b:1", "m5")},
			firing: model.Vector{
				finding("a:1", "z.info", "info", "/x"),
				finding("a:1", "b.warn", "warning", "/y"),
				finding("a:1", "b.warn", "warning", "/x"),
				finding("a:1", "a.warn", "warning", "/z"),
				finding("a:1", "c.warn", "warning", "/x"), finding("b:1", "c.warn", "warning", "/x"),
				finding("b:1", "y.crit", "critical", ""),
			},
			want: &Summary{By: "instance_type", Groups: []Group{{Value: "m5", Nodes: 2, Findings: []GroupCount{
				{ID: "y.crit", Severity: "critical", Subject: "", Nodes: 1},
				{ID: "c.warn", Severity: "warning", Subject: "/x", Nodes: 2},
				{ID: "a.warn", Severity: "warning", Subject: "/z", Nodes: 1},
				{ID: "b.warn", Severity: "warning", Subject: "/x", Nodes: 1},
				{ID: "b.warn", Severity: "warning", Subject: "/y", Nodes: 1},
				{ID: "z.info", Severity: "info", Subject: "/x", Nodes: 1},
			}}}}},
		{name: "a node without its info series is grouped by its finding's target labels",
			info: model.Vector{info("a:1", "m5")},
			firing: model.Vector{
				finding("b:1", "storage.stacked-encryption", "warning", "/data", "instance_type", "m5"),
				finding("c:1", "storage.stacked-encryption", "warning", "/data"),
				finding("c:1", "dmcrypt.tax", "warning", "/dev/dm-0"),
			},
			want: &Summary{By: "instance_type", Groups: []Group{
				{Value: "", Nodes: 1, Findings: []GroupCount{
					{ID: "dmcrypt.tax", Severity: "warning", Subject: "/dev/dm-0", Nodes: 1},
					{ID: "storage.stacked-encryption", Severity: "warning", Subject: "/data", Nodes: 1},
				}},
				{Value: "m5", Nodes: 2, Findings: []GroupCount{{ID: "storage.stacked-encryption", Severity: "warning", Subject: "/data", Nodes: 1}}},
			}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize("instance_type", tt.info, tt.firing)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestGroupNodes: by scrape target (fleet, fleet --tax) or by a label
// (fleet --verdict); a node with two info series counted once, in the
// group of the first; an info series without the node label unnamed.
func TestGroupNodes(t *testing.T) {
	info := model.Vector{
		series("job", "slowpath", "instance", "a:1", "node", "a", "pool", "p1"),
		series("job", "slowpath", "instance", "b:1", "node", "b", "pool", "p2"),
		// a's labels changed within the lookback: a second info series.
		series("job", "slowpath", "instance", "a:1", "node", "a", "pool", "p2", "kernel", "new"),
		series("job", "slowpath", "instance", "c:1", "node", "c"),
		series("job", "other", "instance", "d:1"),
	}
	byTarget := GroupNodes(info, NodeOptions{By: "pool"})
	if got, want := byTarget.Members, map[string][]string{
		"p1": {"slowpath\xffa:1"}, "p2": {"slowpath\xffb:1"}, "": {"slowpath\xffc:1", "other\xffd:1"},
	}; !cmp.Equal(got, want) {
		t.Errorf("by target: members %q, want %q", got, want)
	}
	if n := byTarget.Node(finding("b:1", "x", "warning", "/").Metric); byTarget.Group[n] != "p2" {
		t.Errorf("a finding of b:1 is node %q of group %q, want p2", n, byTarget.Group[n])
	}
	byLabel := GroupNodes(info, NodeOptions{By: "pool", Label: "node"})
	if got, want := byLabel.Members, map[string][]string{"p1": {"a"}, "p2": {"b"}, "": {"c"}}; !cmp.Equal(got, want) {
		t.Errorf("by label: members %q, want %q", got, want)
	}
	if len(byLabel.Unnamed) != 1 || byLabel.Unnamed[0]["instance"] != "d:1" {
		t.Errorf("by label: unnamed %v, want d:1's info series", byLabel.Unnamed)
	}
	if n := byLabel.Node(series("node", "b").Metric); byLabel.Group[n] != "p2" {
		t.Errorf("a per-node series of b is node %q of group %q, want p2", n, byLabel.Group[n])
	}
}
