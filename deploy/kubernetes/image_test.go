package kubernetes_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/slowpath/slowpath/internal/testing/imagetest"
	"github.com/slowpath/slowpath/internal/testing/prometheustest"
	"github.com/slowpath/slowpath/internal/testing/testenv"
	"github.com/slowpath/slowpath/internal/trialsecret"
)

// podmanRun turns the DaemonSet's pod into the `podman run` arguments that
// give its container what the kubelet would: the host paths, the network,
// the user, the capabilities, the filesystem and the memory limit, with
// env's values for fieldRef variables. Anything it cannot translate fails
// the test, so the manifest cannot grow a setting this test ignores.
func podmanRun(t *testing.T, pod corev1.PodSpec, env map[string]string, secrets map[string]*corev1.Secret, image string) []string {
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
	// hostPath volumes are the host's paths; projected Secrets are written
	// into a directory of the test's, as the kubelet writes them.
	hostPaths := map[string]string{}
	for _, v := range pod.Volumes {
		switch {
		case v.HostPath != nil:
			hostPaths[v.Name] = v.HostPath.Path
		case v.Projected != nil:
			dir := t.TempDir()
			for _, src := range v.Projected.Sources {
				if src.Secret == nil {
					t.Fatalf("volume %s: only Secrets are translated among projected sources", v.Name)
				}
				sec := secrets[src.Secret.Name]
				if sec == nil {
					t.Fatalf("volume %s: no Secret %s in the build", v.Name, src.Secret.Name)
				}
				for _, it := range src.Secret.Items {
					data, ok := sec.Data[it.Key]
					if !ok {
						t.Fatalf("volume %s: Secret %s has no key %s", v.Name, sec.Name, it.Key)
					}
					if err := os.WriteFile(filepath.Join(dir, it.Path), data, 0o400); err != nil {
						t.Fatal(err)
					}
				}
			}
			hostPaths[v.Name] = dir
		default:
			t.Fatalf("volume %s: only hostPath and projected Secrets are translated", v.Name)
		}
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

// trial builds deploy/kubernetes-trial, as `kubectl apply -k` would after
// `go run ./deploy/kubernetes/gensecrets`, in a copy of deploy/ (the
// generated files never land in the source tree).
func trial(t *testing.T) (*appsv1.DaemonSet, *monitoringv1.ServiceMonitor, map[string]*corev1.Secret) {
	t.Helper()
	deploy := t.TempDir()
	dir := filepath.Join(deploy, "kubernetes")
	if err := os.CopyFS(deploy, os.DirFS("..")); err != nil {
		t.Fatal(err)
	}
	if err := trialsecret.WriteTLS(filepath.Join(dir, "components/selfsigned-tls")); err != nil {
		t.Fatal(err)
	}
	if err := trialsecret.WriteAuth(filepath.Join(dir, "components/basic-auth")); err != nil {
		t.Fatal(err)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(deploy, "kubernetes-trial"))
	if err != nil {
		t.Fatalf("kustomize build trial: %v", err)
	}
	var ds *appsv1.DaemonSet
	var sm *monitoringv1.ServiceMonitor
	secrets := map[string]*corev1.Secret{}
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		switch o := decodeStrict(t, r.GetKind(), y).(type) {
		case *appsv1.DaemonSet:
			ds = o
		case *monitoringv1.ServiceMonitor:
			sm = o
		case *corev1.Secret:
			if o.Namespace != "slowpath" {
				t.Errorf("Secret %s in namespace %q", o.Name, o.Namespace)
			}
			secrets[o.Name] = o
		}
	}
	if ds == nil || sm == nil || len(secrets) != 3 {
		t.Fatalf("trial build: DaemonSet %v, ServiceMonitor %v, %d Secrets (want web, tls, scrape)", ds != nil, sm != nil, len(secrets))
	}
	return ds, sm, secrets
}

// TestDaemonSetRunsImage runs the image `make image` builds as the trial
// DaemonSet's container (the base with the self-signed pair and basic
// auth), translated to podman, on this host's network with 127.0.0.1 as the
// node IP (status.hostIP). It checks that the agent answers on the address
// and port the manifest gives it, only over TLS and only with the
// password, with the privileges the manifest grants (no capability, no new
// privileges); that Debian's Prometheus scrapes it with the
// ServiceMonitor's settings; that the scrape passes promtool check
// metrics; and that what it reports through /host/{proc,sys,root} matches
// `slowpath doctor --format json` run on the host: the firing findings,
// the kernel, the CPU count, the receive-path sysctls and the NIC rings.
func TestDaemonSetRunsImage(t *testing.T) {
	promtool := testenv.RequireTool(t, "promtool", "prometheus")
	ds, sm, secrets := trial(t)

	// The image is one kustomize images: entry (docs/install.md says how
	// to point it at your registry).
	k, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`\nimages:\n  - name: slowpath\n    newName: \S+\n    newTag: \S+\n*$`).Match(k) {
		t.Errorf("kustomization.yaml: want one images: entry, slowpath, at its end")
	}

	im := imagetest.Build(t)
	// The entrypoint is the stamped binary, and the image's labels say
	// which.
	versionStart := time.Now()
	out, err := im.Podman("run", "--rm", im.Ref, "version", "--format", "json")
	if err != nil || !bytes.Contains(out, []byte(`"version": "`+imagetest.Version+`"`)) {
		t.Errorf("image's version: %v\n%s", err, out)
	}
	label, err := im.Podman("image", "inspect", "-f", `{{index .Labels "org.opencontainers.image.version"}}`, im.Ref)
	if err != nil || strings.TrimSpace(string(label)) != imagetest.Version {
		t.Errorf("image's version label: %q %v", label, err)
	}
	t.Logf("podman run version: %.1f s", time.Since(versionStart).Seconds())
	args := podmanRun(t, ds.Spec.Template.Spec, map[string]string{"status.hostIP": "127.0.0.1"}, secrets, im.Ref)
	args = append([]string{args[0], args[1], "--name=slowpath-agent-test"}, args[2:]...)
	t.Logf("podman %s", strings.Join(args, " "))
	if out, err := im.Podman(args...); err != nil {
		t.Fatalf("podman run: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		defer func(start time.Time) { t.Logf("podman rm: %.1f s", time.Since(start).Seconds()) }(time.Now())
		if out, err := im.Podman("rm", "-f", "-t", "5", "slowpath-agent-test"); err != nil {
			t.Errorf("podman rm: %v\n%s", err, out)
		}
	})

	// The client Prometheus is: the ServiceMonitor's CA, server name and
	// credentials.
	ep := sm.Spec.Endpoints[0]
	if ep.Scheme == nil || *ep.Scheme != "https" || ep.TLSConfig == nil || ep.TLSConfig.CA.Secret == nil || ep.BasicAuth == nil || ep.TLSConfig.ServerName == nil {
		t.Fatalf("ServiceMonitor endpoint does not scrape HTTPS with basic auth: %+v", ep)
	}
	secretKey := func(name, key string) []byte {
		s := secrets[name]
		if s == nil || s.Data[key] == nil {
			t.Fatalf("ServiceMonitor names %s/%s, not in the build", name, key)
		}
		return s.Data[key]
	}
	caPEM := secretKey(ep.TLSConfig.CA.Secret.Name, ep.TLSConfig.CA.Secret.Key)
	user := string(secretKey(ep.BasicAuth.Username.Name, ep.BasicAuth.Username.Key))
	pass := string(secretKey(ep.BasicAuth.Password.Name, ep.BasicAuth.Password.Key))
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.crt holds no certificate")
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: *ep.TLSConfig.ServerName}}}
	get := func(url, user, pass string) (int, []byte, error) {
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}

	port := ds.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort
	addr := "127.0.0.1:" + strconv.Itoa(int(port))
	var body []byte
	started := time.Now()
	deadline := started.Add(30 * time.Second)
	for {
		code, b, err := get("https://"+addr+"/metrics", user, pass)
		if err == nil && code == 200 {
			body = b
			break
		}
		if time.Now().After(deadline) {
			logs, _ := im.Podman("logs", "slowpath-agent-test")
			t.Fatalf("agent did not answer https://%s/metrics: %d %v\n%s", addr, code, err, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("agent answered after %.1f s", time.Since(started).Seconds())
	// Refused: no password, a wrong one, plain HTTP.
	for _, c := range []struct{ what, url, user, pass string }{
		{"no credentials", "https://" + addr + "/metrics", "", ""},
		{"a wrong password", "https://" + addr + "/metrics", user, pass + "x"},
		{"no credentials on /", "https://" + addr + "/", "", ""},
	} {
		if code, _, err := get(c.url, c.user, c.pass); err != nil || code != http.StatusUnauthorized {
			t.Errorf("scrape with %s: %d %v, want 401", c.what, code, err)
		}
	}
	if code, b, err := get("http://"+addr+"/metrics", user, pass); err == nil && (code == 200 || bytes.Contains(b, []byte("slowpath_"))) {
		t.Errorf("plain HTTP scrape answered %d with metrics", code)
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

	// Debian's Prometheus scrapes it as the ServiceMonitor says.
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	prom := prometheustest.StartAuth(t, []prometheustest.Target{{Addr: addr}}, prometheustest.Auth{
		CAFile: caFile, ServerName: *ep.TLSConfig.ServerName, Username: user, Password: pass})
	if v := prom.WaitFor(t, "slowpath_node_info", 10*time.Second); len(v) != 1 {
		t.Errorf("slowpath_node_info through Prometheus: %v", v)
	}

	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}

	t.Logf("Prometheus scraped it after %.1f s", time.Since(started).Seconds())
	// The same host, read by doctor outside the container.
	docStart := time.Now()
	out, err = exec.Command(im.Binary, "doctor", "--format", "json").Output()
	t.Logf("doctor on the host: %.1f s", time.Since(docStart).Seconds())
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

	// The checks that judge counters over a window (the agent's between
	// two scrapes, doctor's its own second) can differ on a host with
	// traffic; every other check judges the host's state and must agree.
	rateCheck := map[string]bool{"net.backlog-drops": true, "net.ring-undersized": true,
		"net.socket-rcvbuf": true, "net.time-squeeze": true, "dmcrypt.tax": true}
	var agentFiring, doctorFiring []string
	for k, v := range series("slowpath_finding", "id", "subject") {
		if v == 1 && !rateCheck[strings.Fields(k)[0]] {
			agentFiring = append(agentFiring, k)
		}
	}
	for _, f := range doc.Findings {
		if !rateCheck[f.ID] {
			doctorFiring = append(doctorFiring, f.ID+" "+f.Subject)
		}
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
