package fix_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

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
		// Run as a restarted pod would: the second run, same settings,
		// keeps the first time; a marker whose settings differ (another
		// DaemonSet version) gets a new one, which the test then undoes by
		// running the first marker again after it.
		m := fix.NodeTuningMarker
		start := time.Now().Truncate(time.Second)
		out, err := exec.Command(unshare, "--mount", "--propagation", "private", "sh", "-ec",
			"mount -t tmpfs slowpath-test /run\n"+mark+"\na=$(grep applied-at "+m+")\nsleep 1.1\n"+mark+"\n"+
				"[ \"$(grep applied-at "+m+")\" = \"$a\" ] || { echo restart moved the time; exit 9; }\n"+
				"echo 'sysctl other.key=1' >> "+m+"\n"+mark+"\n[ \"$(grep applied-at "+m+")\" != \"$a\" ] || { echo new settings kept the old time; exit 9; }\n"+
				"cat "+m).CombinedOutput()
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
		// Every step is an applied fix of its finding, since the run.
		var fixes, wantFixes []string
		for _, f := range s.Host.Fixes {
			fixes = append(fixes, f.ID+" "+f.Key+"="+f.Value+" on "+f.Subject)
			if f.AppliedAt.Before(start) || f.AppliedAt.After(time.Now()) {
				t.Errorf("%s: %s applied at %v, not during the test (from %v)", name, f.Key, f.AppliedAt, start)
			}
		}
		for _, e := range p.Entries {
			for _, st := range e.Steps {
				wantFixes = append(wantFixes, e.ID+" "+st.Key()+"="+st.Change.Want("")+" on "+e.Subject)
			}
		}
		slices.Sort(fixes)
		slices.Sort(wantFixes)
		if !slices.Equal(fixes, wantFixes) {
			t.Errorf("%s: fixes from the marker %q, want %q\nmarker:\n%s", name, fixes, wantFixes, out)
		}
	}
}

// FuzzMarkerFixLine: whatever the finding's subject (it comes from the
// host), the marker's fix line is read back by the collector as exactly
// one fix of that finding with that setting, the subject kept but for its
// control characters, and no setting or time of its own.
func FuzzMarkerFixLine(f *testing.F) {
	for _, s := range []string{"softnet", "eth0", "", " ", "a b", "x\nsysctl kernel.panic=1", "x\rapplied-at 1", "\u2028fix a.b k v", "é\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, subject string) {
		line := fix.MarkerFixLine("net.backlog-drops", "net.core.netdev_max_backlog", 32768, subject)
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "run/slowpath"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "run/slowpath/node-tuning"), []byte(line+"\napplied-at 1795773969\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var s snapshot.Snapshot
		host.Collect(hostfs.New(root), &s)
		h := s.Host
		if len(h.Fixes) != 1 {
			t.Fatalf("subject %q: %d fixes from %q", subject, len(h.Fixes), line)
		}
		got := h.Fixes[0]
		want := strings.TrimSpace(strings.Map(func(r rune) rune {
			if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
				return '?'
			}
			return r
		}, subject))
		if got.ID != "net.backlog-drops" || got.Key != "sysctl:net.core.netdev_max_backlog" || got.Value != "32768" || strings.TrimSpace(got.Subject) != want {
			t.Errorf("subject %q: read back %+v", subject, got)
		}
		for _, tu := range h.Tuners {
			if len(tu.Sysctls)+len(tu.Rings) != 0 {
				t.Errorf("subject %q: the fix line set %+v", subject, tu)
			}
		}
	})
}
