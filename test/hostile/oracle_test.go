package hostile_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path"
	"strings"
	"testing"
	"unicode"

	"mvdan.cc/sh/v3/syntax"
	"sigs.k8s.io/yaml"
)

// shellRules say what a generated script may contain.
type shellRules struct {
	commands map[string]bool
	// cmdSubst allows $(...) (the DaemonSet reads the ring back); the
	// commands inside are held to the same list.
	cmdSubst bool
	// script allows what a hand-written script uses: arithmetic, special
	// parameters ($#, $0, $1, $!), loop variables and patterns.
	script bool
}

var planCommands = setOf("set", "sysctl", "ethtool", "mkdir", "cat", "awk", "rm", "mv", "chmod", "dmsetup", "printf", "test", "[", "true", "udevadm", "install", "tee")

// exportCommands are those of bench export's run.sh.
var exportCommands = setOf("set", "[", "echo", "command", "cd", "dirname", "pwd", "mktemp", "trap", "rm", "mkdir", "sed", "fio",
	"kill", "wait", "cat", "grep", "stat", "dd", "date", "basename", "sleep", "break", "true", ":", "exit", "printf", "test")

var daemonSetCommands = setOf("sysctl", "ethtool", "awk", "[", "test", "true", "printf", "set", "mkdir", "date", "mv")

func setOf(xs ...string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// call is one simple command as the shell would run it: the literal value
// of each word, or ok false when a word is not a plain literal.
type call struct {
	args []string
	ok   []bool
}

// checkShell parses script with a real POSIX shell parser, holds every
// command to rules and returns the calls. Word values are computed
// without running anything.
func checkShell(t testing.TB, what, script string, rules shellRules) []call {
	t.Helper()
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(script), "plan.sh")
	if err != nil {
		t.Errorf("%s: the script does not parse: %v\n%s", what, err, excerpt(script))
		return nil
	}
	sh := exec.Command("sh", "-n")
	sh.Stdin = strings.NewReader(script)
	if out, err := sh.CombinedOutput(); err != nil {
		t.Errorf("%s: sh -n: %v %s", what, err, out)
	}
	// Variables the script sets to a literal (a quoted name in a
	// variable is as good as the quoted name), in source order.
	vars := map[string]string{}
	assigned := map[string]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		if w, ok := n.(*syntax.WordIter); ok && w.Name != nil {
			assigned[w.Name.Value] = true
		}
		if a, ok := n.(*syntax.Assign); ok && a.Name != nil {
			assigned[a.Name.Value] = true
			if a.Value != nil {
				if v, ok := wordValue(a.Value, vars); ok {
					vars[a.Name.Value] = v
				}
			}
		}
		return true
	})
	var calls []call
	var problems []string
	syntax.Walk(f, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CmdSubst:
			if !rules.cmdSubst {
				problems = append(problems, "command substitution at "+x.Pos().String())
			}
		case *syntax.ArithmExp, *syntax.ArithmCmd:
			if !rules.script {
				problems = append(problems, fmt.Sprintf("%T at %s", x, x.Pos()))
			}
		case *syntax.ProcSubst, *syntax.ExtGlob:
			problems = append(problems, fmt.Sprintf("%T at %s", x, x.Pos()))
		case *syntax.ParamExp:
			special := x.Param != nil && len(x.Param.Value) == 1 && strings.Contains("#0123456789!?@*$-", x.Param.Value)
			if x.Param == nil || !assigned[x.Param.Value] && !(rules.script && special) {
				problems = append(problems, "expansion of a variable the script never sets at "+x.Pos().String())
			}
		case *syntax.CallExpr:
			if len(x.Args) == 0 {
				return true
			}
			var c call
			for i, w := range x.Args {
				v, ok := wordValue(w, vars)
				if ok && i > 0 && !rules.script && expands(w) {
					problems = append(problems, fmt.Sprintf("unquoted pattern or tilde in %q at %s", v, w.Pos()))
				}
				c.args, c.ok = append(c.args, v), append(c.ok, ok)
			}
			if !c.ok[0] || !rules.commands[c.args[0]] {
				problems = append(problems, fmt.Sprintf("command %q at %s", c.args[0], x.Pos()))
			}
			calls = append(calls, c)
		}
		return true
	})
	if len(problems) > 0 {
		t.Errorf("%s: %s\n%s", what, strings.Join(problems, "; "), excerpt(script))
	}
	return calls
}

