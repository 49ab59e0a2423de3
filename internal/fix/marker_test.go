package fix_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/slowpath/slowpath/internal/collect/host"
	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testenv"
)

// TestNodeTuningMarkerRoundTrip runs the marker command of a rendered
// DaemonSet for real, in a mount namespace of its own whose /run is a
// fresh tmpfs (the host's /run is never written), and collects the file
// it wrote: every node step of the plan comes back as a knob the
// DaemonSet owns.
func TestNodeTuningMarkerRoundTrip(t *testing.T) {
	testenv.RequireRoot(t)
	unshare := testenv.RequireTool(t, "unshare", "util-linux")
	for _, name := range []string{"net-azure-accelnet", "net-aws-ena"} {
		p := fix.FixturePlan(t, name, fix.Options{})
		b, err := fix.Kubernetes(p, fix.KubernetesOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var ds appsv1.DaemonSet
		if err := yaml.UnmarshalStrict(b, &ds); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cmd := ds.Spec.Template.Spec.InitContainers[0].Command
		lines := strings.Split(strings.TrimSpace(cmd[len(cmd)-1]), "\n")
		mark := lines[len(lines)-1]
		if !strings.Contains(mark, fix.NodeTuningMarker) {
			t.Fatalf("%s: the init script does not end by writing the marker:\n%s", name, cmd[len(cmd)-1])
		}
		out, err := exec.Command(unshare, "--mount", "--propagation", "private", "sh", "-ec",
			"mount -t tmpfs slowpath-test /run\n"+mark+"\ncat "+fix.NodeTuningMarker).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: marker command: %v\n%s", name, err, out)
		}
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "run/slowpath"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "run/slowpath/node-tuning"), out, 0o644); err != nil {
			t.Fatal(err)
		}
		var s snapshot.Snapshot
		host.Collect(hostfs.New(root), &s)
		var owned []string
		for _, tu := range s.Host.Tuners {
			if tu.Name == "slowpath-node-tuning" {
				for _, c := range tu.Sysctls {
					owned = append(owned, "sysctl:"+c.Key+"="+c.Value)
				}
				for _, r := range tu.Rings {
					owned = append(owned, "ring:"+r.Devices+":"+r.Value)
				}
			}
		}
		var want []string
		for _, e := range p.Entries {
			for _, st := range e.Steps {
				switch c := st.Change.(type) {
				case fix.Sysctl:
					want = append(want, "sysctl:"+c.Key+"="+strings.TrimSpace(c.Want("")))
				case fix.Ring:
					want = append(want, "ring:"+c.Interface+":rx "+c.Want(""))
				}
			}
		}
		slices.Sort(owned)
		slices.Sort(want)
		if len(want) == 0 || !slices.Equal(owned, want) {
			t.Errorf("%s: collected from the marker %q, want the plan's node steps %q\nmarker:\n%s", name, owned, want, out)
		}
	}
}
