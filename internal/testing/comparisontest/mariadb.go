package comparisontest

import (
	"math/rand/v2"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// MariaDBSpec describes one synthetic mariadb-oltp side: sysbench's
// transactions and their latency, and the server's CPU per transaction,
// with MariaDB's own encryption (Engine) and dm-crypt (Crypt) on or off:
// the four-way comparison's sides.
type MariaDBSpec struct {
	Name          string
	Runs          int
	TPS           float64
	P99           time.Duration
	CPUPerTxn     time.Duration
	Noise         float64
	Engine, Crypt bool
	Seed          uint64
}

// MariaDBResults builds the runs of sp as bench results.
func MariaDBResults(sp MariaDBSpec) []*benchresult.Result {
	r := rand.New(rand.NewPCG(sp.Seed, sp.Seed^0x9e3779b97f4a7c15))
	engine := &snapshot.Engine{Engine: snapshot.EngineMariaDB, Product: "MariaDB", Comm: "mariadbd"}
	enc := "off"
	for _, s := range []struct{ setting, covers string }{{"innodb_encrypt_tables", snapshot.CoversTables}, {"innodb_encrypt_log", snapshot.CoversLogs}, {"encrypt_tmp_files", snapshot.CoversTemp}} {
		e := snapshot.EngineEncryption{Setting: s.setting, Value: "OFF", Source: "default", Covers: []string{s.covers}}
		if sp.Engine {
			enc = "on"
			e.Value, e.Enabled, e.Source, e.KeyManager, e.Cipher = "ON", true, "command line", snapshot.KeyManagerKeyfile, "AES_CBC"
		}
		engine.Encryption = append(engine.Encryption, e)
	}
	var out []*benchresult.Result
	for i := range sp.Runs {
		n := func() float64 { return 1 + sp.Noise*r.NormFloat64() }
		p := path(sp.Crypt)
		out = append(out, &benchresult.Result{
			Kind: benchresult.Kind, SchemaVersion: benchresult.SchemaVersion, SlowpathVersion: "test",
			Profile: "mariadb-oltp",
			Parameters: benchresult.Parameters{Scale: 1, RuntimeNS: int64(30 * time.Second), Target: "/srv/bench", TargetKind: "dir",
				Settings: map[string]string{"server": "mariadb", "engine_encryption": enc, "tables": "4", "table_size": "100000", "threads": "4"}},
			Started:    time.Date(2026, 11, 28, 10, 0, i, 0, time.UTC),
			DurationNS: int64(45 * time.Second),
			Status:     benchresult.StatusComplete,
			Environment: benchresult.Environment{
				Hostname: "bench-host",
				Host:     &snapshot.Host{KernelRelease: "6.1.0-28-amd64", NumCPU: 2, CPUModel: "AMD EPYC 7763 64-Core Processor"},
				Target:   &benchresult.TargetPath{Path: "/srv/bench", MountPoint: "/srv/bench", FSType: "ext4", Storage: p.Record()},
			},
			Engine: engine,
			Figures: []benchresult.Figure{
				{Name: "tps", Phase: "oltp", Value: sp.TPS * n(), Unit: benchresult.UnitOpsPerSec, Better: benchresult.HigherIsBetter},
				{Name: "latency_p99", Phase: "oltp", Value: float64(sp.P99) * n(), Unit: benchresult.UnitNanoseconds, Better: benchresult.LowerIsBetter},
				{Name: "latency_p999", Phase: "oltp", Value: float64(sp.P99) * 1.6 * n(), Unit: benchresult.UnitNanoseconds, Better: benchresult.LowerIsBetter},
				{Name: "service_cpu_per_txn", Phase: "oltp", Value: float64(sp.CPUPerTxn) * n(), Unit: benchresult.UnitNanoseconds, Better: benchresult.LowerIsBetter},
			},
		})
	}
	return out
}
