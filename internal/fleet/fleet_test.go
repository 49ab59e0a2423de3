package fleet

import (
	"strings"
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

func TestWriteText(t *testing.T) {
	s := &Summary{By: "cloud", Groups: []Group{
		{Value: "", Nodes: 1, Findings: []GroupCount{}},
		{Value: "aws", Nodes: 3, Findings: []GroupCount{
			{ID: "dmcrypt.workqueue", Severity: "warning", Subject: "/dev/mapper/scratch", Nodes: 2},
			{ID: "net.rps", Severity: "info", Subject: "", Nodes: 1},
		}},
	}}
	var b strings.Builder
	if err := WriteText(&b, s); err != nil {
		t.Fatal(err)
	}
	want := `(no cloud): 1 node
  no check fires
aws: 3 nodes
  warning   dmcrypt.workqueue             /dev/mapper/scratch   2/3 nodes
  info      net.rps                       -                     1/3 nodes
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
