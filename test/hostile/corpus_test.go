package hostile_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// update rewrites testdata/hostile (snapshots and README.md) from the
// tables below, as the golden files are rewritten:
// SLOWPATH_UPDATE=1 go test ./test/hostile -run TestCorpusInSync
var update = os.Getenv("SLOWPATH_UPDATE") == "1"

// Expected outcomes.
const (
	// refused: the kernel could never produce the value (or the input
	// cannot be confined): exit 2 and an error naming the field or option.
	refused = "refused"
	// quoted: the value is valid on a real host: the command succeeds and
	// every artifact carries the value as one quoted word.
	quoted = "quoted"
	// either: a rule could reasonably go both ways (a lossy or control
	// character the kernel allows): a named refusal or a safe success.
	either = "either"
)

// Roles say which field a snapshot case makes hostile, so the oracle
// knows where the value must come back as exactly one argument.
const (
	roleIface    = "iface"    // net.interfaces[].name → ethtool, udev rule, DaemonSet
	roleDM       = "dm"       // storage.block_devices[].dm.name → dmsetup, crypttab
	roleBlock    = "block"    // storage.block_devices[].name → reports
	roleMount    = "mount"    // storage.mounts[].mount_point → reports
	roleSysctl   = "sysctl"   // net.sysctls key → reports, diff
	roleKernel   = "kernel"   // host.kernel_release → plan header, reports
	roleHostname = "hostname" // manifest.hostname → reports
	roleInstance = "instance" // cloud instance type → findings, cloud commands
	roleMessage  = "message"  // manifest.errors[].message → reports
)

// base fixtures, chosen so the hostile value reaches a finding, a plan
// entry and a report.
const (
	baseRing  = "net-azure-accelnet.json"   // net.ring-undersized on enP30832s1, sysctl fixes
	baseCrypt = "aws-i4i-luks-default.json" // dmcrypt.workqueue on scratch, mounts, cloud
	baseNet   = "net-aws-ena.json"          // sysctl fix, sysctl map
)

// snapCase is one hostile snapshot: base with every string equal to Orig
// (values and object keys) replaced by the JSON string literal Hostile,
// then Set applied.
type snapCase struct {
	File    string
	Base    string
	Role    string
	Orig    string
	Hostile string // a JSON string literal, written as is (escapes kept)
	Set     map[string]string
	Expect  string
	Why     string
}

// field names the role's JSON field, as the README and the errors say it.
var field = map[string]string{
	roleIface:    "net.interfaces[].name",
	roleDM:       "storage.block_devices[].dm.name",
	roleBlock:    "storage.block_devices[].name",
	roleMount:    "storage.mounts[].mount_point",
	roleSysctl:   "net.sysctls (key)",
	roleKernel:   "host.kernel_release",
	roleHostname: "manifest.hostname",
	roleInstance: "cloud.instance_type",
	roleMessage:  "manifest.errors[].message",
}

// fieldHint is what a refusal must name: the field, in any reasonable
// spelling (|-separated).
var fieldHint = map[string]string{
	roleIface:    "interface",
	roleDM:       "dm",
	roleBlock:    "block",
	roleMount:    "mount",
	roleSysctl:   "sysctl",
	roleKernel:   "kernel",
	roleHostname: "hostname",
	roleInstance: "instance",
	roleMessage:  "error|message",
}

// ringIface: the udev rule matches by NAME only without bus info, so the
// hostile cases clear it and the name reaches the rule text.
var ringIface = map[string]string{"net.interfaces.1.bus_info": `""`}

// plainCrypt makes scratch a plain dm-crypt device, so the plan keeps the
// flags in /etc/crypttab (LUKS2 keeps them in its header).
var plainCrypt = map[string]string{"storage.block_devices.5.dm.uuid": `"CRYPT-PLAIN-0a9b8c7d6e5f40312233445566778899"`}

