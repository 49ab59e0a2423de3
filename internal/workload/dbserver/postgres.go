package dbserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
)

// PostgresBin is Debian's postgresql-15 (the PostgreSQL-on-LUKS incident's
// engine): initdb, postgres, pg_isready and pgbench.
const PostgresBin = "/usr/lib/postgresql/15/bin"

// PostgresTools checks that PostgreSQL 15's programs are installed.
func PostgresTools() error {
	for _, b := range []string{"initdb", "postgres", "pg_isready", "pgbench"} {
		p := filepath.Join(PostgresBin, b)
		if st, err := os.Stat(p); err != nil || st.Mode()&0o111 == 0 {
			return fmt.Errorf("PostgreSQL 15's %s not found at %s: apt-get install postgresql-15", b, p)
		}
	}
	return nil
}

// Postgres is a throwaway PostgreSQL cluster in a run's directory.
type Postgres struct {
	instance
	sock string
}

// StartPostgres creates a cluster in phaseDir/pgdata and starts it on a
// unix socket only (listen_addresses=”), as the postgres user when we
// are root. On an error nothing is left running; Close removes what
// was made.
func StartPostgres(ctx context.Context, phaseDir string) (*Postgres, error) {
	if err := PostgresTools(); err != nil {
		return nil, err
	}
	pg := &Postgres{}
	err := pg.launch(postgresLayout, phaseDir, func(sock string) error {
		pg.sock = sock
		// trust on the socket only: the cluster lives for one run, its socket
		// directory is 0700, and it listens on no TCP address.
		initdb := pg.acct.command(ctx, filepath.Join(PostgresBin, "initdb"), "-D", pg.data, "-U", "postgres", "--auth=trust",
			"--encoding=UTF8", "--locale=C", "--no-instructions")
		if err := runTool(initdb); err != nil {
			return err
		}
		cmd := pg.acct.command(ctx, filepath.Join(PostgresBin, "postgres"), "-D", pg.data,
			"-c", "listen_addresses=", "-c", "unix_socket_directories="+sock, "-c", "port=5432")
		// SIGINT: fast shutdown.
		return pg.run(ctx, cmd, filepath.Join(phaseDir, "postgres.log"), "", syscall.SIGINT, func() bool {
			return exec.CommandContext(ctx, filepath.Join(PostgresBin, "pg_isready"), "-q", "-h", sock, "-p", "5432", "-U", "postgres", "-d", "postgres").Run() == nil
		})
	})
	return pg, err
}

// postgresLayout is Debian's: the postgres user of postgresql-15.
var postgresLayout = layout{engine: "PostgreSQL", user: "postgres", pkg: "postgresql-15", data: "pgdata", sock: ".s.PGSQL.5432"}

// PID is the postmaster's: the service's CPU is its process tree's.
func (pg *Postgres) PID() int { return pg.srv.PID() }

// Close stops the server (a fast shutdown) and removes the cluster.
func (pg *Postgres) Close() error { return pg.close() }

// PgbenchInit fills the pgbench tables at scale (pgbench -i -s).
func (pg *Postgres) PgbenchInit(ctx context.Context, scale int) error {
	return runTool(exec.CommandContext(ctx, filepath.Join(PostgresBin, "pgbench"), "-i", "-q", "-s", strconv.Itoa(scale),
		"-h", pg.sock, "-p", "5432", "-U", "postgres", "postgres"))
}

// PgbenchRun is pgbench's TPC-B-like run for d with clients connections
// over threads threads, each transaction logged (-l) in a private
// temporary directory, off the filesystem under test where it can be:
// the latencies are ours to count. The stream's latency is every
// transaction's.
func (pg *Postgres) PgbenchRun(ctx context.Context, d time.Duration, clients, threads int) (benchresult.Stream, error) {
	logDir, err := os.MkdirTemp("", "slowpath-pgbench-")
	if err != nil {
		return benchresult.Stream{}, err
	}
	defer os.RemoveAll(logDir)
	secs := max(1, int((d+time.Second-1)/time.Second))
	cmd := exec.CommandContext(ctx, filepath.Join(PostgresBin, "pgbench"), "-T", strconv.Itoa(secs), "-c", strconv.Itoa(clients),
		"-j", strconv.Itoa(threads), "-l", "--log-prefix="+filepath.Join(logDir, "txn"), "-h", pg.sock, "-p", "5432", "-U", "postgres", "postgres")
	// SIGINT: pgbench ends and writes its logs.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return benchresult.Stream{}, fmt.Errorf("pgbench: %w: %s", err, tail(out))
	}
	sum, err := ParsePgbenchSummary(out)
	if err != nil {
		return benchresult.Stream{}, err
	}
	logs, err := filepath.Glob(filepath.Join(logDir, "txn.*"))
	if err != nil {
		return benchresult.Stream{}, err
	}
	var txns PgbenchLog
	for _, l := range logs {
		f, err := os.Open(l)
		if err != nil {
			return benchresult.Stream{}, err
		}
		err = txns.Read(f)
		f.Close()
		if err != nil {
			return benchresult.Stream{}, fmt.Errorf("pgbench log %s: %w", filepath.Base(l), err)
		}
	}
	return txns.Stream("pgbench", sum), nil
}
