package profile

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/workload/dbserver"
)

// The database profiles: a real, throwaway database server on the
// directory under test, loaded by its own benchmark client. MariaDBOLTP
// names both MariaDB runs in results (the encrypted one says so in its
// settings and engine), so compare puts them side by side.
const (
	Pgbench              = "pgbench"
	MariaDBOLTP          = "mariadb-oltp"
	MariaDBOLTPEncrypted = "mariadb-oltp:encrypted"
)

func init() {
	Register(pgbenchProfile{})
	Register(mariadbProfile{})
	Register(mariadbProfile{encrypt: true})
}

// dbMetrics: a database is judged by its transactions per second, then
// their p99; the tail and the service's CPU per transaction (where an
// engine's own encryption shows) must not get worse. The profiles have
// one phase, so the rows carry no phase name (comparison FromResults).
var dbMetrics = &Metrics{Primary: []Metric{{Figure: "tps"}, {Figure: "latency_p99"}},
	Guards: []Metric{{Figure: "latency_p999"}, {Figure: "service_cpu_per_txn"}, {Figure: CPUPerIO}}}

type pgbenchProfile struct{}

// Spec: see dbMetrics.
func (pgbenchProfile) Spec() Spec {
	return Spec{Name: Pgbench, Needs: Dir, Rank: 45, Metrics: dbMetrics,
		Description: "a throwaway PostgreSQL 15 cluster on the directory, pgbench's TPC-B-like transactions on a unix socket"}
}

func (pgbenchProfile) checkTools(string) error { return dbserver.PostgresTools() }

// Plan: pgbench's scale 10 per --scale (16 MB of accounts per unit), two
// clients per CPU as db-commit's commit-N.
func (pgbenchProfile) Plan(name string, p Params) (*Plan, error) {
	scale := clampInt(10*p.Scale, 1, 1000)
	clients := clampInt(float64(2*p.NumCPU)*math.Max(1, p.Scale), 2, 64)
	threads := min(clients, p.NumCPU)
	run := func(ctx context.Context, pdir string, h Hooks) (ph benchresult.Phase, err error) {
		ph.Engine = "pgbench"
		pg, err := dbserver.StartPostgres(ctx, pdir)
		if err != nil {
			return ph, err
		}
		defer func() { err = errors.Join(err, pg.Close()) }()
		if err := pg.PgbenchInit(ctx, scale); err != nil {
			return ph, err
		}
		cpu := startServiceCPU(h, pg.PID())
		s, err := pg.PgbenchRun(ctx, p.Runtime, clients, threads)
		if err != nil {
			return ph, err
		}
		ph.ServiceCPUNS = cpu()
		ph.Streams = []benchresult.Stream{s}
		return ph, nil
	}
	return &Plan{Profile: Pgbench,
		Settings: map[string]string{"server": "postgresql-15", "engine_encryption": "off", "pgbench_scale": strconv.Itoa(scale),
			"clients": strconv.Itoa(clients), "threads": strconv.Itoa(threads)},
		SpaceBytes: uint64(scale)*32*mib + 256*mib,
		SpaceNote:  fmt.Sprintf("pgbench's tables at scale %d and their indexes, twice, and the WAL", scale),
		Engine:     &snapshot.Engine{Engine: snapshot.EnginePostgreSQL, Product: "PostgreSQL 15", Comm: "postgres"},
		Phases: []PhasePlan{{Name: "pgbench", Native: run,
			Expected: p.Runtime + 5*time.Second + time.Duration(scale)*300*time.Millisecond}}}, nil
}

func (pgbenchProfile) Figures(phases []benchresult.Phase, _ *benchresult.LoadTimes) []benchresult.Figure {
	return dbFigures(phases, "pgbench")
}

type mariadbProfile struct{ encrypt bool }

// Spec: see dbMetrics. The encrypted run is a member of the
// mariadb-oltp family, its results named mariadb-oltp.
func (m mariadbProfile) Spec() Spec {
	s := Spec{Name: MariaDBOLTP, Needs: Dir, Rank: 46, Metrics: dbMetrics,
		Description: "a throwaway MariaDB server on the directory, sysbench oltp_read_write on a unix socket"}
	if m.encrypt {
		s.Name, s.Family, s.Rank = MariaDBOLTPEncrypted, MariaDBOLTP, 47
		s.Description = "mariadb-oltp with MariaDB's own encryption on: InnoDB tables and redo log and temporary files, file_key_management with a key made for the run"
	}
	return s
}

func (m mariadbProfile) checkTools(string) error { return dbserver.MariaDBTools(m.encrypt) }

