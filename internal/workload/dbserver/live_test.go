package dbserver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/testing/dbservertest"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// runDir is a run's directory as bench makes it, below a directory the
// servers' users can enter, removed after the test.
func runDir(t *testing.T) string {
	t.Helper()
	testenv.RequireRoot(t)
	return dbservertest.PhaseDir(t, dbservertest.Enterable(t))
}

// gone fails t unless process pid has ended.
func gone(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("server %d still there after Close: %v", pid, err)
	}
}

// TestPostgresInterrupted: a run cancelled in pgbench's timed run stops
// the cluster and removes it.
func TestPostgresInterrupted(t *testing.T) {
	if err := PostgresTools(); err != nil {
		testenv.Unavailable(t, err.Error())
	}
	dir := runDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pg, err := StartPostgres(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	pid := pg.PID()
	if err := pg.PgbenchInit(ctx, 1); err != nil {
		pg.Close()
		t.Fatal(err)
	}
	time.AfterFunc(time.Second, cancel)
	_, runErr := pg.PgbenchRun(ctx, 30*time.Second, 2, 1)
	if err := pg.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if runErr == nil {
		t.Error("a cancelled run: no error")
	}
	gone(t, pid)
	empty(t, dir)
}

// empty fails t unless Close removed all it made in dir.
func empty(t *testing.T, dir string) {
	t.Helper()
	if ents, err := os.ReadDir(dir); err != nil || len(ents) > 0 {
		t.Errorf("left in the run's directory: %v %v", ents, err)
	}
}

// sysbenchRow matches sysbench's c column (ten groups of 11 digits): in
// a table's file only where the engine does not encrypt it.
var sysbenchRow = regexp.MustCompile(`[0-9]{11}-[0-9]{11}-[0-9]{11}`)

// TestMariaDBEncrypts: with its encryption on, the rows sysbench wrote
// are not in the table's file once the server flushed it (a clean
// shutdown), and are without; the key is gone after Close.
func TestMariaDBEncrypts(t *testing.T) {
	if err := MariaDBTools(true); err != nil {
		testenv.Unavailable(t, err.Error())
	}
	for _, encrypt := range []bool{false, true} {
		dir := runDir(t)
		ctx := context.Background()
		m, err := StartMariaDB(ctx, dir, encrypt)
		if err != nil {
			t.Fatal(err)
		}
		o := SysbenchOptions{Tables: 1, TableSize: 2000, Threads: 1}
		if err := m.SysbenchPrepare(ctx, o); err != nil {
			m.Close()
			t.Fatal(err)
		}
		pid := m.PID()
		if err := m.srv.stop(); err != nil {
			t.Error(err)
		}
		b, err := os.ReadFile(filepath.Join(m.data, sysbenchDB, "sbtest1.ibd"))
		if err != nil {
			t.Error(err)
		}
		if got := sysbenchRow.Match(b); got == encrypt {
			t.Errorf("encryption %v: rows readable in sbtest1.ibd: %v", encrypt, got)
		}
		if err := m.Close(); err != nil {
			t.Error(err)
		}
		gone(t, pid)
		empty(t, dir)
		// This server's key alone: another package's test may be
		// running a MariaDB of its own beside this one.
		if _, err := os.Stat(filepath.Dir(m.key)); encrypt && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("key directory %s left: %v", filepath.Dir(m.key), err)
		}
	}
}