func iface(file, lit, expect, why string) snapCase {
	return snapCase{File: file, Base: baseRing, Role: roleIface, Orig: "enP30832s1", Hostile: lit, Set: ringIface, Expect: expect, Why: why}
}

func dm(file, lit, expect, why string) snapCase {
	return snapCase{File: file, Base: baseCrypt, Role: roleDM, Orig: "scratch", Hostile: lit, Set: plainCrypt, Expect: expect, Why: why}
}

func onCrypt(role, orig, file, lit, expect, why string) snapCase {
	return snapCase{File: file, Base: baseCrypt, Role: role, Orig: orig, Hostile: lit, Expect: expect, Why: why}
}

// snapCases: the kernel's rules are net/core/dev.c dev_valid_name() for
// interfaces (not empty, not "." or "..", at most IFNAMSIZ-1 = 15 bytes,
// no '/', ':' or isspace()), drivers/md/dm-ioctl.c check_name() for dm
// names (no '/', not "." or ".."; anything else, newline included), and
// absolute clean paths without NUL for mount points.
var snapCases = []snapCase{
	iface("iface-semicolon.json", `"a;reboot"`, quoted, "command separator, valid interface name"),
	iface("iface-cmdsubst.json", `"$(id)"`, quoted, "command substitution"),
	iface("iface-backquote.json", "\"`id`\"", quoted, "backquote command substitution"),
	iface("iface-quote.json", `"x'y"`, quoted, "single quote inside the name"),
	iface("iface-dash.json", `"-rf"`, quoted, "reads as an option"),
	iface("iface-glob.json", `"*"`, quoted, "pathname expansion"),
	iface("iface-tilde.json", `"~root"`, quoted, "tilde expansion"),
	iface("iface-hash.json", `"#x"`, quoted, "starts a shell comment"),
	iface("iface-udev-run.json", `"a\",RUN+=\"id"`, quoted, "double quotes: a second RUN key in the udev rule"),
	iface("iface-backslash.json", `"a\\b"`, quoted, "backslash"),
	iface("iface-dollar-name.json", `"$name"`, quoted, "parameter expansion (and udev's own $name)"),
	iface("iface-15-bytes.json", `"abcdefghijklmno"`, quoted, "15 bytes, the longest valid name"),
	iface("iface-16-bytes.json", `"abcdefghijklmnop"`, refused, "16 bytes: over IFNAMSIZ-1"),
	iface("iface-slash.json", `"a/b"`, refused, "'/'"),
	iface("iface-dotdot.json", `"../../x"`, refused, "'../' path traversal"),
	iface("iface-escape-root.json", `"x/../../../../../hostile-escape"`, refused, "leaves --path.rootfs by one directory"),
	iface("iface-pwned.json", `"x;touch${IFS}/tmp/PWNED;#"`, refused, "the issue's example: '/' and 25 bytes"),
	iface("iface-colon.json", `"a:b"`, refused, "':' (alias syntax)"),
	iface("iface-space.json", `"a b"`, refused, "space"),
	iface("iface-tab.json", `"a\tb"`, refused, "tab"),
	iface("iface-newline.json", `"a\nreboot"`, refused, "newline"),
	iface("iface-nul.json", `"a\u0000b"`, refused, "NUL"),
	iface("iface-empty.json", `""`, refused, "empty name"),
	iface("iface-dot.json", `"."`, refused, "'.'"),
	iface("iface-dotdot-only.json", `".."`, refused, "'..'"),
	iface("iface-non-utf8.json", `"a\udcff"`, either, "lone surrogate: non-UTF-8 bytes, decoded as U+FFFD"),
	iface("iface-escape-seq.json", `"a\u001b[2J"`, either, "terminal escape sequence (valid for the kernel)"),

	dm("dm-semicolon.json", `"a;reboot"`, quoted, "command separator"),
	dm("dm-cmdsubst.json", `"$(id)"`, quoted, "command substitution"),
	dm("dm-backquote.json", "\"`id`\"", quoted, "backquote"),
	dm("dm-quote.json", `"x'y"`, quoted, "single quote"),
	dm("dm-dash.json", `"-rf"`, quoted, "reads as an option"),
	dm("dm-slash.json", `"../x"`, refused, "'/'"),
	dm("dm-dotdot.json", `".."`, refused, "'..'"),
	dm("dm-empty.json", `""`, refused, "empty name"),
	dm("dm-nul.json", `"a\u0000b"`, refused, "NUL"),
	dm("dm-129-bytes.json", strconv.Quote(strings.Repeat("d", 129)), refused, "over DM_NAME_LEN-1 (127) bytes"),
	dm("dm-newline.json", `"a\nreboot"`, either, "newline (the kernel allows it)"),
	dm("dm-space.json", `"a b"`, either, "space (the kernel allows it; crypttab cannot hold it)"),

	onCrypt(roleBlock, "nvme1n1", "block-dotdot.json", `"../../x"`, refused, "'/' in a kernel block device name"),
	onCrypt(roleBlock, "nvme1n1", "block-nul.json", `"nvme\u00001"`, refused, "NUL"),
	onCrypt(roleBlock, "nvme1n1", "block-semicolon.json", `"nvme1n1;reboot"`, either, "command separator"),

	onCrypt(roleMount, "/data", "mount-semicolon.json", `"/data;reboot"`, quoted, "command separator"),
	onCrypt(roleMount, "/data", "mount-cmdsubst.json", `"/data/$(id)"`, quoted, "command substitution"),
	onCrypt(roleMount, "/data", "mount-space.json", `"/mnt/my data"`, quoted, "space (mountinfo's \\040)"),
	onCrypt(roleMount, "/data", "mount-html.json", `"/data/<b>x</b>"`, quoted, "markup in the HTML report"),
	onCrypt(roleMount, "/data", "mount-relative.json", `"data"`, refused, "relative"),
	onCrypt(roleMount, "/data", "mount-unclean.json", `"/data/../etc"`, refused, "not clean ('..')"),
	onCrypt(roleMount, "/data", "mount-nul.json", `"/data\u0000x"`, refused, "NUL"),
	onCrypt(roleMount, "/data", "mount-newline.json", `"/data\nx"`, either, "newline (mountinfo's \\012)"),

	{File: "sysctl-traversal.json", Base: baseNet, Role: roleSysctl, Orig: "net.core.somaxconn", Hostile: `"../../../etc/shadow"`, Expect: refused, Why: "path traversal in a sysctl key"},
	{File: "sysctl-newline.json", Base: baseNet, Role: roleSysctl, Orig: "net.core.somaxconn", Hostile: `"net.core.x\nnet.core.y"`, Expect: refused, Why: "newline in a sysctl key"},
	{File: "sysctl-semicolon.json", Base: baseNet, Role: roleSysctl, Orig: "net.core.somaxconn", Hostile: `"net.ipv4.conf.a;reboot.rp_filter"`, Expect: either, Why: "an interface name inside a per-interface sysctl key"},

	onCrypt(roleKernel, "6.1.115-126.197.amzn2023.x86_64", "kernel-cmdsubst.json", `"6.1.0-$(id)"`, quoted, "command substitution in uname -r"),
	onCrypt(roleKernel, "6.1.115-126.197.amzn2023.x86_64", "kernel-newline.json", `"6.1.0\nreboot"`, either, "newline: ends the plan's comment line"),
	onCrypt(roleKernel, "6.1.115-126.197.amzn2023.x86_64", "kernel-escape-seq.json", `"6.1.0\u001b[2J"`, either, "terminal escape sequence"),

	onCrypt(roleHostname, "fixture", "hostname-cmdsubst.json", `"$(id)"`, quoted, "command substitution"),
	onCrypt(roleHostname, "fixture", "hostname-html.json", `"<script>alert(1)</script>"`, quoted, "markup in the HTML report"),
	onCrypt(roleHostname, "fixture", "hostname-newline.json", `"host\nreboot"`, either, "newline"),
	onCrypt(roleHostname, "fixture", "hostname-escape-seq.json", `"host\u001b]0;x\u0007"`, either, "terminal escape sequence (sets the title)"),

	onCrypt(roleInstance, "i4i.2xlarge", "instance-semicolon.json", `"i4i.2xlarge;reboot"`, quoted, "command separator in metadata"),
	onCrypt(roleInstance, "i4i.2xlarge", "instance-html.json", `"<img/src=x/onerror=alert(1)>"`, quoted, "markup in the HTML report"),
	onCrypt(roleInstance, "i4i.2xlarge", "instance-newline.json", `"i4i.2xlarge\nreboot"`, either, "newline"),

	{File: "message-html.json", Base: baseCrypt, Role: roleMessage, Hostile: `"<script>alert(1)</script> $(id)"`, Expect: quoted, Why: "markup and command substitution in a collector error",
		Set: map[string]string{"manifest.errors": `[{"collector": "storage.dm", "path": "/dev/mapper/control", "kind": "permission", "message": @HOSTILE@}]`}},
	{File: "message-control.json", Base: baseCrypt, Role: roleMessage, Hostile: `"line one\nline two\u001b[2J\u0000"`, Expect: either, Why: "newline, escape sequence and NUL in a collector error",
		Set: map[string]string{"manifest.errors": `[{"collector": "storage.dm", "path": "/dev/mapper/control", "kind": "permission", "message": @HOSTILE@}]`}},
}

