package engine

import (
	"encoding/json"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// memFiles is a process's root in memory, for the fuzzers: a file read
// is its bytes, a directory the names below it.
type memFiles map[string][]byte

func (m memFiles) ReadFile(p string) ([]byte, error) {
	if b, ok := m[p]; ok {
		return b, nil
	}
	return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
}

func (m memFiles) ReadDir(p string) ([]string, error) {
	var out []string
	for k := range m {
		if path.Dir(k) == p {
			out = append(out, path.Base(k))
		}
	}
	if out == nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	return out, nil
}

func (m memFiles) Dev(string) (string, error) { return "8:1", nil }

// sentinel is key material the fuzzers put where each engine keeps a key
// or a key's path: it must never reach the snapshot.
const sentinel = "SENTINELKEY7f3a"

// fuzzEngine runs the collector of engine over files and checks the
// oracles: no panic, a snapshot that validates, no sentinel, and only
// settings the collector knows.
func fuzzEngine(t *testing.T, engine string, argv []string, files memFiles) {
	e := snapshot.Engine{Engine: engine, PID: 1, Comm: "x"}
	r := &reader{files: files, e: &e, cwd: "/srv"}
	collectEngine(r, argv)
	s := &snapshot.Snapshot{Manifest: snapshot.Manifest{FormatVersion: snapshot.FormatVersion},
		Engines: &snapshot.Engines{Processes: []snapshot.Engine{e}}}
	if err := s.Validate(); err != nil {
		t.Fatalf("collected engine does not validate: %v", err)
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), sentinel) {
		t.Fatalf("the key reached the snapshot: %s", b)
	}
	for _, x := range e.Encryption {
		if !knownSetting(engine, x.Setting) {
			t.Fatalf("setting %q is not one the collector knows", x.Setting)
		}
	}
}

// seeds adds the fixtures' files whose name ends in suffix.
func seeds(f *testing.F, suffix string) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for part := range strings.SplitSeq(string(b), "\n-- ") {
			name, body, ok := strings.Cut(part, " --\n")
			if ok && strings.HasSuffix(name, suffix) {
				f.Add([]byte(body))
			}
		}
	}
}

func FuzzMyCnf(f *testing.F) {
	seeds(f, ".cnf")
	f.Add([]byte("[mysqld]\n!include /etc/my.cnf\n!includedir /etc\ninnodb_encrypt_tables='\\"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, engine := range []string{snapshot.EngineMariaDB, snapshot.EngineMySQL} {
			files := memFiles{
				"/etc/my.cnf":             data,
				"/etc/mysql/my.cnf":       []byte("[mariadb]\nfile_key_management_filekey=" + sentinel + "\nfile_key_management_filename=/" + sentinel + "\n"),
				"/usr/sbin/mysqld.my":     data,
				"/etc/mysql/conf.d/x.cnf": data,
			}
			fuzzEngine(t, engine, []string{"/usr/sbin/mysqld", "--file-key-management-filekey=" + sentinel}, files)
		}
	})
}

func FuzzPostgresConf(f *testing.F) {
	seeds(f, ".conf")
	f.Add([]byte("include 'postgresql.conf'\ninclude_dir '.'\nshared_preload_libraries='pg_tde'\npg_tde.wal_encrypt=t"))
	f.Fuzz(func(t *testing.T, data []byte) {
		files := memFiles{
			"/pg/postgresql.conf":      data,
			"/pg/postgresql.auto.conf": data,
			"/pg/conf.d/a.conf":        data,
		}
		fuzzEngine(t, snapshot.EnginePostgreSQL, []string{"postgres", "-D", "/pg", "-c", "ssl_key_file=/" + sentinel}, files)
	})
}

func FuzzMongoYAML(f *testing.F) {
	seeds(f, "mongod.conf")
	f.Add([]byte("security: {enableEncryption: [1], encryptionKeyFile: x}\nstorage: {dbPath: 7}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := append(append([]byte{}, data...), []byte("\n# "+sentinel)...)
		files := memFiles{"/etc/mongod.conf": cfg}
		fuzzEngine(t, snapshot.EngineMongoDB, []string{"mongod", "-f", "/etc/mongod.conf", "--encryptionKeyFile", "/" + sentinel, "--kmipClientCertificatePassword=" + sentinel}, files)
	})
}

func FuzzClickHouseXML(f *testing.F) {
	seeds(f, ".xml")
	f.Add([]byte("<a><storage_configuration><disks><d><type>encrypted</type><disk>x</disk></d></disks></storage_configuration></a>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		files := memFiles{
			"/etc/clickhouse-server/config.xml":     data,
			"/etc/clickhouse-server/config.d/k.xml": []byte("<clickhouse><storage_configuration><disks><e><type>encrypted</type><key>" + sentinel + "</key><key_hex>" + sentinel + "</key_hex></e></disks></storage_configuration></clickhouse>"),
			"/etc/clickhouse-server/config.d/z.xml": data,
		}
		fuzzEngine(t, snapshot.EngineClickHouse, []string{"clickhouse-server"}, files)
	})
}

func FuzzCockroachFlag(f *testing.F) {
	f.Add("path=/mnt/data1,key=/keys/aes-128.key,old-key=plain", "path=/mnt/data1")
	f.Add("key=plain,old-key=plain", "type=mem,size=1GiB")
	f.Add(",,=,path=", "")
	f.Add(strings.Repeat("path=/a,key=/k,", 3), "/s")
	f.Fuzz(func(t *testing.T, enc, store string) {
		for _, argv := range [][]string{
			{"cockroach", "start", "--store=" + store, "--enterprise-encryption=" + enc + ",key=/" + sentinel + ",old-key=/" + sentinel},
			{"cockroach", "start", "--store", store, "--enterprise-encryption", enc},
		} {
			if slices.ContainsFunc(argv, func(a string) bool { return strings.Contains(a, "key="+sentinel) }) {
				continue
			}
			fuzzEngine(t, snapshot.EngineCockroachDB, argv, memFiles{})
		}
	})
}
