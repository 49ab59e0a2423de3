package profile

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/benchresult"
)

// TestDatabasePlans: the database profiles are sized by --scale, run one
// native phase on a directory only, name their results after the
// profile (the encrypted run too) and record their engine's encryption.
func TestDatabasePlans(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings map[string]string
		enabled  int
	}{
		{Pgbench, map[string]string{"server": "postgresql-15", "engine_encryption": "off", "pgbench_scale": "10", "clients": "4", "threads": "2"}, 0},
		{MariaDBOLTP, map[string]string{"server": "mariadb", "engine_encryption": "off", "tables": "4", "table_size": "100000", "threads": "4"}, 0},
		{MariaDBOLTPEncrypted, map[string]string{"server": "mariadb", "engine_encryption": "on", "tables": "4", "table_size": "100000", "threads": "4"}, 3},
	} {
		pl, err := New(tc.name, Params{Scale: 1, Runtime: 15 * time.Second, Dir: "/srv/bench", NumCPU: 2})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.settings, pl.Settings); diff != "" {
			t.Errorf("%s settings (-want +got):\n%s", tc.name, diff)
		}
		if len(pl.Phases) != 1 || pl.Phases[0].Native == nil || !pl.Native() || pl.SpaceBytes == 0 {
			t.Errorf("%s: phases %+v, space %d", tc.name, pl.Phases, pl.SpaceBytes)
		}
		want := tc.name
		if tc.name == MariaDBOLTPEncrypted {
			want = MariaDBOLTP
		}
		if pl.Profile != want {
			t.Errorf("%s: results named %s, want %s", tc.name, pl.Profile, want)
		}
		n := 0
		for _, e := range pl.Engine.Encryption {
			if e.Enabled {
				n++
			}
		}
		if n != tc.enabled {
			t.Errorf("%s: %d encryption settings on, want %d", tc.name, n, tc.enabled)
		}
		if _, err := New(tc.name, Params{Scale: 1, Runtime: time.Second, Device: "/dev/loop9", NumCPU: 2}); err == nil {
			t.Errorf("%s on a device: no error", tc.name)
		}
	}
	if pl, _ := New(DBCommit, Params{Scale: 1, Runtime: time.Second, Dir: "/srv", NumCPU: 2}); pl.Native() {
		t.Error("db-commit is fio's")
	}
}

// TestDatabaseFigures: the figures of a database phase, the service's
// CPU per transaction included.
func TestDatabaseFigures(t *testing.T) {
	h := benchresult.FromDurations([]time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 40 * time.Millisecond})
	ph := benchresult.Phase{Name: "oltp", ServiceCPUNS: int64(2 * time.Second), Streams: []benchresult.Stream{
		{Name: "sysbench", Op: "transaction", Ops: 1000, RuntimeNS: int64(4 * time.Second), OpsPerSec: 250, Latency: &benchresult.Latency{Count: 4, Histogram: h}},
		{Name: "sysbench", Op: "query", Ops: 20000, RuntimeNS: int64(4 * time.Second), OpsPerSec: 5000},
	}}
	got := map[string]float64{}
	for _, f := range (mariadbProfile{}).Figures([]benchresult.Phase{ph}, nil) {
		if f.Phase != "oltp" {
			t.Errorf("figure %s in phase %q", f.Name, f.Phase)
		}
		got[f.Name] = f.Value
	}
	want := map[string]float64{"tps": 250, "qps": 5000, "latency_p50": 2e6, "latency_p95": 40e6, "latency_p99": 40e6, "latency_p999": 40e6,
		"service_cpus": 0.5, "service_cpu_per_txn": 2e6}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("figures (-want +got):\n%s", diff)
	}
}