// value is the hostile string as a decoder sees it.
func (c snapCase) value(t testing.TB) string {
	var s string
	if err := json.Unmarshal([]byte(c.Hostile), &s); err != nil {
		t.Fatalf("%s: hostile literal %s: %v", c.File, c.Hostile, err)
	}
	return s
}

// fioCase is a job file under testdata/hostile/fio. @OUT@ in it stands for
// a directory outside --dir that the test owns, so an unconfined job file
// can only ever write into the test's own temporary directory.
type fioCase struct {
	File   string
	Option string // what a refusal must name
	Expect string
	Why    string
}

var fioCases = []fioCase{
	{"ok.fio", "", quoted, "control: one small file inside the run's directory"},
	{"filename-colon.fio", "filename", refused, "fio's ':' file list: a second file outside --dir"},
	{"filename-abs.fio", "filename", refused, "absolute filename"},
	{"filename-env.fio", "filename", refused, "${HOME} expanded by fio"},
	{"filename-format.fio", "filename_format", refused, "absolute filename_format"},
	{"directory-abs.fio", "directory", refused, "absolute directory"},
	{"directory-colon.fio", "directory", refused, "':' directory list with an absolute member"},
	{"directory-relative.fio", "directory", refused, "../.. leaves the run's directory"},
	{"opendir.fio", "opendir", refused, "opendir outside --dir"},
	{"write-bw-log.fio", "write_bw_log", refused, "log written outside --dir"},
	{"write-lat-log.fio", "write_lat_log", refused, "relative log path that climbs out"},
	{"write-iolog.fio", "write_iolog", refused, "I/O log written outside --dir"},
	{"read-iolog.fio", "read_iolog", refused, "replays a log from outside --dir"},
	{"replay-redirect.fio", "replay_redirect", refused, "redirects replayed I/O to another file or device"},
	{"include.fio", "include", refused, "include of a job file outside --dir"},
	{"exec-prerun.fio", "exec_prerun", refused, "runs a program before the job"},
	{"exec-postrun.fio", "exec_postrun", refused, "runs a program after the job"},
	{"ioengine-net.fio", "ioengine", refused, "network engine"},
	{"ioengine-external.fio", "ioengine", refused, "loads a shared object from outside --dir"},
}

