package dbserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// MariaDBPlugins is where Debian's MariaDB keeps its plugins;
// file_key_management.so is in the mariadb-server package, not
// mariadb-server-core.
const MariaDBPlugins = "/usr/lib/mysql/plugin"

// MariaDBTools checks that MariaDB's server, its installer and sysbench
// are installed, and the key management plugin when the run encrypts.
func MariaDBTools(encrypt bool) error {
	for _, t := range []struct{ bin, pkg string }{{"mariadb-install-db", "mariadb-server-core"}, {"mariadbd", "mariadb-server-core"}, {"sysbench", "sysbench"}} {
		if _, err := lookBin(t.bin, t.pkg, "/usr/sbin", "/usr/bin"); err != nil {
			return err
		}
	}
	if encrypt {
		p := filepath.Join(MariaDBPlugins, "file_key_management.so")
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("MariaDB's key management plugin %s not found: apt-get install mariadb-server", p)
		}
	}
	return nil
}

// MariaDBEncryption is the engine encryption a run turns on: InnoDB's
// tables and redo log and the server's temporary files, keyed by the
// file_key_management plugin from a key made for the run
// (https://mariadb.com/kb/en/file-key-management-encryption-plugin/,
// https://mariadb.com/kb/en/innodb-encryption-overview/). Setting names
// and values only: the key never leaves its file.
var MariaDBEncryption = []snapshot.EngineEncryption{
	{Setting: "innodb_encrypt_tables", Value: "ON", Enabled: true, Source: "command line", Covers: []string{snapshot.CoversTables}, KeyManager: snapshot.KeyManagerKeyfile, Cipher: "AES_CBC"},
	{Setting: "innodb_encrypt_log", Value: "ON", Enabled: true, Source: "command line", Covers: []string{snapshot.CoversLogs}, KeyManager: snapshot.KeyManagerKeyfile, Cipher: "AES_CBC"},
	{Setting: "encrypt_tmp_files", Value: "ON", Enabled: true, Source: "command line", Covers: []string{snapshot.CoversTemp}, KeyManager: snapshot.KeyManagerKeyfile, Cipher: "AES_CBC"},
}

// MariaDB is a throwaway MariaDB server in a run's directory.
type MariaDB struct {
	instance
	sock string
	key  string // the key file when the server encrypts
}

// sysbenchDB is the database sysbench fills, made at install.
const sysbenchDB = "sbtest"

// StartMariaDB installs a server in phaseDir/mariadb and starts it on a
// unix socket only (--skip-networking), without reading any option file
// (--no-defaults), as the mysql user when we are root; with its own
// encryption on when encrypt is set. On an error nothing is left
// running; Close removes what was made, the key included.
func StartMariaDB(ctx context.Context, phaseDir string, encrypt bool) (*MariaDB, error) {
	return StartMariaDBWith(ctx, phaseDir, encrypt)
}

// StartMariaDBWith is StartMariaDB with more server options (names and
// values of mariadbd's own, such as --innodb-buffer-pool-size=8M), given
// after slowpath's.
func StartMariaDBWith(ctx context.Context, phaseDir string, encrypt bool, options ...string) (*MariaDB, error) {
	if err := MariaDBTools(encrypt); err != nil {
		return nil, err
	}
	installDB, _ := lookBin("mariadb-install-db", "mariadb-server-core", "/usr/bin")
	mariadbd, _ := lookBin("mariadbd", "mariadb-server-core", "/usr/sbin")
	m := &MariaDB{}
	err := m.launch(mariadbLayout, phaseDir, func(sock string) error {
		a := m.acct
		m.sock = filepath.Join(sock, "mysqld.sock")
		// The server writes its log and pid file: in a directory of its own
		// (the phase's is slowpath's, 0711).
		logs := filepath.Join(phaseDir, "mariadb-log")
		if err := a.mkdirFor(logs); err != nil {
			return err
		}
		m.undo(func() error { return os.RemoveAll(logs) })
		errLog := filepath.Join(logs, "mariadbd.err")
		// Temporary tables in a directory of its own: in a shared /tmp, two
		// servers (two bootstraps, in the test suite) were seen to name
		// temporary files alike, and one removed the other's.
		tmp := filepath.Join(phaseDir, "mariadb-tmp")
		if err := a.mkdirFor(tmp); err != nil {
			return err
		}
		m.undo(func() error { return os.RemoveAll(tmp) })
		common := []string{"--no-defaults", "--datadir=" + m.data, "--socket=" + m.sock, "--skip-networking",
			"--log-error=" + errLog, "--pid-file=" + filepath.Join(logs, "mariadbd.pid"), "--tmpdir=" + tmp}
		if encrypt {
			key, rmKey, err := makeKey(a)
			if err != nil {
				return err
			}
			m.key = key
			m.undo(rmKey)
			common = append(common, "--plugin-dir="+MariaDBPlugins, "--plugin-load-add=file_key_management",
				"--file-key-management-filename="+key, "--innodb-encrypt-tables=ON", "--innodb-encrypt-log=ON", "--encrypt-tmp-files=ON")
		}
		extra := filepath.Join(phaseDir, "init.sql")
		m.undo(func() error { return removeIfThere(extra) })
		if err := os.WriteFile(extra, []byte("CREATE DATABASE IF NOT EXISTS "+sysbenchDB+";\n"), 0o600); err != nil {
			return err
		}
		if err := a.chown(extra); err != nil {
			return err
		}
		// root without a password, on a socket in a 0700 directory of a
		// server that lives for one run and listens on no TCP port.
		install := a.command(ctx, installDB, append([]string{"--no-defaults", "--datadir=" + m.data, "--auth-root-authentication-method=normal",
			"--skip-test-db", "--skip-name-resolve", "--extra-file=" + extra}, common[1:]...)...)
		if err := runTool(install); err != nil {
			// Its output says only to look in the log, which close removes.
			b, _ := os.ReadFile(errLog)
			return fmt.Errorf("%w; %s ends: %s", err, filepath.Base(errLog), tail(b))
		}
		return m.run(ctx, a.command(ctx, mariadbd, append(common, options...)...), filepath.Join(phaseDir, "mariadbd.out"), errLog, syscall.SIGTERM,
			func() bool { return greets(m.sock) })
	})
	return m, err
}

