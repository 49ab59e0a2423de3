package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/golden"
	"github.com/slowpath/slowpath/internal/testing/hostfstest"
)

// secrets are in the fixtures as key material, key files' paths and
// passwords, or beside a container's root: none may reach a snapshot.
var secrets = []string{
	"secret-passphrase-never-recorded", "/etc/mysql/encryption", "keyfile.key", "keyfile.enc",
	"/etc/mongodb-keyfile", "never-recorded-password", "/etc/kmip", "0011223344556677", "never_recorded_16",
	"/keys/aes-128.key", "aes-128", "mysql-keyring", "FORCE-FROM-OUTSIDE", "secret-never-recorded", "kmip.example",
}

// fixture materialises testdata/NAME.txtar, the cmdline files (one
// argument a line there) joined with NULs as the kernel writes them.
func fixture(t *testing.T, name string) (hostfs.FS, string) {
	t.Helper()
	fs := hostfstest.Materialise(t, filepath.Join("testdata", name+".txtar"))
	paths, _ := filepath.Glob(fs.ProcPath("*", "cmdline"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(bytes.TrimRight(b, "\n"), []byte("\n"), []byte{0})
		if err := os.WriteFile(p, append(b, 0), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return fs, fs.Root
}

// collectFixture runs the collector and checks what every snapshot must
// hold: it validates, and it carries no secret.
func collectFixture(t *testing.T, fs hostfs.FS) (*snapshot.Snapshot, []byte) {
	t.Helper()
	s := &snapshot.Snapshot{Manifest: snapshot.Manifest{FormatVersion: snapshot.FormatVersion, Tool: "slowpath test"}}
	Collect(fs, s)
	if s.Engines == nil {
		t.Fatalf("no engines section: %+v", s.Manifest.Errors)
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("collected snapshot does not validate: %v", err)
	}
	b, err := json.MarshalIndent(s.Engines, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range secrets {
		if bytes.Contains(b, []byte(sec)) {
			t.Errorf("snapshot carries %q", sec)
		}
	}
	return s, b
}

// devOf is major:minor of the filesystem holding p, as the collector
// writes it.
func devOf(t *testing.T, p string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
}

// TestFixtures: each fixture's engines, exactly (golden JSON; device
// numbers are the test machine's, so they are checked against stat and
// written as "DEV").
func TestFixtures(t *testing.T) {
	for _, name := range []string{"host", "container", "hostile"} {
		t.Run(name, func(t *testing.T) {
			fs, root := fixture(t, name)
			if name == "hostile" {
				writeHostile(t, root)
			}
			s, _ := collectFixture(t, fs)
			dev := devOf(t, root)
			for i := range s.Engines.Processes {
				e := &s.Engines.Processes[i]
				if e.DataDev != "" {
					if e.DataDev != dev {
						t.Errorf("pid %d: data dev %s, want %s (the fixture's filesystem)", e.PID, e.DataDev, dev)
					}
					e.DataDev = "DEV"
				}
				for j := range e.Encryption {
					if x := &e.Encryption[j]; x.Dev != "" {
						if x.Dev != dev {
							t.Errorf("pid %d %s: dev %s, want %s", e.PID, x.Setting, x.Dev, dev)
						}
						x.Dev = "DEV"
					}
				}
			}
			b, err := json.MarshalIndent(s.Engines, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Compare(t, filepath.Join("testdata", name+".json"), append(b, '\n'))
		})
	}
}

// writeHostile adds to the hostile fixture what txtar cannot hold: a
// binary file, a file that is not UTF-8, one over 1 MiB, and an include
// whose path holds a control character.
func writeHostile(t *testing.T, root string) {
	t.Helper()
	etc := filepath.Join(root, "proc/100/root/etc")
	for name, data := range map[string][]byte{
		"mysql/binary.cnf": []byte("[mysqld]\ninnodb_encrypt_log = ON\x00\x01\x02\n"),
		"mysql/latin1.cnf": []byte("[mysqld]\n# caf\xe9\ninnodb_encrypt_log = ON\n"),
		"mysql/huge.cnf":   append([]byte("[mysqld]\ninnodb_encrypt_log = ON\n#"), bytes.Repeat([]byte("x"), 1<<20)...),
	} {
		if err := os.WriteFile(filepath.Join(etc, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(filepath.Join(etc, "my.cnf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("!include /etc/mysql/a\x1b[2Jb.cnf\n"); err != nil {
		t.Fatal(err)
	}
}

// TestHostProcessesAreNotContainers: a process whose root is the host's
// has no Container; one whose root is its own is named by its cgroup's
// container id, or by its pid.
func TestHostProcessesAreNotContainers(t *testing.T) {
	fs, _ := fixture(t, "container")
	s, _ := collectFixture(t, fs)
	got := map[int]string{}
	for _, e := range s.Engines.Processes {
		got[e.PID] = e.Container
	}
	want := map[int]string{700: "4f1c2a3b4c5d", 800: "pid 800 root", 900: "9a8b7c6d5e4f"}
	for pid, c := range want {
		if got[pid] != c {
			t.Errorf("pid %d: container %q, want %q", pid, got[pid], c)
		}
	}
	fs, _ = fixture(t, "host")
	s, _ = collectFixture(t, fs)
	for _, e := range s.Engines.Processes {
		if e.Container != "" {
			t.Errorf("host pid %d: container %q", e.PID, e.Container)
		}
	}
}

// TestNoProc: a tree without /proc is a collection error, not a panic.
func TestNoProc(t *testing.T) {
	s := &snapshot.Snapshot{}
	Collect(hostfs.New(t.TempDir()), s)
	if s.Engines != nil || len(s.Manifest.Errors) != 1 || s.Manifest.Errors[0].Collector != Collector {
		t.Errorf("engines %+v, errors %+v", s.Engines, s.Manifest.Errors)
	}
}

func TestIdentify(t *testing.T) {
	for _, tc := range []struct {
		comm string
		argv []string
		want string
	}{
		{"mariadbd", []string{"/usr/sbin/mariadbd"}, snapshot.EngineMariaDB},
		{"mysqld", []string{"/usr/sbin/mysqld"}, snapshot.EngineMySQL},
		{"postgres", []string{"postgres", "-D", "/x"}, snapshot.EnginePostgreSQL},
		{"mongod", []string{"mongod"}, snapshot.EngineMongoDB},
		{"clickhouse-serv", []string{"/usr/bin/clickhouse-server"}, snapshot.EngineClickHouse},
		{"clickhouse", []string{"/usr/bin/clickhouse", "server"}, snapshot.EngineClickHouse},
		{"clickhouse", []string{"/usr/bin/clickhouse", "client"}, ""},
		{"cockroach", []string{"cockroach", "start-single-node"}, snapshot.EngineCockroachDB},
		{"cockroach", []string{"cockroach", "sql"}, ""},
		{"cockroach", nil, ""},
		{"bash", []string{"mariadbd"}, snapshot.EngineMariaDB},
	} {
		if got := identify(tc.comm, tc.argv, "/nonexistent"); got != tc.want {
			t.Errorf("identify(%q, %q) = %q, want %q", tc.comm, tc.argv, got, tc.want)
		}
	}
}

func TestParseMyCnf(t *testing.T) {
	items, bad := parseMyCnf("[mysqld]\nloose-innodb-encrypt-tables = 'FORCE' # c\nskip-encrypt-binlog\n[mariadb-10.11]\ninnodb_encrypt_log=\"O\\sN\"\nx y\n!include a.cnf\n")
	if bad != 1 || len(items) != 4 {
		t.Fatalf("items %+v, bad %d", items, bad)
	}
	for i, want := range [][3]string{{"mysqld", "innodb_encrypt_tables", "FORCE"}, {"mysqld", "encrypt_binlog", "OFF"}, {"mariadb-10.11", "innodb_encrypt_log", "O N"}} {
		it := items[i]
		n, v := optionName(it.name, it.value, it.bare)
		if it.group != want[0] || n != want[1] || v != want[2] {
			t.Errorf("item %d: [%s] %s=%q, want %v", i, it.group, n, v, want)
		}
	}
	if items[3].kind != cnfInclude || items[3].path != "a.cnf" {
		t.Errorf("include %+v", items[3])
	}
	if !serverGroup("mariadb", "mariadb-10.11") || serverGroup("mysql", "mariadb") || serverGroup("mariadb", "client") || !serverGroup("mysql", "mysqld-8.4") {
		t.Error("serverGroup")
	}
}

func TestParsePostgresConf(t *testing.T) {
	items, bad := parsePostgresConf("a = 'it''s' # c\nB 'x\\'y'\nc=on\nd = 'open\ne = 1 2\n")
	if bad != 2 || len(items) != 3 {
		t.Fatalf("items %+v, bad %d", items, bad)
	}
	if items[0].value != "it's" || items[1].name != "b" || items[1].value != "x'y" || items[2].value != "on" {
		t.Errorf("items %+v", items)
	}
	for v, want := range map[string]bool{"on": true, "t": true, "YES": true, "1": true, "off": false, "o": false, "0": false, "f": false, "": false} {
		if pgBool(v) != want {
			t.Errorf("pgBool(%q) != %v", v, want)
		}
	}
	if !pgLibraries("pg_stat_statements, '$libdir/pg_tde.so'", "pg_tde") && !pgLibraries("pg_stat_statements,$libdir/pg_tde.so", "pg_tde") {
		t.Error("pgLibraries")
	}
}

func TestParseCockroachFlag(t *testing.T) {
	f := parseCockroachFlag("path=/mnt/d,key=/k,old-key=plain,rotation-period=1h")
	if f["path"] != "/mnt/d" || f["key"] != "/k" || f["old-key"] != "plain" {
		t.Errorf("%v", f)
	}
	if f := parseCockroachFlag("/mnt/d"); f["path"] != "/mnt/d" {
		t.Errorf("%v", f)
	}
}

// TestReadsOnlyBelowRoot: the collector's reader resolves links inside the
// process's root, so a link to / names the root itself.
func TestReadsOnlyBelowRoot(t *testing.T) {
	fs, root := fixture(t, "hostile")
	writeHostile(t, root)
	s, b := collectFixture(t, fs)
	if bytes.Contains(b, []byte("outside")) && !strings.Contains(string(b), `outside/secret.cnf\" could not be read`) {
		t.Logf("%s", b)
	}
	for _, e := range s.Engines.Processes {
		for _, x := range e.Encryption {
			if !knownSetting(e.Engine, x.Setting) {
				t.Errorf("pid %d: setting %q is not one the collector knows", e.PID, x.Setting)
			}
		}
	}
}

// TestManySettingsAreBounded: a configuration with more encrypted disks
// than a snapshot takes is cut, with a note, and still validates.
func TestManySettingsAreBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("<clickhouse><storage_configuration><disks>")
	for i := range 100 {
		fmt.Fprintf(&b, "<d%d><type>encrypted</type></d%d>", i, i)
	}
	b.WriteString("</disks></storage_configuration></clickhouse>")
	e := snapshot.Engine{Engine: snapshot.EngineClickHouse, PID: 1, Comm: "clickhouse-serv"}
	r := &reader{files: memFiles{"/etc/clickhouse-server/config.xml": []byte(b.String())}, e: &e}
	collectEngine(r, []string{"clickhouse-server"})
	s := &snapshot.Snapshot{Manifest: snapshot.Manifest{FormatVersion: snapshot.FormatVersion},
		Engines: &snapshot.Engines{Processes: []snapshot.Engine{e}}}
	if err := s.Validate(); err != nil || len(e.Encryption) != maxSettings || len(e.Notes) != 1 {
		t.Errorf("%d settings, notes %q: %v", len(e.Encryption), e.Notes, err)
	}
}

// TestMongoYAMLAliasBomb: a mongod.conf of nested aliases (a "billion
// laughs") is refused quickly, not expanded.
func TestMongoYAMLAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		fmt.Fprintf(&b, "%s: &%s [%s]\n", n, n, strings.TrimSuffix(strings.Repeat("*"+prev+",", 9), ","))
		prev = n
	}
	if _, err := parseMongoYAML([]byte(b.String())); err == nil {
		t.Error("a billion laughs was expanded")
	}
}
