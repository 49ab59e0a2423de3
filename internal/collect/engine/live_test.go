package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/collect/storage"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/dbservertest"
	"github.com/slowpath/slowpath/internal/testing/loopfs"
	"github.com/slowpath/slowpath/internal/testing/testenv"
	"github.com/slowpath/slowpath/internal/workload/dbserver"
)

// mariadbKey is the key file on the command line of MariaDB's server pid
// and the key in it, neither of which a snapshot may carry.
func mariadbKey(t *testing.T, pid int) (path, key string) {
	t.Helper()
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		t.Fatal(err)
	}
	for _, arg := range strings.Split(string(cmdline), "\x00") {
		if p, ok := strings.CutPrefix(arg, "--file-key-management-filename="); ok {
			path = p
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("mariadbd %d's key file %q: %v", pid, path, err)
	}
	_, key, ok := strings.Cut(strings.TrimSpace(string(b)), ";")
	if !ok || key == "" {
		t.Fatalf("key file %s: not file_key_management's id;key", path)
	}
	return path, key
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

// TestLiveMariaDBEncrypted starts bench's MariaDB with its own encryption
// on (file_key_management, a key made for the run) with its data on an
// ext4 the test made on a loop device, and finds it: the engine, the
// setting, the data's filesystem, the key manager; the key file's path
// and contents appear nowhere.
func TestLiveMariaDBEncrypted(t *testing.T) {
	testenv.RequireRoot(t)
	if err := dbserver.MariaDBTools(true); err != nil {
		testenv.Unavailable(t, err.Error())
	}
	loop := loopfs.Device(t, 256<<20)
	mnt := loopfs.Ext4(t, loop, dbservertest.Enterable(t))
	m, err := dbserver.StartMariaDB(context.Background(), dbservertest.PhaseDir(t, mnt), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	data := m.DataDir()
	keyFile, secret := mariadbKey(t, m.PID())

	e, b := liveEngine(t, m.PID())
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
	// The key's private directory has a random name: found only if the
	// path leaked in pieces.
	for _, s := range []string{keyFile, secret, filepath.Base(filepath.Dir(keyFile))} {
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

// TestLivePostgresPlain starts bench's PostgreSQL 15, without pg_tde, as
// user postgres (it refuses root) and finds its postmaster, not its
// backends, with no encryption of its own.
func TestLivePostgresPlain(t *testing.T) {
	testenv.RequireRoot(t)
	if err := dbserver.PostgresTools(); err != nil {
		testenv.Unavailable(t, err.Error())
	}
	pg, err := dbserver.StartPostgres(context.Background(), dbservertest.PhaseDir(t, dbservertest.Enterable(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pg.Close(); err != nil {
			t.Error(err)
		}
	})
	data := pg.DataDir()

	e, b := liveEngine(t, pg.PID())
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