func excerpt(s string) string {
	if len(s) > 1500 {
		return s[:1500] + "…"
	}
	return s
}

// wordValue is the value of a word made only of literals, quotes and
// plain expansions of variables in vars. An unquoted expansion counts only
// when splitting and globbing leave its value alone.
func wordValue(w *syntax.Word, vars map[string]string) (string, bool) {
	var b strings.Builder
	param := func(p syntax.WordPart, quoted bool) bool {
		x, ok := p.(*syntax.ParamExp)
		if !ok || x.Param == nil || x.Excl || x.Length || x.Width || x.Index != nil || x.Slice != nil || x.Repl != nil || x.Exp != nil {
			return false
		}
		v, ok := vars[x.Param.Value]
		if !ok || !quoted && strings.ContainsAny(v, " \t\n*?[") {
			return false
		}
		b.WriteString(v)
		return true
	}
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(x.Value, func(byte) bool { return true }))
		case *syntax.SglQuoted:
			if x.Dollar {
				return "", false
			}
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(unescape(l.Value, func(c byte) bool { return strings.IndexByte("$`\"\\\n", c) >= 0 }))
				} else if !param(q, true) {
					return "", false
				}
			}
		default:
			if !param(p, false) {
				return "", false
			}
		}
	}
	return b.String(), true
}

// unescape removes the backslash before each character escapable says it
// quotes (a backslash-newline disappears).
func unescape(s string, escapable func(byte) bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && escapable(s[i+1]) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// expands reports whether the shell would expand an unquoted part of w:
// a pattern character (*, ?, [) or a leading tilde.
func expands(w *syntax.Word) bool {
	for i, p := range w.Parts {
		l, ok := p.(*syntax.Lit)
		if !ok {
			continue
		}
		if i == 0 && strings.HasPrefix(l.Value, "~") {
			return true
		}
		for j := 0; j < len(l.Value); j++ {
			switch l.Value[j] {
			case '\\':
				j++
			case '*', '?', '[':
				return true
			}
		}
	}
	return false
}

// argIs checks that every call of cmd whose first argument is sub (any,
// when sub is "") carries want as the argument at index i (from the end
// when i < 0, anywhere when i == 0), and that there is at least one.
func argIs(t testing.TB, what string, calls []call, cmd, sub string, i int, want string) {
	t.Helper()
	n := 0
	for _, c := range calls {
		if c.args[0] != cmd || (sub != "" && (len(c.args) < 2 || c.args[1] != sub)) {
			continue
		}
		n++
		found := false
		for j := 1; j < len(c.args); j++ {
			at := i == 0 || j == i || i < 0 && j == len(c.args)+i
			if at && c.ok[j] && c.args[j] == want {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: %s %s: want %q as one argument, got the words %q", what, cmd, sub, want, c.args)
		}
	}
	if n == 0 {
		t.Errorf("%s: no %s %s call carries %q", what, cmd, sub, want)
	}
}

// udevKey is one KEY{attr}OP"value" of a udev rule.
type udevKey struct{ key, attr, op, value string }

// parseUdevLine tokenizes a rule line as systemd-udevd does
// (src/udev/udev-rules.c parse_line/parse_value): keys separated by
// commas, values in double quotes, \" an escaped quote, e"..." with C
// escapes.
func parseUdevLine(line string) ([]udevKey, error) {
	var keys []udevKey
	i := 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == ',') {
			i++
		}
		if i >= len(line) {
			return keys, nil
		}
		var k udevKey
		j := i
		for j < len(line) && (line[j] >= 'A' && line[j] <= 'Z' || line[j] == '_') {
			j++
		}
		if j == i {
			return nil, fmt.Errorf("no key at %q", line[i:])
		}
		k.key = line[i:j]
		if j < len(line) && line[j] == '{' {
			e := strings.IndexByte(line[j:], '}')
			if e < 0 {
				return nil, fmt.Errorf("unclosed { in %q", line)
			}
			k.attr, j = line[j+1:j+e], j+e+1
		}
		for j < len(line) && line[j] == ' ' {
			j++
		}
		for _, op := range []string{"==", "!=", "+=", "-=", ":=", "="} {
			if strings.HasPrefix(line[j:], op) {
				k.op, j = op, j+len(op)
				break
			}
		}
		if k.op == "" {
			return nil, fmt.Errorf("no operator after %s", k.key)
		}
		for j < len(line) && line[j] == ' ' {
			j++
		}
		// Prefixes: e (C escapes) and i (case-insensitive match), in
		// either order.
		escaped := false
		for n := 0; n < 2 && j < len(line) && (line[j] == 'e' || line[j] == 'i'); n++ {
			escaped = escaped || line[j] == 'e'
			j++
		}
		if j >= len(line) || line[j] != '"' {
			return nil, fmt.Errorf("value of %s not quoted", k.key)
		}
		j++
		var v strings.Builder
		for {
			if j >= len(line) {
				return nil, fmt.Errorf("unterminated value of %s", k.key)
			}
			c := line[j]
			if c == '"' {
				j++
				break
			}
			if c == '\\' && j+1 < len(line) {
				n := line[j+1]
				switch {
				case n == '"' || n == '\\' && escaped:
					v.WriteByte(n)
					j += 2
					continue
				case escaped && n == 'n':
					v.WriteByte('\n')
					j += 2
					continue
				}
			}
			v.WriteByte(c)
			j++
		}
		k.value = v.String()
		keys = append(keys, k)
		i = j
		if i < len(line) && line[i] != ',' && line[i] != ' ' {
			return nil, fmt.Errorf("junk after the value of %s: %q", k.key, line[i:])
		}
	}
}

