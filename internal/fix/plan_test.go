package fix

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/slowpath/slowpath/internal/testing/golden"
)

const hostsDir = "../../testdata/hosts"

// fixturePlan builds the plan of one fixture host the way the command does.
func fixturePlan(t *testing.T, name string, o Options) *Plan {
	t.Helper()
	s, fs := fixtureFindings(t, name)
	p, err := Build(s, fs, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func fixtureHosts(t *testing.T) []string {
	t.Helper()
	hosts, err := filepath.Glob(filepath.Join(hostsDir, "*.json"))
	if err != nil || len(hosts) == 0 {
		t.Fatalf("no fixture hosts: %v", err)
	}
	var out []string
	for _, h := range hosts {
		out = append(out, strings.TrimSuffix(filepath.Base(h), ".json"))
	}
	return out
}

// TestGoldenPlans renders the plan of every fixture host in every format.
func TestGoldenPlans(t *testing.T) {
	ext := map[string]string{"shell": "sh", "files": "txtar", "kubernetes": "yaml", "tuned": "tuned.conf", "json": "json"}
	for _, name := range fixtureHosts(t) {
		t.Run(name, func(t *testing.T) {
			p := fixturePlan(t, name, Options{})
			for _, format := range Formats {
				var buf bytes.Buffer
				if err := Write(&buf, p, format); err != nil {
					t.Fatal(err)
				}
				golden.Compare(t, filepath.Join("testdata", name+".plan."+ext[format]), buf.Bytes())
			}
		})
	}
}

// TestKubernetesDecodesStrictly decodes every fixture's Kubernetes output
// into the k8s.io/api type it claims to be, rejecting unknown fields, and
// checks the DaemonSet carries the plan's node tuning.
func TestKubernetesDecodesStrictly(t *testing.T) {
	daemonSets := 0
	for _, name := range fixtureHosts(t) {
		p := fixturePlan(t, name, Options{})
		b, err := Kubernetes(p, KubernetesOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var head struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(b, &head); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		switch head.Kind {
		case "List":
			var l corev1.List
			if err := yaml.UnmarshalStrict(b, &l); err != nil {
				t.Fatalf("%s: v1 List: %v\n%s", name, err, b)
			}
			if head.APIVersion != "v1" || len(l.Items) != 0 {
				t.Errorf("%s: list %s with %d items, want an empty v1 List", name, head.APIVersion, len(l.Items))
			}
			if steps := nodeSteps(p); len(steps) != 0 {
				t.Errorf("%s: empty List although the plan has node steps %v", name, steps)
			}
		case "DaemonSet":
			daemonSets++
			var ds appsv1.DaemonSet
			if err := yaml.UnmarshalStrict(b, &ds); err != nil {
				t.Fatalf("%s: apps/v1 DaemonSet: %v\n%s", name, err, b)
			}
			if head.APIVersion != "apps/v1" {
				t.Errorf("%s: apiVersion %s", name, head.APIVersion)
			}
			ps := ds.Spec.Template.Spec
			if !ps.HostNetwork || len(ps.InitContainers) != 1 || ps.InitContainers[0].SecurityContext == nil ||
				ps.InitContainers[0].SecurityContext.Privileged == nil || !*ps.InitContainers[0].SecurityContext.Privileged {
				t.Fatalf("%s: want hostNetwork and one privileged init container: %+v", name, ps)
			}
			if d := cmp.Diff(ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels); d != "" {
				t.Errorf("%s: selector does not match the pod labels: %s", name, d)
			}
			script := strings.Join(ps.InitContainers[0].Command, " ")
			for _, s := range nodeSteps(p) {
				if !strings.Contains(script, s) {
					t.Errorf("%s: init container does not run %q:\n%s", name, s, script)
				}
			}
		default:
			t.Errorf("%s: unexpected kind %q", name, head.Kind)
		}
	}
	if daemonSets == 0 {
		t.Error("no fixture produced a DaemonSet: the test proved nothing")
	}
}

// nodeSteps are the commands the DaemonSet must run.
func nodeSteps(p *Plan) []string {
	var out []string
	for _, e := range p.Entries {
		for _, s := range e.Steps {
			if s.Change.NodeCommand() != "" {
				out = append(out, s.Command)
			}
		}
	}
	return out
}

func TestBuildOnly(t *testing.T) {
	p := fixturePlan(t, "net-azure-accelnet", Options{Only: []string{"net.backlog-drops"}})
	if len(p.Entries) != 1 || p.Entries[0].ID != "net.backlog-drops" {
		t.Fatalf("--only net.backlog-drops: %+v", p.Entries)
	}
	if _, err := Build(nil, nil, Options{Only: []string{"net.no-such-check"}}); err == nil {
		t.Error("an unknown --only id was accepted")
	}
}

func TestShellHeredocDelimiter(t *testing.T) {
	if d := heredoc("a\nEOF\nb\n"); d != "EOF_" {
		t.Errorf("heredoc delimiter %q collides with the content", d)
	}
}

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}

// TestNothingDroppedInSilence: a format that cannot express part of the
// plan names it, with why. On every fixture the Kubernetes output lists
// each step it does not run, each manual and cloud command, and points to
// --format shell; the txtar lists each runtime change of an entry without
// files, each manual and cloud command. The Azure fixture, whose fixes
// are all dm-crypt and cloud, is an empty List that still names them.
func TestNothingDroppedInSilence(t *testing.T) {
	for _, name := range fixtureHosts(t) {
		p := fixturePlan(t, name, Options{})
		k, err := Kubernetes(p, KubernetesOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f, err := Files(p)
		if err != nil {
			t.Fatal(err)
		}
		var kube, files []string
		for _, e := range p.Entries {
			for _, s := range e.Steps {
				if s.Change.NodeCommand() == "" {
					kube = append(kube, s.Command)
				}
				if len(e.Files) == 0 {
					files = append(files, s.Command)
				}
			}
			kube, files = append(kube, e.Manual...), append(files, e.Manual...)
			for _, c := range e.Cloud {
				kube, files = append(kube, c.Commands...), append(files, c.Commands...)
			}
		}
		for _, w := range kube {
			if !strings.Contains(string(k), w) {
				t.Errorf("%s: kubernetes output drops %q:\n%s", name, w, k)
			}
		}
		if len(kube) > 0 && !strings.Contains(string(k), "use --format shell") {
			t.Errorf("%s: kubernetes output does not point to --format shell:\n%s", name, k)
		}
		for _, w := range files {
			if !strings.Contains(string(f), w) {
				t.Errorf("%s: files output drops %q:\n%s", name, w, f)
			}
		}
	}
	k, err := Kubernetes(fixturePlan(t, "azure-e16dv5-eah-luks", Options{}), KubernetesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"items: []", "dmcrypt.workqueue on /dev/mapper/data: crypt change", "storage.stacked-encryption on /mnt/data: cloud change (azure)"} {
		if !strings.Contains(string(k), w) {
			t.Errorf("azure kubernetes lacks %q:\n%s", w, k)
		}
	}
}
