package vm

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/cli"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testing/golden"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// DatabaseEnv runs TestDatabaseFourWay, by hand: its boot carries MariaDB
// and sysbench (about 68 MB more initramfs) and runs four database
// benchmarks and a lab under TCG, 2-4 minutes that make test's budget
// cannot give one scenario.
const DatabaseEnv = "SLOWPATH_VM_DATABASE"

// fourWaySides are the four-way comparison's sides (docs/bench.md), in
// compare's order (each against none), with the profile each runs and the
// encryption layers compare must name for it.
var fourWaySides = []struct {
	name, profile, layers string
	engine, crypt         bool
}{
	{"none", "mariadb-oltp", "0", false, false},
	{"engine", "mariadb-oltp:encrypted", "1: engine mariadb (tables logs temp; service CPU)", true, false},
	{"luks", "mariadb-oltp", "1: dm-crypt (kernel-cpu)", false, true},
	{"both", "mariadb-oltp:encrypted", "2: engine mariadb (tables logs temp; service CPU), dm-crypt (kernel-cpu)", true, true},
}

// fourWayDir keeps the last real run: the four result files and compare's
// table of them.
const fourWayDir = "testdata/database-four-way"

// mariadbGuest is what the database profiles need in the guest besides
// slowpath: MariaDB's server, installer (a shell script), the
// my_print_defaults and resolveip it runs, the key management plugin of
// the encrypted run, sysbench, and their data: the installer's SQL files,
// error messages and character sets (/usr/share/mysql in Debian's
// mariadb-server-core) and sysbench's Lua scripts.
var mariadbGuest = struct{ programs, trees []string }{
	programs: []string{"/usr/sbin/mariadbd", "/usr/bin/mariadb-install-db", "/usr/bin/my_print_defaults", "/usr/bin/resolveip",
		"/usr/lib/mysql/plugin/file_key_management.so", "/usr/bin/sysbench"},
	trees: []string{"/usr/share/mysql", "/usr/share/sysbench"},
}

// fourWayScript runs the four sides on one brd ramdisk: ext4 on it for
// none and engine, then LUKS2 on it and ext4 on that for luks and both.
// The ramdisk is 704 MiB: the profile's free-space check asks for its
// 512 MiB (InnoDB's system tablespace and redo log) plus the rows, and
// brd allocates only what is written. A failed bench does not stop the
// script: its exit status and output come back for the report.
const fourWayScript = prelude + `
spb() { env PATH=/bin:/usr/bin:/usr/sbin /usr/bin/slowpath "$@"; }
run() {
	echo "vm: phase $1 ($2)"
	rc=0
	spb bench $2 --dir /mnt/db --scale 0.01 --runtime 5s --cloud none -o /results/$1.json > /results/$1.txt 2>&1 || rc=$?
	echo $rc > /results/$1.rc
	ls -A /mnt/db | grep -v '^lost+found$' >> /results/left.txt || true
}
modprobe brd rd_nr=1 rd_size=720896
mkdir -p /mnt/db
mke2fs -q -t ext4 /dev/ram0
mount -t ext4 /dev/ram0 /mnt/db
run none mariadb-oltp
run engine mariadb-oltp:encrypted
umount /mnt/db
cryptsetup luksFormat --type luks2 --batch-mode --pbkdf pbkdf2 --pbkdf-force-iterations 1000 --key-file /root/pass /dev/ram0
cryptsetup open --key-file /root/pass /dev/ram0 db
mke2fs -q -t ext4 /dev/mapper/db
mount -t ext4 /dev/mapper/db /mnt/db
run luks mariadb-oltp
run both mariadb-oltp:encrypted
umount /mnt/db
cryptsetup close db
rmmod brd
# lab crypt on the database profile: its server's user must enter the
# lab's mount (/run/slowpath/cryptlab/mnt-ID/SIDE).
echo "vm: phase lab crypt"
rc=0
env PATH=/usr/sbin:/usr/bin:/sbin:/bin /usr/bin/slowpath lab crypt --profile mariadb-oltp --fs ext4 --variants default \
	--scale 0.01 --runs 1 --runtime 5s --format json > /results/lab.json 2> /results/lab.err || rc=$?
echo $rc > /results/lab.rc
grep -c /run/slowpath/cryptlab /proc/self/mountinfo > /results/lab.mounts || true
ls -d /run/slowpath/cryptlab/mnt-* 2>/dev/null | wc -l > /results/lab.dirs
stat -c '%a %n' /run/slowpath /run/slowpath/cryptlab > /results/lab.modes
`

