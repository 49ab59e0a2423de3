package analyze_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/report"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/golden"
)

const (
	hostsDir  = "../../testdata/hosts"
	goldenDir = "../../testdata/golden"
)

// TestGoldenReports renders every fixture host in every format and compares
// with testdata/golden/<host>.<ext>. A fixture is a hand-written or field
// snapshot; dropping one in testdata/hosts makes it a regression test.
func TestGoldenReports(t *testing.T) {
	for _, h := range fixtureHosts(t, hostsDir) {
		name := strings.TrimSuffix(filepath.Base(h), ".json")
		t.Run(name, func(t *testing.T) {
			s, err := snapshot.Load(h)
			if err != nil {
				t.Fatal(err)
			}
			if s.Manifest.Fixture == "" && !strings.HasPrefix(name, "field-") {
				t.Errorf("%s: manifest.fixture must say where the fixture's facts come from", h)
			}
			cfg := loadFixtureConfig(t, name)
			r, err := analyze.Run(s, cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, format := range []string{"text", "json", "markdown"} {
				var buf bytes.Buffer
				if err := report.Write(&buf, r, format, report.Options{}); err != nil {
					t.Fatal(err)
				}
				ext := map[string]string{"text": "txt", "json": "json", "markdown": "md"}[format]
				golden.Compare(t, filepath.Join(goldenDir, name+"."+ext), buf.Bytes())
			}
		})
	}
}

// loadFixtureConfig reads testdata/hosts/<name>.config (a check.Config in JSON) when present.
func loadFixtureConfig(t *testing.T, name string) check.Config {
	t.Helper()
	var cfg check.Config
	b, err := os.ReadFile(filepath.Join(hostsDir, name+".config"))
	if os.IsNotExist(err) {
		return cfg
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("config for %s: %v", name, err)
	}
	return cfg
}

// fixtureHosts lists the fixture snapshots in dir. None is a broken
// checkout or a wrong path, never a reason to pass: it fails, strict or not.
func fixtureHosts(t testing.TB, dir string) []string {
	t.Helper()
	hosts, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) == 0 {
		t.Fatalf("no fixture hosts in %s: the golden reports would test nothing", dir)
	}
	return hosts
}

// recordingTB records how a helper ended a test instead of ending it.
type recordingTB struct {
	testing.TB
	failed, skipped bool
}

func (r *recordingTB) Helper()               {}
func (r *recordingTB) Fatal(...any)          { r.failed = true }
func (r *recordingTB) Fatalf(string, ...any) { r.failed = true }
func (r *recordingTB) Skip(...any)           { r.skipped = true }
func (r *recordingTB) Skipf(string, ...any)  { r.skipped = true }
func (r *recordingTB) SkipNow()              { r.skipped = true }
func (r *recordingTB) Errorf(string, ...any) { r.failed = true }
func (r *recordingTB) Logf(string, ...any)   {}

// TestGoldenWithoutFixturesFails: an empty (or wrong) fixture directory
// fails the golden test under SLOWPATH_STRICT=1 as without it; it used to
// skip, green.
func TestGoldenWithoutFixturesFails(t *testing.T) {
	t.Setenv("SLOWPATH_STRICT", "1")
	r := &recordingTB{TB: t}
	if hosts := fixtureHosts(r, t.TempDir()); len(hosts) != 0 || !r.failed || r.skipped {
		t.Errorf("no fixtures: failed=%v skipped=%v hosts=%v, want a failure", r.failed, r.skipped, hosts)
	}
	r = &recordingTB{TB: t}
	if hosts := fixtureHosts(r, hostsDir); len(hosts) == 0 || r.failed || r.skipped {
		t.Errorf("the real fixtures: failed=%v skipped=%v hosts=%d", r.failed, r.skipped, len(hosts))
	}
}