// fioNames are job file names: ok.fio is copied under each at test time
// (a name with a newline is no file to commit). The name reaches bench's
// result (profile fio:NAME) and bench export's run.sh and README.
var fioNames = []struct{ Name, Expect, Why string }{
	{"a;b.fio", either, "command separator"},
	{"$(touch PWNED).fio", either, "command substitution"},
	{"`id`.fio", either, "backquote"},
	{"x'y.fio", either, "single quote"},
	{"-rf.fio", either, "reads as an option"},
	{"x\ntouch PWNED\n.fio", either, "newline: a line of its own in run.sh's header comment"},
}

// sideCase is a compare side name (testdata/hostile/compare-sides.json).
type sideCase struct {
	Name   string `json:"name"`
	Expect string `json:"expect"`
	Why    string `json:"why"`
}

// corpusRoot is testdata/hostile of the module.
func corpusRoot(t testing.TB) string {
	t.Helper()
	return filepath.Join(testenv.ModuleRoot(t), "testdata", "hostile")
}

// render builds one hostile snapshot from its base fixture.
func (c snapCase) render(t testing.TB) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(t), "testdata", "hosts", c.Base))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%s: %v", c.Base, err)
	}
	const marker = "@HOSTILE@"
	n := 0
	if c.Orig != "" {
		doc = replace(doc, c.Orig, marker, &n)
		if n == 0 {
			t.Fatalf("%s: %q not found in %s", c.File, c.Orig, c.Base)
		}
	}
	keys := make([]string, 0, len(c.Set))
	for k := range c.Set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var v any
		lit := strings.ReplaceAll(c.Set[k], marker, strconv.Quote(marker))
		if err := json.Unmarshal([]byte(lit), &v); err != nil {
			t.Fatalf("%s: set %s: %v", c.File, k, err)
		}
		if err := set(doc, strings.Split(k, "."), v); err != nil {
			t.Fatalf("%s: set %s: %v", c.File, k, err)
		}
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	out = bytes.ReplaceAll(out, []byte(strconv.Quote(marker)), []byte(c.Hostile))
	return append(out, '\n')
}