// udevMatch are the keys a ring rule may test; RUN is the one it assigns.
var udevMatch = setOf("ACTION", "SUBSYSTEM", "NAME", "KERNEL", "KERNELS", "DRIVER", "DRIVERS", "ATTR", "ATTRS", "ENV")

// checkUdevRing holds a ring rule to one RUN of ethtool on the matched
// interface, and, where it matches by name, to that name exactly.
func checkUdevRing(t testing.TB, what, content, iface string) {
	t.Helper()
	runs := 0
	for _, line := range strings.Split(content, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		keys, err := parseUdevLine(line)
		if err != nil {
			t.Errorf("%s: udev rule %q: %v", what, line, err)
			continue
		}
		for _, k := range keys {
			switch {
			case k.key == "RUN" && (k.op == "+=" || k.op == "="):
				runs++
				f := strings.Fields(k.value)
				if len(f) != 5 || path.Base(f[0]) != "ethtool" || f[1] != "-G" || f[3] != "rx" ||
					!(f[2] == "$name" || f[2] == "%k" || f[2] == "$kernel" || f[2] == "$env{INTERFACE}" || iface != "" && strings.Trim(f[2], `'"`) == iface) {
					t.Errorf("%s: udev RUN %q: want ethtool -G on the matched interface", what, k.value)
				}
			case udevMatch[k.key] && (k.op == "==" || k.op == "!="):
				if iface != "" && (k.key == "NAME" || k.key == "KERNEL") && k.value != iface {
					t.Errorf("%s: udev %s==%q: want the interface name %q exactly", what, k.key, k.value, iface)
				}
			default:
				t.Errorf("%s: udev key %s%s in %q: a ring rule only matches and runs ethtool", what, k.key, k.op, line)
			}
		}
	}
	if runs != 1 {
		t.Errorf("%s: %d RUN keys in the udev rule, want 1:\n%s", what, runs, content)
	}
}

// checkSysctlConf holds a sysctl.d file to comments and key = value lines.
func checkSysctlConf(t testing.TB, what, content string) {
	t.Helper()
	for _, line := range strings.Split(content, "\n") {
		l := strings.TrimSpace(line)
		if l == "" || l[0] == '#' || l[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" || strings.ContainsAny(k, " \t") {
			t.Errorf("%s: sysctl.d line %q: want KEY = VALUE", what, line)
		}
	}
}

