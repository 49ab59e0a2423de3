package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/collect/storage"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/loopfs"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// startServer starts cmd and stops it when t ends, also on failure:
// SIGTERM, then SIGKILL if it has not exited within 10 s.
func startServer(t *testing.T, cmd *exec.Cmd, log string) {
	t.Helper()
	out, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); out.Close(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
}

// waitSocket waits up to 15 s for a server's Unix socket.
func waitSocket(t *testing.T, sock, log string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if st, err := os.Stat(sock); err == nil && st.Mode()&os.ModeSocket != 0 {
			return
		}
	}
	b, _ := os.ReadFile(log)
	t.Fatalf("no socket %s after 15 s; server log:\n%s", sock, b)
}

// liveEngine collects this host and returns the engine of pid.
func liveEngine(t *testing.T, pid int) (snapshot.Engine, []byte) {
	t.Helper()
	s := &snapshot.Snapshot{Manifest: snapshot.Manifest{FormatVersion: snapshot.FormatVersion, Tool: "slowpath test"}}
	Collect(hostfs.Default(), s)
	if err := s.Validate(); err != nil {
		t.Fatalf("snapshot of this host does not validate: %v", err)
	}
	b, err := json.Marshal(s.Engines)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range s.Engines.Processes {
		if e.PID == pid {
			return e, b
		}
	}
	t.Fatalf("pid %d not found: %s", pid, b)
	return snapshot.Engine{}, nil
}