// TestDatabaseFourWay is the four-way comparison of issue 42 from real
// runs: slowpath bench mariadb-oltp and mariadb-oltp:encrypted in the
// guest, on ext4 over a brd ramdisk (none, engine) and on ext4 over LUKS2
// over it (luks, both), then compare on the host. The four results must
// validate, each side's encryption layers must be its own (none 0, engine
// the engine's, luks dm-crypt, both the engine's over dm-crypt) and
// compare's table must name them. Last, lab crypt runs mariadb-oltp on
// its own ext4, plain and default: its server's user must reach the
// lab's mount. Run by hand: SLOWPATH_VM_DATABASE=1;
// SLOWPATH_UPDATE=1 as well keeps the run in testdata/database-four-way.
// Under TCG the figures are functional evidence, not performance.
func TestDatabaseFourWay(t *testing.T) {
	testenv.ByHand(t, DatabaseEnv, "MariaDB in the guest, four database runs and a lab under TCG")
	t.Parallel()
	onKernels(t, fullSet, testDatabaseFourWay)
}

func testDatabaseFourWay(t *testing.T, k *kernelLab) {
	for _, p := range mariadbGuest.programs {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%v: apt-get install mariadb-server sysbench", err)
		}
	}
	res := boot(t, k, Scenario{Name: "database-four-way", Timeout: 20 * time.Minute, MemoryMiB: 3072,
		Programs: mariadbGuest.programs, Trees: mariadbGuest.trees,
		Files: map[string][]byte{
			// As root the server runs as mysql; Go's user lookup reads
			// /etc/passwd.
			"/etc/passwd": []byte("root:x:0:0:root:/root:/bin/sh\nmysql:x:104:108:MariaDB Server:/nonexistent:/bin/false\n"),
			"/etc/group":  []byte("root:x:0:\nmysql:x:108:\n"),
			// mariadb-install-db looks up the host name, then localhost,
			// with resolveip and stops when neither resolves; the guest
			// has no network and no name service but these.
			"/etc/hosts":         []byte("127.0.0.1\tlocalhost\n"),
			"/etc/nsswitch.conf": []byte("hosts: files\n"),
			"/root/pass":         []byte(randomHex(t, 16)),
		},
		Script: fourWayScript})
	if left := strings.TrimSpace(string(res.Files["left.txt"])); left != "" {
		t.Errorf("bench left %q in /mnt/db", left)
	}
	dir := t.TempDir()
	var files []string
	for _, s := range fourWaySides {
		t.Logf("%s (%s) in the guest, exit %s:\n%s", s.name, s.profile, bytes.TrimSpace(res.Files[s.name+".rc"]), res.Files[s.name+".txt"])
		p := filepath.Join(dir, s.name+".json")
		if err := os.WriteFile(p, res.Files[s.name+".json"], 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	if t.Failed() {
		return
	}
	checkFourWay(t, readFourWay(t, dir))
	cmd := exec.Command(slowpath, append([]string{"compare"}, files...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	// compare exits 1 when a side is significantly worse: a verdict, not
	// a failure.
	if ee := (*exec.ExitError)(nil); err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		t.Fatalf("slowpath compare: %v\n%s", err, out)
	}
	t.Logf("slowpath compare on the host:\n%s", out)
	checkCompareNamesLayers(t, string(out))
	t.Run("lab-crypt", func(t *testing.T) { checkLabDatabase(t, res) })
	if os.Getenv("SLOWPATH_UPDATE") != "" && !t.Failed() {
		for _, s := range fourWaySides {
			if err := os.WriteFile(filepath.Join(fourWayDir, s.name+".json"), res.Files[s.name+".json"], 0o644); err != nil {
				t.Fatal(err)
			}
		}
		code, out := compareRecord()
		if code > 1 {
			t.Fatalf("compare of the kept run exited %d:\n%s", code, out)
		}
		if err := os.WriteFile(filepath.Join(fourWayDir, "compare.txt"), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("kept the run in %s", fourWayDir)
	}
}

// compareRecord runs compare on the kept run as a person would from this
// directory: slowpath compare testdata/database-four-way/none.json ...
func compareRecord() (code int, stdout string) {
	args := []string{"compare"}
	for _, s := range fourWaySides {
		args = append(args, filepath.Join(fourWayDir, s.name+".json"))
	}
	var out, errb bytes.Buffer
	code = cli.Run(&clienv.Env{Stdout: &out, Stderr: &errb, FS: hostfs.Default(), Version: "test"}, args)
	return code, out.String() + errb.String()
}

// checkLabDatabase: lab crypt ran mariadb-oltp on ext4 plain and under
// dm-crypt, its server as mysql below the lab's mount, and left nothing
// mounted; the lab's directories are enterable, not listable.
func checkLabDatabase(t *testing.T, res *Result) {
	t.Logf("lab crypt's progress (TCG):\n%s", res.Files["lab.err"])
	if rc := strings.TrimSpace(string(res.Files["lab.rc"])); rc != "0" && rc != "1" {
		t.Fatalf("lab crypt --profile mariadb-oltp exited %s", rc)
	}
	if m, d := strings.TrimSpace(string(res.Files["lab.mounts"])), strings.TrimSpace(string(res.Files["lab.dirs"])); m != "0" || d != "0" {
		t.Errorf("lab crypt left %s mounts and %s mount directories", m, d)
	}
	if got, want := string(res.Files["lab.modes"]), "711 /run/slowpath\n711 /run/slowpath/cryptlab\n"; got != want {
		t.Errorf("lab directories:\n%s\nwant\n%s", got, want)
	}
	var r struct {
		Sides []struct {
			Name string
			Runs int
		}
		NotRun []struct{ Name, Reason string } `json:"not_run"`
		Rows   []struct {
			Metric string
			Sides  []struct{ Median float64 }
		}
	}
	if err := json.Unmarshal(res.Files["lab.json"], &r); err != nil {
		t.Fatalf("lab crypt JSON: %v\n%s", err, res.Files["lab.json"])
	}
	var sides []string
	for _, s := range r.Sides {
		sides = append(sides, s.Name)
		if s.Runs != 1 {
			t.Errorf("side %s has %d runs, want 1", s.Name, s.Runs)
		}
	}
	if len(r.NotRun) != 0 || !slices.Equal(sides, []string{"plain", "default"}) {
		t.Errorf("sides %v, not run %+v; want plain and default run", sides, r.NotRun)
	}
	for _, row := range r.Rows {
		if row.Metric == "tps" {
			t.Logf("lab crypt tps medians (TCG, functional) %v: %+v", sides, row.Sides)
			for i, s := range row.Sides {
				if !(s.Median > 0) {
					t.Errorf("side %s: tps %v", sides[i], s.Median)
				}
			}
			return
		}
	}
	t.Errorf("no tps row: %s", res.Files["lab.json"])
}

// readFourWay reads the four sides' results from dir, each validated.
func readFourWay(t *testing.T, dir string) []*benchresult.Result {
	t.Helper()
	var rs []*benchresult.Result
	for _, s := range fourWaySides {
		b, err := os.ReadFile(filepath.Join(dir, s.name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := benchresult.Read(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		rs = append(rs, r)
	}
	return rs
}

// checkFourWay: each side ran to the end with its profile's settings, on
// the storage its side names, and its encryption layers are its own.
func checkFourWay(t *testing.T, rs []*benchresult.Result) {
	t.Helper()
	for i, s := range fourWaySides {
		r := rs[i]
		if r.Status != benchresult.StatusComplete || r.Profile != "mariadb-oltp" {
			t.Errorf("%s: profile %s, status %s: %s", s.name, r.Profile, r.Status, r.Error)
		}
		if want := map[bool]string{true: "on", false: "off"}[s.engine]; r.Parameters.Settings["engine_encryption"] != want {
			t.Errorf("%s: engine_encryption %q, want %s", s.name, r.Parameters.Settings["engine_encryption"], want)
		}
		if f, ok := r.Figure("oltp", "tps"); !ok || !(f.Value > 0) {
			t.Errorf("%s: no transactions: %+v", s.name, f)
		}
		st := r.Environment.Target
		if st == nil || st.Storage == nil || st.FSType != "ext4" {
			t.Fatalf("%s: target %+v", s.name, st)
		}
		if want := map[bool]int{true: 1, false: 0}[s.crypt]; st.Storage.EncryptionLayers != want {
			t.Errorf("%s: %d encryption layers below the engine, want %d", s.name, st.Storage.EncryptionLayers, want)
		}
		side, err := comparison.FromResults(s.name, []string{s.name + ".json"}, []*benchresult.Result{r})
		if err != nil {
			t.Fatal(err)
		}
		var layers string
		for _, f := range side.Facts {
			if f.Key == "encryption layers" {
				layers = f.Value
			}
		}
		if layers != s.layers {
			t.Errorf("%s: encryption layers %q, want %q", s.name, layers, s.layers)
		}
	}
}

// checkCompareNamesLayers: compare's table has the four sides, none
// first, and its "encryption layers" row names each side's layers.
func checkCompareNamesLayers(t *testing.T, out string) {
	t.Helper()
	if !strings.HasPrefix(out, "slowpath compare: none vs engine vs luks vs both\n") {
		t.Errorf("compare's title is not the four sides in order:\n%s", out)
	}
	var row string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "encryption layers") {
			row = l
		}
	}
	for _, s := range fourWaySides {
		if !strings.Contains(row, s.layers) {
			t.Errorf("compare's encryption layers row lacks %s's %q:\n%s", s.name, s.layers, row)
		}
	}
}

// TestFourWayRecord checks the kept real run (testdata/database-four-way,
// from TestDatabaseFourWay with SLOWPATH_UPDATE=1) on every make test: the
// results still decode and validate, each side's layers are its own, and
// compare renders them as compare.txt, with each side's layers named.
func TestFourWayRecord(t *testing.T) {
	checkFourWay(t, readFourWay(t, fourWayDir))
	code, out := compareRecord()
	if code > 1 {
		t.Fatalf("compare exited %d:\n%s", code, out)
	}
	checkCompareNamesLayers(t, out)
	golden.Compare(t, filepath.Join(fourWayDir, "compare.txt"), []byte(out))
}