// greets says whether the server at sock sends its handshake: its accept
// loop runs, so its start-up is over. A connect alone is not enough: the
// socket listens before start-up ends, and a SIGTERM in that window
// was seen to leave mariadbd 10.11 hung, neither started nor stopped.
func greets(sock string) bool {
	c, err := net.DialTimeout("unix", sock, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	if err := c.SetReadDeadline(time.Now().Add(time.Second)); err != nil {
		return false
	}
	// A packet header (3 bytes of length, a sequence number) and the
	// first byte of its payload: protocol version 10, or 0xff for an
	// error packet (a server that answers, refusing).
	var b [5]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return false
	}
	return b[3] == 0 && (b[4] == 10 || b[4] == 0xff)
}

// mariadbLayout is Debian's: the mysql user of mariadb-server-core.
var mariadbLayout = layout{engine: "MariaDB", user: "mysql", pkg: "mariadb-server-core", data: "mariadb", sock: "mysqld.sock"}

// makeKey writes a random AES-256 key as file_key_management reads it
// ("1;HEX") into a private temporary directory outside the run's (the
// filesystem under test holds only encrypted data), readable by the
// server's account alone.
func makeKey(a Account) (path string, remove func() error, err error) {
	dir, err := os.MkdirTemp("", "slowpath-key-")
	if err != nil {
		return "", nil, err
	}
	remove = func() error { return os.RemoveAll(dir) }
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		remove()
		return "", nil, err
	}
	path = filepath.Join(dir, "keys")
	err = errors.Join(os.WriteFile(path, []byte("1;"+hex.EncodeToString(b)+"\n"), 0o600), a.chown(path), a.chown(dir))
	clear(b)
	if err != nil {
		remove()
		return "", nil, err
	}
	return path, remove, nil
}

// PID is mariadbd's: every thread of the service is in it.
func (m *MariaDB) PID() int { return m.srv.PID() }

// Close stops the server (SIGTERM: a clean shutdown) and removes its
// data directory and the key.
func (m *MariaDB) Close() error { return m.close() }

// SysbenchOptions size sysbench's OLTP read/write workload.
type SysbenchOptions struct {
	Tables, TableSize, Threads int
	Duration                   time.Duration
}

func (m *MariaDB) sysbench(ctx context.Context, o SysbenchOptions, cmd string, extra ...string) *exec.Cmd {
	bin, _ := lookBin("sysbench", "sysbench")
	args := append([]string{"oltp_read_write", "--db-driver=mysql", "--mysql-socket=" + m.sock, "--mysql-user=root",
		"--mysql-db=" + sysbenchDB, "--tables=" + strconv.Itoa(o.Tables), "--table-size=" + strconv.Itoa(o.TableSize),
		"--threads=" + strconv.Itoa(o.Threads)}, extra...)
	return exec.CommandContext(ctx, bin, append(args, cmd)...)
}

// SysbenchPrepare creates and fills the tables.
func (m *MariaDB) SysbenchPrepare(ctx context.Context, o SysbenchOptions) error {
	return runTool(m.sysbench(ctx, o, "prepare"))
}

// SysbenchRun runs oltp_read_write for o.Duration and returns its
// transactions (latency from sysbench's histogram) and its queries.
func (m *MariaDB) SysbenchRun(ctx context.Context, o SysbenchOptions) ([]benchresult.Stream, error) {
	secs := max(1, int((o.Duration+time.Second-1)/time.Second))
	cmd := m.sysbench(ctx, o, "run", "--time="+strconv.Itoa(secs), "--events=0", "--report-interval=1", "--histogram=on", "--percentile=99")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("sysbench: %w: %s", err, tail(out))
	}
	r, err := ParseSysbench(out)
	if err != nil {
		return nil, err
	}
	return r.Streams("sysbench"), nil
}

// ErrorLog returns what the server wrote to its error log so far (InnoDB
// names its I/O method there: "Using liburing", "Using Linux native AIO").
func (m *MariaDB) ErrorLog() ([]byte, error) { return os.ReadFile(m.srv.log) }
