package fix

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// apiAccepts is the Kubernetes API's own rule for a label KEY=VALUE: the
// oracle of the checks in canary.go.
func apiAccepts(k, v string) bool {
	return len(validation.IsQualifiedName(k)) == 0 && len(validation.IsValidLabelValue(v)) == 0
}

func TestParseCanary(t *testing.T) {
	for _, s := range []string{"slowpath.dev/canary=true", "canary=", "a=b", "node-role.kubernetes.io/canary=yes-1.2_x",
		"=x", "canary", "Slowpath.dev/canary=1", "a/b/c=1", "-a=1", "a=-1", "a=b c", "a=$(reboot)", "a;b=1", "a=" + strings.Repeat("x", 64),
		strings.Repeat("x", 64) + "=1", "x.y/" + strings.Repeat("z", 63) + "=v", "a..b/c=1", "/c=1"} {
		k, v, _ := strings.Cut(s, "=")
		_, err := ParseCanary(s)
		if want := strings.Contains(s, "=") && apiAccepts(k, v); (err == nil) != want {
			t.Errorf("--canary %q: error %v, the API accepts it: %v", s, err, want)
		}
	}
}

// FuzzCanaryLabel: the checks accept exactly what the API accepts, so
// nothing else reaches the YAML or the shell lines.
func FuzzCanaryLabel(f *testing.F) {
	for _, s := range []string{"slowpath.dev/canary", "a", "a.b-c_d", "x/y", "", "-", "a b", "é"} {
		f.Add(s, "true")
	}
	f.Fuzz(func(t *testing.T, k, v string) {
		if strings.Contains(k, "=") {
			return
		}
		_, err := ParseCanary(k + "=" + v)
		if (err == nil) != apiAccepts(k, v) {
			t.Errorf("%q=%q: error %v, API accepts %v", k, v, err, apiAccepts(k, v))
		}
	})
}

func TestCanaryValidate(t *testing.T) {
	for _, tc := range []struct {
		c    Canary
		want string
	}{
		{Canary{Key: "c", Value: "1"}, ""},
		{Canary{Key: "c", Value: "1", Nodes: 3, By: "topology.kubernetes.io/zone"}, ""},
		{Canary{Key: "c", Value: "1", Nodes: 3}, "needs --by"},
		{Canary{Key: "c", Value: "1", By: "zone"}, "needs --canary-nodes"},
		{Canary{Key: "c", Value: "1", Nodes: -1}, "want 0 or more"},
		{Canary{Key: "c", Value: "1", Nodes: 2, By: "c"}, "the canary label itself"},
		{Canary{Key: "c", Value: "1", Nodes: 2, By: "zone x"}, "label name"},
	} {
		err := tc.c.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
}

// TestKubernetesCanary: the DaemonSet decodes strictly with the node
// selector of the canary label, and the label commands at its head run:
// against a fake kubectl (no cluster here) of two zones of five nodes,
// they label two random nodes of each zone, print each, and nothing else.
func TestKubernetesCanary(t *testing.T) {
	testenv.RequireTool(t, "shuf", "coreutils")
	c := &Canary{Key: "slowpath.dev/canary", Value: "backlog", Nodes: 2, By: "topology.kubernetes.io/zone"}
	b, err := Kubernetes(fixturePlan(t, "net-aws-ena", Options{}), KubernetesOptions{Canary: c})
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(b, &ds); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if sel := ds.Spec.Template.Spec.NodeSelector; len(sel) != 1 || sel[c.Key] != c.Value {
		t.Errorf("node selector %v", sel)
	}
	var script []string
	for _, l := range strings.Split(string(b), "\n") {
		if cmd, ok := strings.CutPrefix(l, "#   "); ok {
			script = append(script, cmd)
		}
	}
	if len(script) != 3 {
		t.Fatalf("label commands %q in:\n%s", script, b)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "labelled")
	kubectl := `#!/bin/sh
# get nodes -l KEY -o jsonpath=...: each node's zone; get nodes -l KEY=ZONE -o name: its nodes; label: logged.
case "$1 $2" in
"get nodes")
	case "$4" in
	*=*) z=${4#*=}; for i in 1 2 3 4 5; do echo "node/$z-$i"; done ;;
	*) for z in eu-1a eu-1b; do for i in 1 2 3 4 5; do echo "$z"; done; done ;;
	esac ;;
"label "*) echo "$@" >> "` + log + `" ;;
*) echo "unexpected kubectl $*" >&2; exit 1 ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "kubectl"), []byte(kubectl), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-ec", strings.Join(script, "\n"))
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("label commands: %v\n%s", err, out)
	}
	got, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var zones []string
	for _, l := range strings.Split(strings.TrimSpace(string(got)), "\n") {
		f := strings.Fields(l)
		if len(f) != 4 || f[1] != "--overwrite" || f[3] != "slowpath.dev/canary=backlog" || !strings.Contains(string(out), f[2]) {
			t.Errorf("label call %q (printed: %s)", l, out)
			continue
		}
		zones = append(zones, strings.TrimPrefix(f[2], "node/")[:len("eu-1a")])
	}
	slices.Sort(zones)
	if !slices.Equal(zones, []string{"eu-1a", "eu-1a", "eu-1b", "eu-1b"}) {
		t.Errorf("labelled %q, want two nodes of each zone", got)
	}
}