func replace(v any, orig, with string, n *int) any {
	switch x := v.(type) {
	case string:
		if x == orig {
			*n++
			return with
		}
	case []any:
		for i := range x {
			x[i] = replace(x[i], orig, with, n)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = replace(e, orig, with, n)
			if k == orig {
				*n++
				x[with] = x[k]
				delete(x, k)
			}
		}
	}
	return v
}

func set(v any, path []string, to any) error {
	for i, p := range path {
		last := i == len(path)-1
		switch x := v.(type) {
		case map[string]any:
			if last {
				x[p] = to
				return nil
			}
			if _, ok := x[p]; !ok {
				x[p] = map[string]any{}
			}
			v = x[p]
		case []any:
			j, err := strconv.Atoi(p)
			if err != nil || j < 0 || j >= len(x) {
				return fmt.Errorf("index %s out of range", p)
			}
			if last {
				x[j] = to
				return nil
			}
			v = x[j]
		default:
			return fmt.Errorf("%s: not an object or array", p)
		}
	}
	return nil
}

// readme is testdata/hostile/README.md, generated from the tables.
func readme(t testing.TB, sides []sideCase) []byte {
	var b bytes.Buffer
	b.WriteString(`# Hostile inputs

Inputs nobody here wrote, for ` + "`test/hostile`" + ` (docs/testing.md): each is run through
every command that accepts it. Generated with
` + "`SLOWPATH_UPDATE=1 go test ./test/hostile -run TestCorpusInSync`" + ` from the tables in
test/hostile/corpus_test.go (edit those, not this file).

Outcomes: **refused** — exit 2 and an error that names the field or option (the
kernel could never produce the value, or the job file cannot be confined);
**quoted** — success, and the value comes back as one quoted word in every
script, rule, file and report; **either** — one of the two, never anything else.

## Snapshots (snapshots/)

Each starts from a fixture in testdata/hosts, so the value reaches a finding, a
plan entry and a report. The value is shown as its JSON string literal.

| file | base | field | value | what is hostile | expected |
|---|---|---|---|---|---|
`)
	cell := func(s string) string {
		s = strings.ReplaceAll(s, "|", `\|`)
		if strings.Contains(s, "`") {
			return "``" + " " + s + " " + "``"
		}
		return "`" + s + "`"
	}
	for _, c := range snapCases {
		fmt.Fprintf(&b, "| snapshots/%s | %s | %s | %s | %s | %s |\n", c.File, c.Base, field[c.Role], cell(c.Hostile), strings.ReplaceAll(c.Why, "|", `\|`), c.Expect)
	}
	b.WriteString(`
## fio job files (fio/)

` + "`@OUT@`" + ` stands for a directory outside ` + "`--dir`" + `: the test replaces it with one of its own
temporary directories, so an unconfined file can never write anywhere else.

| file | option a refusal names | what is hostile | expected |
|---|---|---|---|
`)
	for _, c := range fioCases {
		fmt.Fprintf(&b, "| fio/%s | %s | %s | %s |\n", c.File, c.Option, c.Why, c.Expect)
	}
	b.WriteString(`
## fio job file names

` + "`fio/ok.fio`" + ` copied under each name by the test, for ` + "`bench fio:NAME`" + ` and
` + "`bench export fio:NAME`" + ` (every fio file above goes through ` + "`bench export`" + ` too).

| name (JSON) | what is hostile | expected |
|---|---|---|
`)
	for _, n := range fioNames {
		q, _ := json.Marshal(n.Name)
		fmt.Fprintf(&b, "| %s | %s | %s |\n", cell(string(q)), n.Why, n.Expect)
	}
	b.WriteString(`
## compare side names (compare-sides.json)

Each is given as ` + "`NAME=RESULT.json`" + ` and as ` + "`--target NAME=DIR`" + ` (with ` + "`--save`" + `).
Besides these, the test gives the same result file twice (by name and by content).

| name (JSON) | what is hostile | expected |
|---|---|---|
`)
	for _, s := range sides {
		q, _ := json.Marshal(s.Name)
		fmt.Fprintf(&b, "| %s | %s | %s |\n", cell(string(q)), s.Why, s.Expect)
	}
	return b.Bytes()
}