// Plan: 4 tables of 100 000 rows per --scale (about 25 MB each), two
// sysbench threads per CPU.
func (m mariadbProfile) Plan(name string, p Params) (*Plan, error) {
	o := dbserver.SysbenchOptions{Tables: clampInt(4*p.Scale, 1, 64), TableSize: clampInt(100000*p.Scale, 1000, 10_000_000),
		Threads: clampInt(float64(2*p.NumCPU)*math.Max(1, p.Scale), 2, 64), Duration: p.Runtime}
	run := func(ctx context.Context, pdir string, h Hooks) (ph benchresult.Phase, err error) {
		ph.Engine = "sysbench"
		db, err := dbserver.StartMariaDB(ctx, pdir, m.encrypt)
		if err != nil {
			return ph, err
		}
		defer func() { err = errors.Join(err, db.Close()) }()
		if err := db.SysbenchPrepare(ctx, o); err != nil {
			return ph, err
		}
		cpu := startServiceCPU(h, db.PID())
		ss, err := db.SysbenchRun(ctx, o)
		if err != nil {
			return ph, err
		}
		ph.ServiceCPUNS = cpu()
		ph.Streams = ss
		return ph, nil
	}
	enc := "off"
	engine := &snapshot.Engine{Engine: snapshot.EngineMariaDB, Product: "MariaDB", Comm: "mariadbd"}
	for _, e := range dbserver.MariaDBEncryption {
		if m.encrypt {
			enc = "on"
			engine.Encryption = append(engine.Encryption, e)
			continue
		}
		engine.Encryption = append(engine.Encryption, snapshot.EngineEncryption{Setting: e.Setting, Value: "OFF", Source: "default", Covers: e.Covers})
	}
	rows := int64(o.Tables) * int64(o.TableSize)
	return &Plan{Profile: MariaDBOLTP,
		Settings: map[string]string{"server": "mariadb", "engine_encryption": enc, "tables": strconv.Itoa(o.Tables),
			"table_size": strconv.Itoa(o.TableSize), "threads": strconv.Itoa(o.Threads)},
		SpaceBytes: uint64(rows)*512 + 512*mib,
		SpaceNote:  fmt.Sprintf("%d tables of %d rows, their indexes, and InnoDB's system tablespace and redo log", o.Tables, o.TableSize),
		Engine:     engine,
		Phases: []PhasePlan{{Name: "oltp", Native: run,
			Expected: p.Runtime + 8*time.Second + time.Duration(rows/20000)*time.Second}}}, nil
}

func (mariadbProfile) Figures(phases []benchresult.Phase, _ *benchresult.LoadTimes) []benchresult.Figure {
	return dbFigures(phases, "sysbench")
}

// startServiceCPU reads the server's CPU now; the function it returns
// reads it again and gives the difference in ns, 0 when it cannot be
// read (no hook, or the server gone).
func startServiceCPU(h Hooks, pid int) func() int64 {
	if h.ServiceCPU == nil {
		return func() int64 { return 0 }
	}
	before, err := h.ServiceCPU(pid)
	return func() int64 {
		after, err2 := h.ServiceCPU(pid)
		if err != nil || err2 != nil || after < before {
			return 0
		}
		return int64(after - before)
	}
}

// dbFigures are a database profile's figures, from its one phase: the
// client's transactions per second and their latency percentiles, its
// queries per second (sysbench), and the server's CPU during the timed
// run, in CPUs and per transaction.
func dbFigures(phases []benchresult.Phase, client string) []benchresult.Figure {
	var f figures
	for _, ph := range phases {
		t := find(ph, client, dbserver.OpTransaction)
		if t == nil {
			continue
		}
		f.add(ph.Name, "tps", t.OpsPerSec, benchresult.UnitOpsPerSec, benchresult.HigherIsBetter)
		if q := find(ph, client, dbserver.OpQuery); q != nil {
			f.add(ph.Name, "qps", q.OpsPerSec, benchresult.UnitOpsPerSec, benchresult.HigherIsBetter)
		}
		for _, p := range []struct {
			name string
			p    float64
		}{{"latency_p50", 50}, {"latency_p95", 95}, {"latency_p99", 99}, {"latency_p999", 99.9}} {
			f.addPct(ph.Name, p.name, t, p.p)
		}
		if ph.ServiceCPUNS > 0 && t.RuntimeNS > 0 {
			f.add(ph.Name, "service_cpus", math.Round(float64(ph.ServiceCPUNS)/float64(t.RuntimeNS)*1000)/1000, benchresult.UnitCPUs, benchresult.LowerIsBetter)
			if t.Ops > 0 {
				f.add(ph.Name, "service_cpu_per_txn", math.Round(float64(ph.ServiceCPUNS)/float64(t.Ops)), benchresult.UnitNanoseconds, benchresult.LowerIsBetter)
			}
		}
	}
	return f
}
