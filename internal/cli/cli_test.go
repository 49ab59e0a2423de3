package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &clienv.Env{Stdout: &out, Stderr: &errb, FS: hostfs.Default(), Version: "test"}
	code = Run(env, args)
	return code, out.String(), errb.String()
}

func writeSnapshot(t *testing.T, s *snapshot.Snapshot) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.json")
	if err := snapshot.Save(p, s); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestUsageErrorsExit2(t *testing.T) {
	empty := writeSnapshot(t, &snapshot.Snapshot{Manifest: snapshot.Manifest{FormatVersion: snapshot.FormatVersion}})
	typo := filepath.Join(t.TempDir(), "typo.json")
	if err := os.WriteFile(typo, []byte(`{"required_stack": ["/data"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"doctor", "--from", empty, "--format", "yaml"}, `unknown --format "yaml"`},
		{[]string{"doctor", "--from", empty, "--fail-on", "loud"}, `unknown severity "loud"`},
		{[]string{"doctor", "--from", "/nonexistent/s.json"}, "no such file"},
		{[]string{"doctor", "--from", empty, "--config", "/nonexistent/c.json"}, "read config"},
		{[]string{"doctor", "--from", empty, "--config", typo}, `unknown field "required_stack"`},
		{[]string{"collect"}, `required flag(s) "output" not set`},
		{[]string{"capture"}, `required flag(s) "output" not set`},
		{[]string{"capture", "-o", "cap", "--pid", "1", "--cgroup", "/sys/fs/cgroup"}, "none of the others can be"},
		{[]string{"doctor", "--cloud", "bogus"}, `unknown --cloud "bogus"`},
		{[]string{"collect", "-o", "-", "--cloud", "azur"}, `unknown --cloud "azur"`},
		{[]string{"doctor", "--cloud", "aws", "--metadata-endpoint", "ftp://127.0.0.1:1"}, `--metadata-endpoint "ftp://127.0.0.1:1"`},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
	}
	for _, tt := range tests {
		code, _, stderr := run(t, tt.args...)
		if code != clienv.ExitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
}

func TestDoctorFromEmptySnapshot(t *testing.T) {
	p := writeSnapshot(t, &snapshot.Snapshot{Manifest: snapshot.Manifest{FormatVersion: snapshot.FormatVersion}})
	code, out, stderr := run(t, "doctor", "--from", p, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		Findings []any `json:"findings"`
		Storage  []any `json:"storage"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("doctor JSON: %v\n%s", err, out)
	}
	if r.Findings == nil || r.Storage == nil {
		t.Errorf("findings and storage must be present as lists even when empty: %s", out)
	}
}

func TestCollectThenDoctorFromMatchesLive(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the live host")
	}
	dir := t.TempDir()
	archive := filepath.Join(dir, "host.tar.gz")
	// --cloud none: a test never asks a real metadata service, even on a cloud VM.
	if code, _, stderr := run(t, "collect", "-o", archive, "--net-interval", "0", "--cloud", "none"); code != 0 {
		t.Fatalf("collect exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(archive); err != nil {
		t.Fatal(err)
	}
	_, live, _ := run(t, "doctor", "--format", "json", "--fail-on", "none", "--net-interval", "0", "--cloud", "none")
	_, replay, _ := run(t, "doctor", "--from", archive, "--format", "json", "--fail-on", "none")
	// Storage paths and finding ids must match; network counters move
	// between the two collections, so only the storage side is compared whole.
	var a, b struct {
		Storage  json.RawMessage `json:"storage"`
		Findings []struct {
			ID      string `json:"id"`
			Subject string `json:"subject"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(live), &a); err != nil {
		t.Fatalf("live: %v", err)
	}
	if err := json.Unmarshal([]byte(replay), &b); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if string(a.Storage) != string(b.Storage) {
		t.Errorf("storage differs:\nlive   %s\nreplay %s", a.Storage, b.Storage)
	}
	if len(a.Findings) != len(b.Findings) {
		t.Errorf("findings differ: live %v, replay %v", a.Findings, b.Findings)
	}
	// Storage and host findings do not depend on moving counters: the
	// same ids on the same subjects, in the same order.
	steady := func(fs []struct {
		ID      string `json:"id"`
		Subject string `json:"subject"`
	}) []string {
		var out []string
		for _, f := range fs {
			if !strings.HasPrefix(f.ID, "net.") {
				out = append(out, f.ID+" "+f.Subject)
			}
		}
		return out
	}
	if d := cmp.Diff(steady(a.Findings), steady(b.Findings)); d != "" {
		t.Errorf("storage findings differ (-live +replay):\n%s", d)
	}
}

// TestDoctorExitStatus: 0 when no finding reaches --fail-on (default
// warning), 1 when one does; on fixtures whose worst finding is known.
func TestDoctorExitStatus(t *testing.T) {
	const hosts = "../../testdata/hosts/"
	tests := []struct {
		host   string
		failOn []string // nil: the default
		want   int
	}{
		{"azure-e16dv5-eah", nil, clienv.ExitFindings}, // storage.stacked-encryption, warning
		{"azure-e16dv5-eah", []string{"--fail-on", "critical"}, clienv.ExitOK},
		{"azure-e16dv5-eah", []string{"--fail-on", "none"}, clienv.ExitOK},
		{"azure-e16dv5-noeah", nil, clienv.ExitOK},
		{"plain-host", nil, clienv.ExitOK},
		{"plain-host", []string{"--fail-on", "info"}, clienv.ExitOK},
		{"net-virtio-one-sample", []string{"--fail-on", "info"}, clienv.ExitFindings},
	}
	for _, tt := range tests {
		args := append([]string{"doctor", "--from", hosts + tt.host + ".json"}, tt.failOn...)
		if code, _, stderr := run(t, args...); code != tt.want {
			t.Errorf("%v: exit %d, want %d (stderr %q)", args, code, tt.want, stderr)
		}
	}
}

// TestDoctorJSONContract checks the minimum JSON contract of issues 2 and 4
// on every fixture: each finding has id, severity (info, warning or
// critical), subject, summary, evidence and remediation; each storage path
// has mountpoint or device, an integer encryption_layers and layers with
// kind, name and encrypted.
func TestDoctorJSONContract(t *testing.T) {
	hosts, err := filepath.Glob("../../testdata/hosts/*.json")
	if err != nil || len(hosts) == 0 {
		t.Fatalf("no fixture hosts: %v", err)
	}
	for _, h := range hosts {
		_, out, stderr := run(t, "doctor", "--from", h, "--format", "json", "--fail-on", "none")
		var r struct {
			Findings []map[string]json.RawMessage `json:"findings"`
			Storage  []map[string]json.RawMessage `json:"storage"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%s: %v (stderr %q)", h, err, stderr)
		}
		name := filepath.Base(h)
		for _, f := range r.Findings {
			for _, k := range []string{"id", "severity", "subject", "summary", "evidence", "remediation"} {
				if _, ok := f[k]; !ok {
					t.Errorf("%s: finding %s lacks %q", name, f["id"], k)
				}
			}
			var sev string
			_ = json.Unmarshal(f["severity"], &sev)
			if sev != "info" && sev != "warning" && sev != "critical" {
				t.Errorf("%s: finding %s severity %q", name, f["id"], sev)
			}
			var ev []any
			if err := json.Unmarshal(f["evidence"], &ev); err != nil || ev == nil {
				t.Errorf("%s: finding %s evidence is not a list: %s", name, f["id"], f["evidence"])
			}
		}
		for _, p := range r.Storage {
			_, mp := p["mountpoint"]
			_, dev := p["device"]
			var n int
			if !mp && !dev || json.Unmarshal(p["encryption_layers"], &n) != nil {
				t.Errorf("%s: storage path without mountpoint/device or integer encryption_layers: %v", name, p)
			}
			var layers []map[string]json.RawMessage
			if err := json.Unmarshal(p["layers"], &layers); err != nil || len(layers) == 0 {
				t.Errorf("%s: storage path without layers: %v", name, p)
			}
			for _, l := range layers {
				var enc bool
				if _, ok := l["kind"]; !ok || l["name"] == nil || json.Unmarshal(l["encrypted"], &enc) != nil {
					t.Errorf("%s: layer lacks kind, name or boolean encrypted: %v", name, l)
				}
			}
		}
	}
}

func TestDoctorHTML(t *testing.T) {
	code, out, errOut := run(t, "doctor", "--from", "../../testdata/hosts/azure-e16dv5-eah-luks.json", "--format", "html")
	if code != 1 || errOut != "" {
		t.Fatalf("exit %d (want 1: findings), stderr %q", code, errOut)
	}
	if !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(out, "storage.stacked-encryption") || !strings.Contains(out, "echarts") {
		t.Errorf("not the HTML report: %.200s", out)
	}
}