// checkPersistPath: a file a plan would write is an absolute, clean path
// under /etc.
func checkPersistPath(t testing.TB, what, p string) {
	t.Helper()
	if !strings.HasPrefix(p, "/etc/") || path.Clean(p) != p || strings.ContainsAny(p, "\x00\n") {
		t.Errorf("%s: file %q is not a clean path under /etc", what, p)
	}
}

// decodeJSON decodes out or fails.
func decodeJSON(t testing.TB, what, out string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Errorf("%s: output is not JSON: %v\n%s", what, err, excerpt(out))
		return nil
	}
	return v
}

// strings collects every string value (and object key) of a decoded document.
func stringsOf(v any, out *[]string) {
	switch x := v.(type) {
	case string:
		*out = append(*out, x)
	case []any:
		for _, e := range x {
			stringsOf(e, out)
		}
	case map[string]any:
		for k, e := range x {
			*out = append(*out, k)
			stringsOf(e, out)
		}
	}
}

// hasValue reports whether doc holds a string equal to want (exact) or
// containing it.
func hasValue(doc any, want string, exact bool) bool {
	var all []string
	stringsOf(doc, &all)
	for _, s := range all {
		if s == want || !exact && strings.Contains(s, want) {
			return true
		}
	}
	return false
}

// field walks a decoded document by keys and indexes ("*" for every element).
func fieldValues(v any, path ...string) []any {
	if len(path) == 0 {
		return []any{v}
	}
	var out []any
	switch x := v.(type) {
	case map[string]any:
		if e, ok := x[path[0]]; ok {
			out = append(out, fieldValues(e, path[1:]...)...)
		}
	case []any:
		if path[0] == "*" {
			for _, e := range x {
				out = append(out, fieldValues(e, path[1:]...)...)
			}
		}
	}
	return out
}

// checkNoControl: text for a terminal carries no control character but
// newline and tab (an escape sequence rewrites the screen).
func checkNoControl(t testing.TB, what, out string) {
	t.Helper()
	for i, r := range out {
		if r != '\n' && r != '\t' && (unicode.IsControl(r) || r == '\u2028' || r == '\u2029') {
			t.Errorf("%s: control character %U at byte %d: %s", what, r, i, short(out[max(0, i-60):min(len(out), i+20)]))
			return
		}
	}
}

// checkHTML: a value with markup never appears raw in HTML.
func checkHTML(t testing.TB, what, out, value string) {
	t.Helper()
	if strings.ContainsAny(value, "<>&\"") && strings.Contains(out, value) {
		t.Errorf("%s: %q appears unescaped in the HTML", what, value)
	}
	for i, r := range out {
		if r == 0 || r == '\ufffe' || r == '\uffff' || r < 0x20 && r != '\n' && r != '\t' && r != '\r' {
			t.Errorf("%s: character %U at byte %d is not allowed in HTML/XML", what, r, i)
			return
		}
	}
}

// checkKubernetes decodes the objects and holds the DaemonSet's script to
// the shell rules. It returns the script's calls (nil for an empty List).
func checkKubernetes(t testing.TB, what, out string) ([]call, bool) {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(out))
	if err != nil {
		t.Errorf("%s: not YAML: %v\n%s", what, err, excerpt(out))
		return nil, false
	}
	var obj struct {
		Kind string `json:"kind"`
		Spec struct {
			Template struct {
				Spec struct {
					InitContainers []struct {
						Command []string `json:"command"`
					} `json:"initContainers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(j, &obj); err != nil {
		t.Errorf("%s: %v", what, err)
		return nil, false
	}
	if obj.Kind == "List" {
		return nil, false
	}
	ic := obj.Spec.Template.Spec.InitContainers
	if obj.Kind != "DaemonSet" || len(ic) != 1 || len(ic[0].Command) != 5 || ic[0].Command[3] != "-ec" {
		t.Errorf("%s: want a DaemonSet whose init container runs chroot /host /bin/sh -ec SCRIPT:\n%s", what, excerpt(out))
		return nil, false
	}
	return checkShell(t, what+" (DaemonSet script)", ic[0].Command[4], shellRules{commands: daemonSetCommands, cmdSubst: true}), true
}