func loadSides(t testing.TB) []sideCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpusRoot(t), "compare-sides.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s []sideCase
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("compare-sides.json: %v", err)
	}
	return s
}

// TestCorpusInSync: the committed corpus is what the tables generate, and
// every file under testdata/hostile has a row.
func TestCorpusInSync(t *testing.T) {
	root := corpusRoot(t)
	want := map[string][]byte{}
	for _, c := range snapCases {
		want[filepath.Join("snapshots", c.File)] = c.render(t)
	}
	sides := loadSides(t)
	want["README.md"] = readme(t, sides)
	if update {
		if err := os.MkdirAll(filepath.Join(root, "snapshots"), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range want {
			if err := os.WriteFile(filepath.Join(root, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, b := range want {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Errorf("%v (run with SLOWPATH_UPDATE=1)", err)
			continue
		}
		if !bytes.Equal(got, b) {
			t.Errorf("testdata/hostile/%s differs from what corpus_test.go generates (run with SLOWPATH_UPDATE=1)", name)
		}
	}
	for _, c := range fioCases {
		want[filepath.Join("fio", c.File)] = nil
	}
	want["compare-sides.json"] = nil
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if _, ok := want[rel]; !ok {
			t.Errorf("testdata/hostile/%s has no row in corpus_test.go", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sides {
		if s.Expect != refused && s.Expect != quoted && s.Expect != either {
			t.Errorf("compare-sides.json: %q: expect %q", s.Name, s.Expect)
		}
	}
}
