package agentcmd_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/slowpath/slowpath/internal/cli/agentcmd"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testing/agenttest"
	"github.com/slowpath/slowpath/internal/testing/golden"
	"github.com/slowpath/slowpath/internal/testing/lockedbuf"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

const hostsDir = "../../../testdata/hosts"

func get(t *testing.T, c *http.Client, url, user, pass string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

var durationLine = regexp.MustCompile(`(?m)^(slowpath_scrape_collector_duration_seconds\{[^}]*\}) \S+$`)

// slowpathOnly keeps the slowpath_ families of a scrape (the Go and
// process collectors' values change from run to run) with durations set to 0.
func slowpathOnly(body string) []byte {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		name := l
		if strings.HasPrefix(l, "# HELP ") || strings.HasPrefix(l, "# TYPE ") {
			name = l[len("# HELP "):]
		}
		if strings.HasPrefix(name, "slowpath_") {
			out = append(out, l)
		}
	}
	return durationLine.ReplaceAll([]byte(strings.Join(out, "\n")+"\n"), []byte("$1 0"))
}

// TestLiveScrape serves a fixture host over HTTP, diffs the scrape with a
// golden file and lints the whole exposition with promtool check metrics.
func TestLiveScrape(t *testing.T) {
	promtool := testenv.RequireTool(t, "promtool", "prometheus")
	addr := agenttest.Start(t, "--from", filepath.Join(hostsDir, "azure-e16dv5-eah.json"))
	code, body := get(t, http.DefaultClient, "http://"+addr+"/metrics", "", "")
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	golden.Compare(t, "testdata/azure-e16dv5-eah.prom", slowpathOnly(body))
	if !strings.Contains(body, "go_goroutines") || !strings.Contains(body, "process_resident_memory_bytes") {
		t.Error("Go and process collectors missing")
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestLiveHost scrapes this host: the collectors run and report success.
func TestLiveHost(t *testing.T) {
	addr := agenttest.Start(t, "--cloud", "none")
	for i := 0; i < 2; i++ {
		code, body := get(t, http.DefaultClient, "http://"+addr+"/metrics", "", "")
		if code != 200 {
			t.Fatalf("status %d", code)
		}
		for _, c := range []string{"host", "storage", "net", "net.counters", "analyze"} {
			want := `slowpath_scrape_collector_success{collector="` + c + `"} 1`
			if !strings.Contains(body, want) {
				t.Errorf("scrape %d: missing %s", i, want)
			}
		}
		if !strings.Contains(body, `slowpath_net_drops_total{counter="softnet_dropped",layer="backlog",subject="cpu0"}`) {
			t.Errorf("scrape %d: no softnet counter", i)
		}
	}
}

// selfSigned writes a certificate and key for 127.0.0.1 into dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "slowpath-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestWebConfig: TLS and basic auth through exporter-toolkit's web config
// file. Wrong password 401, right 200, plain HTTP refused.
func TestWebConfig(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "web.yml")
	yml := "tls_server_config:\n  cert_file: " + certFile + "\n  key_file: " + keyFile +
		"\nbasic_auth_users:\n  prometheus: " + string(hash) + "\n"
	if err := os.WriteFile(cfg, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := agenttest.Start(t, "--from", filepath.Join(hostsDir, "plain-host.json"), "--web.config.file", cfg)
	tlsClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := "https://" + addr + "/metrics"

	if code, _ := get(t, tlsClient, url, "prometheus", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("wrong password: status %d, want 401", code)
	}
	if code, _ := get(t, tlsClient, url, "", ""); code != http.StatusUnauthorized {
		t.Errorf("no credentials: status %d, want 401", code)
	}
	code, body := get(t, tlsClient, url, "prometheus", "s3cret")
	if code != http.StatusOK || !strings.Contains(body, "slowpath_finding{") {
		t.Errorf("right password: status %d, want 200 with metrics", code)
	}
	// Go's TLS server answers a plain HTTP request with 400 and a note,
	// never with metrics.
	code, body = get(t, http.DefaultClient, "http://"+addr+"/metrics", "prometheus", "s3cret")
	if code == http.StatusOK || strings.Contains(body, "slowpath_") {
		t.Errorf("plain HTTP with TLS configured: status %d, body %q", code, body)
	}
}

// TestBadWebConfig: a broken web config is a usage error at start, not a
// failure on the first scrape.
func TestBadWebConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(cfg, []byte("tls_server_config:\n  cert_file: /nonexistent\n  key_file: /nonexistent\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := &clienv.Env{Stdout: io.Discard, Stderr: io.Discard}
	cmd := agentcmd.NewCmdAgent(env, nil)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs([]string{"--web.listen-address", "127.0.0.1:0", "--web.config.file", cfg})
	err := cmd.Execute()
	var ee *clienv.ExitError
	if !errors.As(err, &ee) || ee.Code != clienv.ExitUsage || !strings.Contains(err.Error(), "web config") {
		t.Errorf("want a usage error naming the web config, got %v", err)
	}
}

// TestLiveSourcesFlag: the agent takes --live-sources as doctor and collect
// do (the DaemonSet passes on), and refuses a mode it does not know.
func TestLiveSourcesFlag(t *testing.T) {
	env := &clienv.Env{Stdout: io.Discard, Stderr: io.Discard}
	var got *agentcmd.Options
	cmd := agentcmd.NewCmdAgent(env, func(_ context.Context, o *agentcmd.Options) error { got = o; return nil })
	cmd.SetArgs([]string{"--live-sources", "on"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.LiveSources != hostfs.LiveOn {
		t.Fatalf("--live-sources on: got %+v", got)
	}
	cmd = agentcmd.NewCmdAgent(env, func(context.Context, *agentcmd.Options) error { return nil })
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs([]string{"--live-sources", "sometimes"})
	if err := cmd.Execute(); err == nil {
		t.Error("--live-sources sometimes was accepted")
	}
}

// TestCipherFlags: the cipher collector is on by default, can be turned
// off or given a figure; a figure that is not a positive number is a
// usage error naming the flag.
func TestCipherFlags(t *testing.T) {
	env := &clienv.Env{Stdout: io.Discard, Stderr: io.Discard}
	for _, tc := range []struct {
		args   []string
		cipher bool
		given  float64
	}{
		{nil, true, 0},
		{[]string{"--collector.cipher=false"}, false, 0},
		{[]string{"--collector.cipher.bytes-per-second", "2.5e9"}, true, 2.5e9},
	} {
		var got *agentcmd.Options
		cmd := agentcmd.NewCmdAgent(env, func(_ context.Context, o *agentcmd.Options) error { got = o; return nil })
		cmd.SetArgs(tc.args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got.Cipher != tc.cipher || got.CipherBytesPerSec != tc.given {
			t.Errorf("%v: cipher %v, figure %v; want %v, %v", tc.args, got.Cipher, got.CipherBytesPerSec, tc.cipher, tc.given)
		}
	}
	for _, bad := range []string{"-1", "NaN", "+Inf"} {
		cmd := agentcmd.NewCmdAgent(env, func(context.Context, *agentcmd.Options) error { return nil })
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		cmd.SetArgs([]string{"--collector.cipher.bytes-per-second", bad})
		err := cmd.Execute()
		var ee *clienv.ExitError
		if !errors.As(err, &ee) || ee.Code != clienv.ExitUsage || !strings.Contains(err.Error(), "--collector.cipher.bytes-per-second") {
			t.Errorf("%s: want a usage error naming the flag, got %v", bad, err)
		}
	}
}

// TestStartLog: the agent says at start what runs, from what, on which
// address and whether TLS is on, as node_exporter does.
func TestStartLog(t *testing.T) {
	stderr := &lockedbuf.Buffer{}
	env := &clienv.Env{Stdout: io.Discard, Stderr: stderr, FS: hostfs.Default(), Version: "test"}
	cmd := agentcmd.NewCmdAgent(env, nil)
	cmd.SetArgs([]string{"--from", "../../../testdata/hosts/plain-host.json", "--web.listen-address", "127.0.0.1:0"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(stderr)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), "TLS is disabled") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`msg="Starting slowpath agent" version=test source="snapshot ../../../testdata/hosts/plain-host.json" address=127.0.0.1:`,
		`msg="Listening on" address=127.0.0.1:`, `msg="TLS is disabled."`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("start log lacks %s:\n%s", want, stderr.String())
		}
	}
}
