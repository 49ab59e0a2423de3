package experiment

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/testing/testenv"
	"github.com/slowpath/slowpath/internal/workload/dbserver"
	"github.com/slowpath/slowpath/internal/workload/profile"
)

// TestDatabaseProfilesLive runs the database profiles for real, short: a
// PostgreSQL 15 cluster under pgbench, and MariaDB under sysbench without
// and with its own encryption (the four-way comparison's host sides, none
// and engine). Each result validates as a file read back, has its
// transactions, percentiles and the service's CPU, names its engine's
// encryption, and leaves nothing behind: no run directory, no key, no
// server.
func TestDatabaseProfilesLive(t *testing.T) {
	testenv.RequireRoot(t)
	if err := dbserver.PostgresTools(); err != nil {
		testenv.Unavailable(t, err.Error())
	}
	if err := dbserver.MariaDBTools(true); err != nil {
		testenv.Unavailable(t, err.Error())
	}
	dir := tmpfsDir(t)
	// The servers run as postgres and mysql: they must enter the target.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	keysBefore, _ := filepath.Glob(filepath.Join(os.TempDir(), "slowpath-key-*"))
	results := map[string]*benchresult.Result{}
	for _, name := range []string{profile.Pgbench, profile.MariaDBOLTP, profile.MariaDBOLTPEncrypted} {
		w, err := ParseWorkload(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Scale, w.Runtime, w.Interval = 0.01, 2*time.Second, 200*time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		res, err := RunWorkload(ctx, testEnv(), w, Target{Dir: dir})
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var b bytes.Buffer
		if err := benchresult.Write(&b, res); err != nil {
			t.Fatalf("%s: write: %v", name, err)
		}
		back, err := benchresult.Read(&b)
		if err != nil {
			t.Fatalf("%s: the result does not read back: %v", name, err)
		}
		results[name] = back
		phase := "oltp"
		if name == profile.Pgbench {
			phase = "pgbench"
		}
		for _, fig := range []string{"tps", "latency_p50", "latency_p99", "service_cpus", "service_cpu_per_txn"} {
			if f, ok := back.Figure(phase, fig); !ok || !(f.Value > 0) {
				t.Errorf("%s: figure %s %s = %+v, %v: want a positive value", name, phase, fig, f, ok)
			}
		}
		if back.Engine == nil {
			t.Fatalf("%s: no engine in the result", name)
		}
		enabled := 0
		for _, e := range back.Engine.Encryption {
			if e.Enabled {
				enabled++
			}
		}
		if want := map[string]int{profile.MariaDBOLTPEncrypted: 3}[name]; enabled != want {
			t.Errorf("%s: %d encryption settings on, want %d: %+v", name, enabled, want, back.Engine.Encryption)
		}
		empty(t, dir)
	}
	if keys, _ := filepath.Glob(filepath.Join(os.TempDir(), "slowpath-key-*")); len(keys) != len(keysBefore) {
		t.Errorf("key directories left behind: %v", keys)
	}
	// The encrypted run is a side of the same comparison as the plain one.
	none, engine := results[profile.MariaDBOLTP], results[profile.MariaDBOLTPEncrypted]
	if none.Profile != engine.Profile || engine.Parameters.Settings["engine_encryption"] != "on" {
		t.Errorf("profiles %s and %s, engine_encryption %q", none.Profile, engine.Profile, engine.Parameters.Settings["engine_encryption"])
	}
	var sides []comparison.Side
	for _, s := range []struct {
		name string
		r    *benchresult.Result
	}{{"none", none}, {"engine", engine}} {
		cs, err := comparison.FromResults(s.name, []string{s.name + ".json"}, []*benchresult.Result{s.r})
		if err != nil {
			t.Fatal(err)
		}
		sides = append(sides, cs)
	}
	if got := sides[1].FactValue("encryption layers"); !strings.Contains(got, "engine mariadb") {
		t.Errorf("engine side's encryption layers %q: want the engine named", got)
	}
	if got := sides[0].FactValue("encryption layers"); strings.Contains(got, "engine") {
		t.Errorf("plain side's encryption layers %q: no engine layer", got)
	}
}
