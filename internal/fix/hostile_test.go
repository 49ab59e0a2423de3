package fix

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/tools/txtar"
	appsv1 "k8s.io/api/apps/v1"
	"mvdan.cc/sh/v3/syntax"
	"sigs.k8s.io/yaml"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/quote"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// hostileNames are strings a snapshot from someone else may hold as an
// interface or dm name. The kernel accepts several as interface names
// (dev_valid_name forbids only /, :, whitespace and names over 15 bytes);
// the plan must not trust that anyone checked.
var hostileNames = []string{
	"a;reboot", "$(id)", "`id`", "x;touch${IFS}/tmp/PWNED;#", "../../etc/x", "-rf",
	"it's", `a\`, "a\nreboot", "*", "a b", "EOF", "-- /etc/passwd --", "é", "a|b",
}

// hostilePlan is the plan of three failing findings whose fixes name iface
// and dm: a sysctl, a ring and a dm-crypt mapping that is not LUKS2.
func hostilePlan(t testing.TB, iface, dm string) *Plan {
	t.Helper()
	from := int64(1000)
	// The kernel release is data too: it is in the script's first comment.
	s := &snapshot.Snapshot{Host: &snapshot.Host{KernelRelease: "6.1.0-" + iface}}
	p, err := Build(s, []check.Finding{
		{ID: "net.backlog-drops", Status: check.Fail, Subject: iface,
			Fix: &check.Fix{Sysctls: []check.SysctlChange{{Key: "net.core.netdev_max_backlog", From: &from, To: 2000}}}},
		{ID: "net.ring-undersized", Status: check.Fail, Subject: iface,
			Fix: &check.Fix{Rings: []check.RingChange{{Interface: iface, RXFrom: 256, RX: 4096, RXMax: 4096}}}},
		{ID: "dmcrypt.workqueue", Status: check.Fail, Subject: "/dev/mapper/" + dm,
			Fix: &check.Fix{Crypt: &check.CryptChange{Name: dm, Format: "plain", Add: []string{"no_read_workqueue"}, Keep: []string{dm}}}},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// literal is the value of a word that expands nothing; ok is false for any
// parameter, command substitution, arithmetic or unquoted glob.
func literal(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			for i := 0; i < len(p.Value); i++ {
				c := p.Value[i]
				switch {
				case c == '\\' && i+1 < len(p.Value):
					i++
					if p.Value[i] != '\n' {
						b.WriteByte(p.Value[i])
					}
				case c == '*' || c == '?' || c == '[' || c == '\\' || (c == '~' && b.Len() == 0):
					return "", false
				default:
					b.WriteByte(c)
				}
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		default:
			return "", false
		}
	}
	return b.String(), true
}

// shape writes a statement as text in which every word is its literal
// value (%q), failing on anything that could expand: two scripts have the
// same shape only if they run the same commands with the same arguments.
func shape(t testing.TB, st *syntax.Stmt) string {
	t.Helper()
	word := func(w *syntax.Word) string {
		v, ok := literal(w)
		if !ok {
			var b strings.Builder
			syntax.NewPrinter().Print(&b, w)
			t.Fatalf("word %s expands", b.String())
		}
		return fmt.Sprintf("%q", v)
	}
	var cmd func(c syntax.Command) string
	cmd = func(c syntax.Command) string {
		switch c := c.(type) {
		case *syntax.CallExpr:
			var parts []string
			for _, a := range c.Assigns {
				if a.Value == nil || a.Append || a.Naked || a.Index != nil || a.Array != nil {
					t.Fatalf("unexpected assignment form %s", a.Name.Value)
				}
				parts = append(parts, a.Name.Value+"="+word(a.Value))
			}
			for _, a := range c.Args {
				parts = append(parts, word(a))
			}
			return strings.Join(parts, " ")
		case *syntax.BinaryCmd:
			// A chain of one operator is one list, however it nests.
			var parts []string
			var flat func(st *syntax.Stmt)
			flat = func(st *syntax.Stmt) {
				if b, ok := st.Cmd.(*syntax.BinaryCmd); ok && b.Op == c.Op && len(st.Redirs) == 0 {
					flat(b.X)
					flat(b.Y)
					return
				}
				parts = append(parts, shapeStmt(t, st, word, cmd))
			}
			flat(c.X)
			flat(c.Y)
			return "(" + strings.Join(parts, " "+c.Op.String()+" ") + ")"
		}
		t.Fatalf("unexpected command %T", c)
		return ""
	}
	return shapeStmt(t, st, word, cmd)
}

func shapeStmt(t testing.TB, st *syntax.Stmt, word func(*syntax.Word) string, cmd func(syntax.Command) string) string {
	if st.Background || st.Coprocess || st.Negated {
		t.Fatalf("statement runs in the background or negated")
	}
	s := cmd(st.Cmd)
	for _, r := range st.Redirs {
		switch r.Op {
		case syntax.RdrOut:
			s += " >" + word(r.Word)
		case syntax.Hdoc:
			// With a quoted delimiter the body is one literal, taken
			// as it is (no backslash processing).
			var body strings.Builder
			if r.Hdoc != nil {
				for _, p := range r.Hdoc.Parts {
					l, ok := p.(*syntax.Lit)
					if !ok {
						t.Fatalf("here-document expands")
					}
					body.WriteString(l.Value)
				}
			}
			if len(r.Word.Parts) != 1 {
				t.Fatalf("here-document delimiter is not one word part")
			}
			if _, quoted := r.Word.Parts[0].(*syntax.SglQuoted); !quoted {
				t.Fatalf("here-document delimiter not quoted")
			}
			s += fmt.Sprintf(" <<%q", body.String())
		default:
			t.Fatalf("unexpected redirection %s", r.Op)
		}
	}
	return s
}

// shapes parses a script with a real POSIX shell parser and returns the
// shape of each statement.
func shapes(t testing.TB, script string) []string {
	t.Helper()
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(script), "")
	if err != nil {
		t.Fatalf("script does not parse: %v\n%s", err, script)
	}
	var out []string
	for _, st := range f.Stmts {
		out = append(out, shape(t, st))
	}
	return out
}

// wantShapes is what the shell script of hostilePlan(iface, dm) must run:
// each name exactly one argument of its command, nothing else.
func wantShapes(p *Plan, iface, dm string) []string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	call := func(words ...string) string {
		var parts []string
		for _, w := range words {
			parts = append(parts, q(w))
		}
		return strings.Join(parts, " ")
	}
	want := []string{call("set", "-eu"), call("sysctl", "-w", "net.core.netdev_max_backlog=2000")}
	file := func(f File) {
		want = append(want, call("mkdir", "-p", filepath.Dir(f.Path)), call("cat")+" >"+q(f.Path)+" <<"+q(f.Content))
	}
	file(File{Path: "/etc/sysctl.d/60-slowpath-net-backlog-drops.conf",
		Content: "# Written by slowpath fix for net.backlog-drops.\n# was 1000\nnet.core.netdev_max_backlog = 2000\n"})
	want = append(want, call("ethtool", "-G", iface, "rx", "4096"))
	if _, err := quote.Udev(iface); err == nil {
		file(File{Path: "/etc/udev/rules.d/60-slowpath-ring-" + quote.PathComponent(iface) + ".rules", Content: p.Entries[1].Files[0].Content})
	}
	prog := p.Entries[2].Steps[0].Command
	prog = prog[strings.Index(prog, "awk '")+len("awk '") : strings.Index(prog, "' | dmsetup reload")]
	want = append(want, "(("+call("dmsetup", "table", "--showkeys", "--", dm)+" | "+call("awk", prog)+" | "+
		call("dmsetup", "reload", "--", dm)+") && "+call("dmsetup", "resume", "--", dm)+")")
	if _, err := quote.Crypttab(dm); err == nil {
		edit := crypttabEdit(p.Entries[2].Files[0])
		edit = edit[strings.Index(edit, "awk '")+len("awk '") : strings.Index(edit, "' /etc/crypttab")]
		want = append(want, "(n="+q(dm)+" o="+q("no-read-workqueue")+" "+call("awk", edit, "/etc/crypttab")+" >"+q("/etc/crypttab.new")+
			" && "+call("cat", "/etc/crypttab.new")+" >"+q("/etc/crypttab")+" && "+call("rm", "/etc/crypttab.new")+")")
	}
	return want
}

// checkHostileShell asserts the shell format of hostilePlan(iface, dm)
// runs exactly the expected commands and that its udev rule, when
// written, matches iface and nothing else.
func checkHostileShell(t testing.TB, iface, dm string) string {
	t.Helper()
	p := hostilePlan(t, iface, dm)
	script := Shell(p)
	if first := strings.SplitN(script, "\n", 3)[1]; first != "# slowpath fix plan for kernel 6.1.0-"+quote.Comment(iface)+"." {
		t.Fatalf("title comment %q", first)
	}
	got := shapes(t, script)
	want := wantShapes(p, iface, dm)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("iface %q dm %q: script runs\n%s\nwant\n%s\nscript:\n%s", iface, dm, strings.Join(got, "\n"), strings.Join(want, "\n"), script)
	}
	if fs := p.Entries[1].Files; len(fs) == 1 {
		rule := fs[0].Content[strings.Index(fs[0].Content, "\nACTION")+1:]
		wantRule := fmt.Sprintf("ACTION==\"add\", SUBSYSTEM==\"net\", NAME==\"%s\", RUN+=\"/usr/sbin/ethtool -G $name rx 4096\"\n", iface)
		if rule != wantRule || strings.Count(fs[0].Content, "\n") != 2 {
			t.Fatalf("udev rule for %q:\n%s", iface, fs[0].Content)
		}
	} else if !strings.Contains(p.Entries[1].NotApplicable, "no udev rule written") {
		t.Fatalf("udev rule for %q neither written nor refused: %+v", iface, p.Entries[1])
	}
	return script
}

func TestHostileNamesShell(t *testing.T) {
	sh := testenv.RequireTool(t, "sh", "dash")
	for _, name := range hostileNames {
		script := checkHostileShell(t, name, name)
		if out, err := exec.Command(sh, "-n", "-c", script).CombinedOutput(); err != nil {
			t.Errorf("%q: sh -n: %v: %s\n%s", name, err, out, script)
		}
	}
}

// Every golden shell plan passes the real shell's syntax check.
func TestGoldenShellSyntax(t *testing.T) {
	sh := testenv.RequireTool(t, "sh", "dash")
	files, err := filepath.Glob("testdata/*.plan.sh")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden scripts: %v", err)
	}
	for _, f := range files {
		if out, err := exec.Command(sh, "-n", f).CombinedOutput(); err != nil {
			t.Errorf("%s: sh -n: %v: %s", f, err, out)
		}
	}
}

// The udev rule refuses a name udev cannot hold and says which character
// and what to run instead; the runtime step stays.
func TestHostileUdevRefused(t *testing.T) {
	p := hostilePlan(t, "x;touch${IFS}/tmp/PWNED;#", "data")
	e := p.Entries[1]
	if len(e.Steps) != 1 || len(e.Files) != 0 {
		t.Fatalf("want the runtime step and no file: %+v", e)
	}
	for _, want := range []string{"no udev rule written", `character '$'`, "run ethtool -G 'x;touch${IFS}/tmp/PWNED;#' rx 4096 at boot instead"} {
		if !strings.Contains(e.NotApplicable, want) {
			t.Errorf("reason %q lacks %q", e.NotApplicable, want)
		}
	}
	p = hostilePlan(t, "eth0", "a b")
	if e := p.Entries[2]; len(e.Files) != 0 || !strings.Contains(e.NotApplicable, "no /etc/crypttab options written") || !strings.Contains(e.NotApplicable, "character ' '") {
		t.Errorf("crypttab for %q: %+v", "a b", e)
	}
}

// The files and Kubernetes formats hold each hostile name as data: the
// txtar archive has exactly the expected sections, the DaemonSet decodes
// and its script runs ethtool with the name as one argument.
func TestHostileNamesFilesAndKubernetes(t *testing.T) {
	sh := testenv.RequireTool(t, "sh", "dash")
	for _, name := range hostileNames {
		p := hostilePlan(t, name, name)
		b, err := Files(p)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		a := txtar.Parse(b)
		want := []string{"/etc/sysctl.d/60-slowpath-net-backlog-drops.conf"}
		if _, err := quote.Udev(name); err == nil {
			want = append(want, "/etc/udev/rules.d/60-slowpath-ring-"+quote.PathComponent(name)+".rules")
		}
		var got []string
		for _, f := range a.Files {
			got = append(got, f.Name)
			if !bytes.Equal(f.Data, []byte(contentOf(p, f.Name))) {
				t.Errorf("%q: section %s differs from the plan", name, f.Name)
			}
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%q: txtar sections %q, want %q", name, got, want)
		}

		y, err := Kubernetes(p, KubernetesOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var ds appsv1.DaemonSet
		if err := yaml.UnmarshalStrict(y, &ds); err != nil {
			t.Fatalf("%q: %v\n%s", name, err, y)
		}
		c := ds.Spec.Template.Spec.InitContainers[0].Command
		script := c[len(c)-1]
		if out, err := exec.Command(sh, "-n", "-c", script).CombinedOutput(); err != nil {
			t.Errorf("%q: sh -n: %v: %s\n%s", name, err, out, script)
		}
		if calls := ethtoolCalls(t, script); len(calls) != 2 || calls[0] != fmt.Sprintf("%q", []string{"ethtool", "-G", name, "rx", "4096"}) ||
			calls[1] != fmt.Sprintf("%q", []string{"ethtool", "-g", name}) {
			t.Errorf("%q: DaemonSet ethtool calls %q\n%s", name, calls, script)
		}
	}
}

func contentOf(p *Plan, path string) string {
	for _, e := range p.Entries {
		for _, f := range e.Files {
			if f.Path == path {
				return f.Content
			}
		}
	}
	return "(none)"
}

// ethtoolCalls lists every ethtool command of script, anywhere (inside
// if, ||, command substitutions), as its literal argument vector.
func ethtoolCalls(t *testing.T, script string) []string {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(script), "")
	if err != nil {
		t.Fatalf("%v\n%s", err, script)
	}
	var out []string
	syntax.Walk(f, func(n syntax.Node) bool {
		c, ok := n.(*syntax.CallExpr)
		if !ok || len(c.Args) == 0 {
			return true
		}
		if v, _ := literal(c.Args[0]); v != "ethtool" {
			return true
		}
		var args []string
		for _, w := range c.Args {
			v, ok := literal(w)
			if !ok {
				t.Errorf("ethtool argument expands in\n%s", script)
			}
			args = append(args, v)
		}
		out = append(out, fmt.Sprintf("%q", args))
		return true
	})
	return out
}

// FuzzPlanShellNames feeds random interface and dm names through plan
// building and shell rendering: the script must run exactly the expected
// statements, with each name one argument of its command.
func FuzzPlanShellNames(f *testing.F) {
	for _, n := range hostileNames {
		f.Add(n, n)
	}
	f.Add("eth0", "data")
	f.Fuzz(func(t *testing.T, iface, dm string) {
		for _, s := range []string{iface, dm} {
			if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) || strings.Contains(s, "\r\n") {
				// The parser reads UTF-8 without NUL, and folds CR LF
				// into a newline even inside quotes; inside single
				// quotes every other byte is literal to a POSIX shell
				// (quote's TestShellInDash checks CR LF in real sh).
				return
			}
		}
		checkHostileShell(t, iface, dm)
	})
}

func TestPathComponent(t *testing.T) {
	for in, want := range map[string]string{
		"eth0":       "eth0",
		"enP30832s1": "enP30832s1",
		"eth0.100":   "eth0.100",
		"a;reboot":   "a%3Breboot",
		"..":         "%2E.",
		".x":         "%2Ex",
		"../../x":    "%2E.%2F..%2Fx",
		"a%b":        "a%25b",
		"é":          "%C3%A9",
		"":           "",
	} {
		if got := quote.PathComponent(in); got != want {
			t.Errorf("quote.PathComponent(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzPathComponent: the result is one path component of safe bytes that
// needs no shell quoting, and it decodes back to the input (two names
// never share a file).
func FuzzPathComponent(f *testing.F) {
	for _, s := range []string{"eth0", "..", ".", "a/b", "a%2Fb", "\x00", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := quote.PathComponent(s)
		if s == "" {
			if got != "" {
				t.Fatalf("quote.PathComponent(\"\") = %q", got)
			}
			return
		}
		if got == "" || got == "." || got == ".." || got[0] == '.' {
			t.Fatalf("quote.PathComponent(%q) = %q", s, got)
		}
		for i := 0; i < len(got); i++ {
			c := got[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_-.%", c) >= 0) {
				t.Fatalf("quote.PathComponent(%q) = %q holds %q", s, got, c)
			}
		}
		if quote.Shell(got) != got || filepath.Base(got) != got {
			t.Fatalf("quote.PathComponent(%q) = %q is not one plain word and component", s, got)
		}
		var b strings.Builder
		for i := 0; i < len(got); i++ {
			if got[i] == '%' {
				var c byte
				if _, err := fmt.Sscanf(got[i+1:i+3], "%02X", &c); err != nil {
					t.Fatalf("quote.PathComponent(%q) = %q: bad escape", s, got)
				}
				b.WriteByte(c)
				i += 2
				continue
			}
			b.WriteByte(got[i])
		}
		if b.String() != s {
			t.Fatalf("quote.PathComponent(%q) = %q decodes to %q", s, got, b.String())
		}
	})
}

// The cryptsetup refresh printed to run by hand takes the kept flags and
// the name from the table: each is one word.
func TestRefreshCommandQuoted(t *testing.T) {
	for _, name := range hostileNames {
		cmd := check.RefreshCommand(&check.CryptChange{Name: name, Add: []string{"no_read_workqueue"}, Keep: []string{name}}, true)
		got := shapes(t, cmd)
		want := fmt.Sprintf("%q %q %q %q %q %q %q", "cryptsetup", "refresh", "--perf-no_read_workqueue", "--perf-"+name, "--persistent", "--", name)
		if len(got) != 1 || got[0] != want {
			t.Errorf("%q: %q, want %s", name, got, want)
		}
	}
}
