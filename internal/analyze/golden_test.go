package analyze

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/golden"
	"github.com/slowpath/slowpath/internal/report"
	"github.com/slowpath/slowpath/internal/snapshot"
)

const (
	hostsDir  = "../../testdata/hosts"
	goldenDir = "../../testdata/golden"
)

// TestGoldenReports renders every fixture host in every format and compares
// with testdata/golden/<host>.<ext>. A fixture is a hand-written or field
// snapshot; dropping one in testdata/hosts makes it a regression test.
func TestGoldenReports(t *testing.T) {
	hosts, err := filepath.Glob(filepath.Join(hostsDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) == 0 {
		t.Skip("no fixture hosts yet")
	}
	for _, h := range hosts {
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
			r, err := Run(s, cfg)
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
