package kubernetes_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/slowpath/slowpath/internal/imagetest"
	"github.com/slowpath/slowpath/internal/testenv"
)

// podmanRun turns the DaemonSet's pod into the `podman run` arguments that
// give its container what the kubelet would: the host paths, the network,
// the user, the capabilities, the filesystem and the memory limit, with
// env's values for fieldRef variables. Anything it cannot translate fails
// the test, so the manifest cannot grow a setting this test ignores.
func podmanRun(t *testing.T, pod corev1.PodSpec, env map[string]string, image string) []string {
	t.Helper()
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
		t.Fatalf("%d containers, %d init containers: want the agent alone", len(pod.Containers), len(pod.InitContainers))
	}
	c := pod.Containers[0]
	args := []string{"run", "-d"}
	// hostNetwork: the node's network namespace. Without it the agent
	// would see its veth, and podman's bridge would change the host.
	if !pod.HostNetwork {
		t.Fatal("DaemonSet without hostNetwork: the agent would see the pod's interfaces")
	}
	args = append(args, "--net=host")
	if sc := pod.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			g := int64(0)
			if sc.RunAsGroup != nil {
				g = *sc.RunAsGroup
			}
			args = append(args, fmt.Sprintf("--user=%d:%d", *sc.RunAsUser, g))
		}
		if sc.SeccompProfile != nil && sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Fatalf("seccomp %s: only RuntimeDefault (podman's default profile) is translated", sc.SeccompProfile.Type)
		}
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.Privileged != nil && *sc.Privileged {
			args = append(args, "--privileged")
		}
		if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
			args = append(args, "--security-opt=no-new-privileges")
		}
		if sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
			args = append(args, "--read-only")
		}
		if sc.Capabilities != nil {
			for _, cp := range sc.Capabilities.Drop {
				args = append(args, "--cap-drop="+strings.ToLower(string(cp)))
			}
			for _, cp := range sc.Capabilities.Add {
				args = append(args, "--cap-add="+strings.ToLower(string(cp)))
			}
		}
	}
	if m, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		args = append(args, fmt.Sprintf("--memory=%d", m.Value()))
	}
	vars := map[string]string{}
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil {
			if e.ValueFrom.FieldRef == nil {
				t.Fatalf("env %s: only fieldRef is translated", e.Name)
			}
			var ok bool
			if v, ok = env[e.ValueFrom.FieldRef.FieldPath]; !ok {
				t.Fatalf("env %s: no value for %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		}
		vars[e.Name] = v
		args = append(args, "--env="+e.Name+"="+v)
	}
	hostPaths := map[string]string{}
	for _, v := range pod.Volumes {
		if v.HostPath == nil {
			t.Fatalf("volume %s: only hostPath is translated", v.Name)
		}
		hostPaths[v.Name] = v.HostPath.Path
	}
	for _, m := range c.VolumeMounts {
		opts := []string{"rw"}
		if m.ReadOnly {
			opts[0] = "ro"
		}
		if m.MountPropagation != nil {
			switch *m.MountPropagation {
			case corev1.MountPropagationHostToContainer:
				opts = append(opts, "rslave")
			case corev1.MountPropagationNone:
			default:
				t.Fatalf("mount %s: propagation %s not translated", m.Name, *m.MountPropagation)
			}
		}
		args = append(args, "--volume="+hostPaths[m.Name]+":"+m.MountPath+":"+strings.Join(opts, ","))
	}
	if len(c.Command) > 0 {
		t.Fatal("command set: the image's entrypoint is the binary")
	}
	args = append(args, image)
	// The kubelet expands $(VAR) in args from the container's env.
	expand := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	for _, a := range c.Args {
		args = append(args, expand.ReplaceAllStringFunc(a, func(s string) string {
			if v, ok := vars[s[2:len(s)-1]]; ok {
				return v
			}
			return s
		}))
	}
	return args
}

// TestDaemonSetRunsImage runs the image `make image` builds as the
// DaemonSet's container, translated to podman, on this host's network
// with 127.0.0.1 as the node IP (status.hostIP), and checks that the agent
// answers on the address and port the manifest gives it, runs with the
// privileges the manifest grants (no capability, no new privileges), that
// the scrape passes promtool check metrics, and that what it reports
// through /host/{proc,sys,root} matches `slowpath doctor --format json` run
// on the host: the firing findings, the kernel, the CPU count, the
// receive-path sysctls and the NIC rings.
func TestDaemonSetRunsImage(t *testing.T) {
	promtool := testenv.RequireTool(t, "promtool", "prometheus")
	objs := build(t)
	ds := objs["DaemonSet"].(*appsv1.DaemonSet)

	// The image is one kustomize images: entry (docs/install.md says how
	// to point it at your registry).
	k, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(k), "\n  - name: "); !strings.Contains(string(k), "\nimages:\n  - name: slowpath\n") || n < 1 {
		t.Errorf("kustomization.yaml: want one images: entry named slowpath")
	}

	im := imagetest.Build(t)
	out, err := im.Podman("run", "--rm", im.Ref, "version", "--format", "json")
	if err != nil || !bytes.Contains(out, []byte(`"version": "`+imagetest.Version+`"`)) {
		t.Fatalf("image's version: %v\n%s", err, out)
	}

	args := podmanRun(t, ds.Spec.Template.Spec, map[string]string{"status.hostIP": "127.0.0.1"}, im.Ref)
	args = append([]string{args[0], args[1], "--name=slowpath-agent-test"}, args[2:]...)
	t.Logf("podman %s", strings.Join(args, " "))
	if out, err := im.Podman(args...); err != nil {
		t.Fatalf("podman run: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := im.Podman("rm", "-f", "-t", "5", "slowpath-agent-test"); err != nil {
			t.Errorf("podman rm: %v\n%s", err, out)
		}
	})
	port := ds.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort
	base := "http://127.0.0.1:" + strconv.Itoa(int(port))
	var body []byte
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/metrics")
		if err == nil {
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			logs, _ := im.Podman("logs", "slowpath-agent-test")
			t.Fatalf("agent did not answer %s/metrics: %v\n%s", base, err, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The readiness probe's path.
	if resp, err := http.Get(base + "/"); err != nil || resp.StatusCode != 200 {
		t.Errorf("readiness path /: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// The process has what the manifest grants and nothing more.
	pid, err := im.Podman("inspect", "-f", "{{.State.Pid}}", "slowpath-agent-test")
	if err != nil {
		t.Fatalf("podman inspect: %v\n%s", err, pid)
	}
	status, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1", "Uid:\t0\t"} {
		if !bytes.Contains(status, []byte(want)) {
			t.Errorf("agent's /proc status lacks %q:\n%s", want, status)
		}
	}

	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}

	// The same host, read by doctor outside the container.
	out, err = exec.Command(im.Binary, "doctor", "--format", "json").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("doctor: %v\n%s", err, out)
		}
	}
	var doc struct {
		Kernel   string
		Findings []struct{ ID, Subject string }
		Network  struct {
			CPUs       int                `json:"cpus"`
			Sysctls    map[string]float64 `json:"sysctls"`
			Interfaces []struct {
				Name string
				Ring *struct{ RX, TX int }
			}
		}
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("doctor --format json: %v", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse scrape: %v", err)
	}
	series := func(name string, label ...string) map[string]float64 {
		m := map[string]float64{}
		if fams[name] == nil {
			t.Errorf("scrape has no %s", name)
			return m
		}
		for _, s := range fams[name].Metric {
			var key []string
			for _, l := range label {
				for _, lp := range s.Label {
					if lp.GetName() == l {
						key = append(key, lp.GetValue())
					}
				}
			}
			m[strings.Join(key, " ")] = s.GetGauge().GetValue()
		}
		return m
	}

	var agentFiring, doctorFiring []string
	for k, v := range series("slowpath_finding", "id", "subject") {
		if v == 1 {
			agentFiring = append(agentFiring, k)
		}
	}
	for _, f := range doc.Findings {
		doctorFiring = append(doctorFiring, f.ID+" "+f.Subject)
	}
	sort.Strings(agentFiring)
	sort.Strings(doctorFiring)
	if strings.Join(agentFiring, "\n") != strings.Join(doctorFiring, "\n") {
		t.Errorf("firing findings differ:\nagent in the image: %q\ndoctor on the host: %q", agentFiring, doctorFiring)
	}
	t.Logf("%d findings fire in both", len(agentFiring))
	if _, ok := series("slowpath_node_info", "kernel")[doc.Kernel]; !ok {
		t.Errorf("node_info: kernel %q not in %v", doc.Kernel, series("slowpath_node_info", "kernel"))
	}
	if got := series("slowpath_cpus")[""]; int(got) != doc.Network.CPUs {
		t.Errorf("slowpath_cpus %v, doctor %d", got, doc.Network.CPUs)
	}
	sysctls := series("slowpath_net_sysctl", "name")
	if len(sysctls) == 0 || len(sysctls) != len(doc.Network.Sysctls) {
		t.Errorf("sysctls: agent %v, doctor %v", sysctls, doc.Network.Sysctls)
	}
	for name, v := range doc.Network.Sysctls {
		if sysctls[name] != v {
			t.Errorf("%s: agent %v, doctor %v", name, sysctls[name], v)
		}
	}
	rings := series("slowpath_net_ring_entries", "interface", "queue")
	nRings := 0
	for _, ifc := range doc.Network.Interfaces {
		if ifc.Ring == nil {
			continue
		}
		nRings++
		if rings[ifc.Name+" rx"] != float64(ifc.Ring.RX) || rings[ifc.Name+" tx"] != float64(ifc.Ring.TX) {
			t.Errorf("%s ring: agent rx %v tx %v, doctor %+v", ifc.Name, rings[ifc.Name+" rx"], rings[ifc.Name+" tx"], *ifc.Ring)
		}
	}
	if 2*nRings != len(rings) {
		t.Errorf("agent reports rings %v, doctor %d interfaces with rings", rings, nRings)
	}
	// Every collector ran inside the image as it does on the host.
	for c, ok := range series("slowpath_scrape_collector_success", "collector") {
		if ok != 1 {
			t.Errorf("collector %s failed in the image", c)
		}
	}
}
