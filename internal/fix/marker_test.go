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
	"github.com/slowpath/slowpath/internal/testing/testenv"
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
		// keeps every fix line's time; a setting the old marker did not
		// have (another DaemonSet version added it) gets a new time while
		// the others keep theirs.
		m := fix.NodeTuningMarker
		start := time.Now().Truncate(time.Second)
		out, err := exec.Command(unshare, "--mount", "--propagation", "slave", "sh", "-ec",
			"mount -t tmpfs slowpath-test /run\n"+mark+"\na=$(grep '^fix ' "+m+")\nsleep 1.1\n"+mark+"\n"+
				"[ \"$(grep '^fix ' "+m+")\" = \"$a\" ] || { echo restart moved a time; exit 9; }\n"+
				"first=$(grep -m1 '^fix ' "+m+")\ngrep -vxF \"$first\" "+m+" > "+m+".x; mv "+m+".x "+m+"\nsleep 1.1\n"+mark+"\n"+
				"[ \"$(grep -m1 '^fix ' "+m+")\" != \"$first\" ] || { echo a new setting kept an old time; exit 9; }\n"+
				"[ \"$(grep '^fix ' "+m+" | tail -n +2)\" = \"$(echo \"$a\" | tail -n +2)\" ] || { echo the other settings lost their time; exit 9; }\n"+
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

// FuzzMarkerLines: whatever the interface's name and the finding's
// subject (both come from the host, or a snapshot given to fix --from), a
// ring step's marker lines read back as exactly one ring setting and one
// fix of that finding, with the name and subject kept but for control
// characters, and no other setting, fix or time.
func FuzzMarkerLines(f *testing.F) {
	for _, s := range [][2]string{{"eth0", "eth0"}, {"", ""}, {" ", "a b"}, {"eth0\nfix net.time-squeeze sysctl:net.core.netdev_budget 600 softnet", "x\nsysctl kernel.panic=1"},
		{"e\rapplied-at 1", "\u2028fix a.b k v"}, {"é\x00", "s"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, iface, subject string) {
		lines := fix.MarkerLines("net.ring-undersized", iface, 8192, subject, 1795773969)
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "run/slowpath"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
			t.Fatal(err)
		}
		content := strings.Join(lines, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(root, "run/slowpath/node-tuning"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		var s snapshot.Snapshot
		host.Collect(hostfs.New(root), &s)
		clean := func(v string) string {
			return strings.Map(func(r rune) rune {
				if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
					return '?'
				}
				return r
			}, v)
		}
		var fixes []snapshot.AppliedFix
		var settings int
		for _, tu := range s.Host.Tuners {
			settings += len(tu.Sysctls) + len(tu.Rings)
		}
		fixes = s.Host.Fixes
		if len(fixes) > 1 || settings > 1 {
			t.Fatalf("iface %q subject %q: %d fixes and %d settings from %q", iface, subject, len(fixes), settings, content)
		}
		// A name with a space splits the fix line's fields differently; a
		// name that is empty or all spaces gives a line the collector
		// refuses. Either way no second fix or setting; when one is read,
		// it is the finding's, with its time.
		if len(fixes) == 1 {
			got := fixes[0]
			if got.ID != "net.ring-undersized" || !got.AppliedAt.Equal(time.Unix(1795773969, 0)) {
				t.Errorf("iface %q subject %q: read back %+v", iface, subject, got)
			}
			if !strings.ContainsAny(iface, " \t") && iface != "" && (got.Key != "ring:"+clean(iface)+":rx" || got.Value != "8192" ||
				strings.TrimSpace(got.Subject) != strings.TrimSpace(clean(subject))) {
				t.Errorf("iface %q subject %q: read back %+v", iface, subject, got)
			}
		}
	})
}