// TestLiveMariaDBEncrypted starts a MariaDB with its own encryption on
// (file_key_management, a key made for the test) with its data on an
// ext4 the test made on a loop device, and finds it: the engine, the
// setting, the data's filesystem, the key manager; the key file's path
// and contents appear nowhere.
func TestLiveMariaDBEncrypted(t *testing.T) {
	testenv.RequireRoot(t)
	mariadbd := testenv.RequireTool(t, "mariadbd", "mariadb-server")
	install := testenv.RequireTool(t, "mariadb-install-db", "mariadb-server")
	plugin := "/usr/lib/mysql/plugin/file_key_management.so"
	if _, err := os.Stat(plugin); err != nil {
		testenv.Unavailable(t, plugin+" not found: apt-get install mariadb-server")
	}
	mnt, loop := loopfs.LoopExt4(t, 256<<20)
	data := filepath.Join(mnt, "data")
	run := t.TempDir() // socket, key, log: removed when the test ends
	keyBytes := make([]byte, 32)
	rand.Read(keyBytes)
	secret := hex.EncodeToString(keyBytes)
	keyFile := filepath.Join(run, "keys.txt")
	if err := os.WriteFile(keyFile, []byte("1;"+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(install, "--no-defaults", "--datadir="+data, "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	sock := filepath.Join(run, "mysqld.sock")
	cmd := exec.Command(mariadbd, "--no-defaults", "--datadir="+data, "--socket="+sock, "--skip-networking",
		"--user=root", "--pid-file="+filepath.Join(run, "mysqld.pid"), "--innodb-buffer-pool-size=32M",
		"--plugin-load-add=file_key_management", "--file-key-management-filename="+keyFile,
		"--innodb-encrypt-tables=ON", "--innodb-encrypt-log=ON")
	log := filepath.Join(run, "mariadbd.log")
	startServer(t, cmd, log)
	waitSocket(t, sock, log)

	e, b := liveEngine(t, cmd.Process.Pid)
	if e.Engine != snapshot.EngineMariaDB || e.DataDir != data || e.Container != "" {
		t.Errorf("engine %s, data dir %s, container %q; want mariadb, %s, none", e.Engine, e.DataDir, e.Container, data)
	}
	if want := devOf(t, mnt); e.DataDev != want {
		t.Errorf("data dev %s, want %s (%s on %s)", e.DataDev, want, mnt, loop)
	}
	var tables *snapshot.EngineEncryption
	for i := range e.Encryption {
		if e.Encryption[i].Setting == "innodb_encrypt_tables" {
			tables = &e.Encryption[i]
		}
	}
	if tables == nil || !tables.Enabled || tables.Source != srcCommandLine || tables.KeyManager != snapshot.KeyManagerKeyfile {
		t.Errorf("innodb_encrypt_tables %+v: want enabled, from the command line, keyfile", tables)
	}
	for _, s := range []string{keyFile, secret, "keys.txt"} {
		if strings.Contains(string(b), s) {
			t.Errorf("snapshot carries %q", s)
		}
	}
	engineLayerOn(t, mnt, e)
}

// engineLayerOn collects this host's storage beside e and checks that the
// storage model counts e's encryption as the top layer of the path
// mounted at mnt, and as its only encryption layer (a loop device on
// this host's disk: nothing below encrypts).
func engineLayerOn(t *testing.T, mnt string, e snapshot.Engine) {
	t.Helper()
	s := &snapshot.Snapshot{Manifest: snapshot.Manifest{FormatVersion: snapshot.FormatVersion},
		Engines: &snapshot.Engines{Processes: []snapshot.Engine{e}}}
	storage.Collect(context.Background(), hostfs.Default(), s)
	m := storagemodel.Build(s)
	for _, p := range m.Paths {
		if p.MountPoint != mnt {
			continue
		}
		if len(p.Layers) == 0 || p.Layers[0].Kind != storagemodel.LayerEngine || p.Layers[0].EncryptedBy != storagemodel.ByServiceCPU {
			t.Fatalf("path %s: top layer %+v, want the engine's (service-cpu)", mnt, p.Layers)
		}
		if p.EncryptionLayers != 1 {
			t.Errorf("path %s: %d encryption layers, want 1 (the engine's)", mnt, p.EncryptionLayers)
		}
		return
	}
	t.Fatalf("no storage path mounted at %s; problems: %v", mnt, m.Problems)
}

// TestLivePostgresPlain starts a PostgreSQL 15 without pg_tde as user
// postgres (it refuses root) and finds its postmaster, not its
// backends, with no encryption of its own.
func TestLivePostgresPlain(t *testing.T) {
	testenv.RequireRoot(t)
	bin := "/usr/lib/postgresql/15/bin"
	if _, err := os.Stat(filepath.Join(bin, "postgres")); err != nil {
		testenv.Unavailable(t, "PostgreSQL 15 not found: apt-get install postgresql-15")
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		testenv.Unavailable(t, "no user postgres: apt-get install postgresql-15")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	// Not t.TempDir: its parent is root's 0700, which postgres cannot cross.
	dir, err := os.MkdirTemp("", "slowpath-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	asPostgres := func(name string, args ...string) *exec.Cmd {
		c := exec.Command(filepath.Join(bin, name), args...)
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		c.Dir = dir
		c.Env = []string{"PATH=/usr/bin:/bin", "LANG=C"}
		return c
	}
	if out, err := asPostgres("initdb", "-D", data, "-A", "trust", "-U", "postgres", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	cmd := asPostgres("postgres", "-D", data, "-k", dir, "-c", "listen_addresses=", "-c", "shared_buffers=16MB")
	log := filepath.Join(dir, "postgres.log")
	startServer(t, cmd, log)
	waitSocket(t, filepath.Join(dir, ".s.PGSQL.5432"), log)

	e, b := liveEngine(t, cmd.Process.Pid)
	if e.Engine != snapshot.EnginePostgreSQL || e.DataDir != data || e.DataDev != devOf(t, data) {
		t.Errorf("engine %s, data dir %s dev %s; want postgresql, %s", e.Engine, e.DataDir, e.DataDev, data)
	}
	for _, x := range e.Encryption {
		if x.Enabled {
			t.Errorf("encryption %+v enabled on a PostgreSQL without pg_tde", x)
		}
	}
	var s snapshot.Engines
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range s.Processes {
		if p.Engine == snapshot.EnginePostgreSQL && p.DataDir == data {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d postgres processes recorded for %s: want the postmaster alone", n, data)
	}
}
