package fleetreport

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/fleet"
)

func TestWriteText(t *testing.T) {
	s := &fleet.Summary{By: "cloud", Groups: []fleet.Group{
		{Value: "", Nodes: 1, Findings: []fleet.GroupCount{}},
		{Value: "aws", Nodes: 3, Findings: []fleet.GroupCount{
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
