package testenv

import (
	_ "embed"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tunedVersion is the Debian tuned package scripts/tuned-loader.sh unpacks.
const tunedVersion = "2.20.0-1"

//go:embed tuned_load.py
var tunedLoadPy []byte

// TunedProfile is a profile merged by tuned's own loader.
type TunedProfile struct {
	Units map[string]TunedUnit `json:"units"`
	// NetOrder are the enabled net units in the order tuned offers them
	// each NIC (by priority, then file order).
	NetOrder []string `json:"net_order"`
}

// TunedUnit is one merged unit.
type TunedUnit struct {
	Type     string            `json:"type"`
	Devices  string            `json:"devices"`
	Enabled  bool              `json:"enabled"`
	Priority int               `json:"priority"`
	Options  map[string]string `json:"options"`
}

// TunedStock is the directory of the stock profiles of Debian's tuned
// package, unpacked (never installed) by scripts/tuned-loader.sh, which
// `make deps-test` runs.
func TunedStock(t testing.TB) string {
	t.Helper()
	return filepath.Join(tunedRoot(t), "usr/lib/tuned")
}

func tunedRoot(t testing.TB) string {
	t.Helper()
	base := os.Getenv("SLOWPATH_TUNED_DIR")
	if base == "" {
		base = "/var/cache/slowpath-tuned"
	}
	root := filepath.Join(base, tunedVersion, "root")
	if _, err := os.Stat(filepath.Join(root, "usr/lib/python3/dist-packages/tuned/profiles/loader.py")); err != nil {
		Unavailable(t, "tuned's profile loader is not unpacked in "+root+": run ./scripts/tuned-loader.sh (make deps-test does)")
	}
	return root
}

// LoadTuned merges the named profiles found in dirs (later ones win, as
// tuned's LOAD_DIRECTORIES) with tuned's own Python loader.
func LoadTuned(t testing.TB, dirs []string, names ...string) TunedProfile {
	t.Helper()
	root := tunedRoot(t)
	py := RequireTool(t, "python3", "python3")
	script := filepath.Join(t.TempDir(), "tuned_load.py")
	if err := os.WriteFile(script, tunedLoadPy, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, append([]string{script, strings.Join(dirs, ":")}, names...)...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(root, "usr/lib/python3/dist-packages"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tuned's loader on %v %v: %v\n%s", dirs, names, err, stderr.String())
	}
	var p TunedProfile
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("tuned's loader printed %q: %v", out, err)
	}
	return p
}
