// Package prometheustest starts Debian's Prometheus server on loopback for
// a test, scraping the targets the test names, so fleet queries, alert
// rules and dashboard expressions are run by the real query engine.
package prometheustest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// Target is one scrape target with the labels Prometheus attaches to its
// series (as a Kubernetes service discovery relabeling would).
type Target struct {
	Addr   string
	Labels map[string]string
}

// Server is a running Prometheus.
type Server struct {
	URL string
	API v1.API
}

// Start runs prometheus scraping targets every second until the test ends
// and waits until every target has been scraped once.
func Start(t testing.TB, targets []Target) *Server {
	t.Helper()
	return StartRules(t, targets)
}

// StartRules is Start with rule files, evaluated every second.
func StartRules(t testing.TB, targets []Target, ruleFiles ...string) *Server {
	t.Helper()
	return start(t, targets, nil, ruleFiles)
}

// Auth is how Prometheus scrapes a target that serves HTTPS with basic
// auth: the CA that signed its certificate, the name to verify it against
// (tls_config.server_name), and the credentials.
type Auth struct {
	CAFile, ServerName string
	Username, Password string
}

// StartAuth is Start scraping over HTTPS with auth.
func StartAuth(t testing.TB, targets []Target, auth Auth) *Server {
	t.Helper()
	return start(t, targets, &auth, nil)
}

func start(t testing.TB, targets []Target, auth *Auth, ruleFiles []string) *Server {
	t.Helper()
	bin := testenv.RequireTool(t, "prometheus", "prometheus")
	dir := t.TempDir()
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n")
	if len(ruleFiles) > 0 {
		cfg.WriteString("rule_files:\n")
		for _, f := range ruleFiles {
			fmt.Fprintf(&cfg, "  - %q\n", f)
		}
	}
	cfg.WriteString("scrape_configs:\n  - job_name: slowpath\n")
	if auth != nil {
		pw := filepath.Join(dir, "password")
		if err := os.WriteFile(pw, []byte(auth.Password), 0o600); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&cfg, "    scheme: https\n    tls_config:\n      ca_file: %q\n      server_name: %q\n", auth.CAFile, auth.ServerName)
		fmt.Fprintf(&cfg, "    basic_auth:\n      username: %q\n      password_file: %q\n", auth.Username, pw)
	}
	cfg.WriteString("    static_configs:\n")
	for _, tg := range targets {
		fmt.Fprintf(&cfg, "      - targets: [%q]\n", tg.Addr)
		if len(tg.Labels) > 0 {
			cfg.WriteString("        labels:\n")
			for k, v := range tg.Labels {
				fmt.Fprintf(&cfg, "          %s: %q\n", k, v)
			}
		}
	}
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// Prometheus 2.42 does not report the port it bound to 127.0.0.1:0:
	// take a free port from the kernel and hand it over (retried if
	// another process takes it first).
	var s *Server
	for attempt := 0; attempt < 3 && s == nil; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		log, err := os.Create(filepath.Join(dir, "prometheus.log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "--config.file", cfgFile, "--web.listen-address", addr,
			"--storage.tsdb.path", filepath.Join(dir, "data"+strconv.Itoa(attempt)), "--log.level", "warn")
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			cmd.Process.Signal(os.Interrupt)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-exited
			}
			log.Close()
		})
		if waitReady("http://"+addr, exited) {
			client, err := api.NewClient(api.Config{Address: "http://" + addr})
			if err != nil {
				t.Fatal(err)
			}
			s = &Server{URL: "http://" + addr, API: v1.NewAPI(client)}
		}
	}
	if s == nil {
		b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
		t.Fatalf("prometheus did not become ready:\n%s", b)
	}
	s.WaitFor(t, fmt.Sprintf("count(up == 1) == %d", len(targets)), 30*time.Second)
	return s
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitReady(url string, exited <-chan struct{}) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if resp, err := http.Get(url + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// Query runs an instant query.
func (s *Server) Query(t testing.TB, q string) model.Vector {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, _, _, err := s.API.Query(ctx, q, time.Now())
	if err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		t.Fatalf("query %s: %s, not a vector", q, v.Type())
	}
	return vec
}

// WaitFor polls q until it returns a non-empty vector.
func (s *Server) WaitFor(t testing.TB, q string, timeout time.Duration) model.Vector {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		v, _, _, err := s.API.Query(ctx, q, time.Now())
		cancel()
		if vec, ok := v.(model.Vector); err == nil && ok && len(vec) > 0 {
			return vec
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still empty after %v (last error %v)", q, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// RulesOf writes the rule groups of a PrometheusRule manifest (the
// prometheus-operator's kind) as a Prometheus rules file in a temporary
// directory and returns its path. With noFor, every alert's `for` is
// dropped, so a test of seconds sees alerts its expressions select fire
// (promtool's unit tests cover the `for`).
func RulesOf(t testing.TB, manifest string, noFor bool) string {
	t.Helper()
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Spec struct {
			Groups []map[string]any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &pr); err != nil {
		t.Fatalf("%s: %v", manifest, err)
	}
	if noFor {
		for _, g := range pr.Spec.Groups {
			rules, _ := g["rules"].([]any)
			for _, r := range rules {
				if m, ok := r.(map[string]any); ok {
					delete(m, "for")
				}
			}
		}
	}
	out, err := yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
