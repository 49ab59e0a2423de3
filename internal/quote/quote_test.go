package quote

import (
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// words parses src with a real POSIX shell parser and returns the literal
// value of each word of its one simple command, failing the test when a
// word expands anything (a parameter, a command substitution, a glob...).
func words(t testing.TB, src string) []string {
	t.Helper()
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(src), "")
	if err != nil {
		t.Fatalf("%q does not parse: %v", src, err)
	}
	if len(f.Stmts) != 1 {
		t.Fatalf("%q: %d statements, want 1", src, len(f.Stmts))
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || f.Stmts[0].Background || len(f.Stmts[0].Redirs) > 0 {
		t.Fatalf("%q is not one simple command", src)
	}
	var out []string
	for _, w := range call.Args {
		var b strings.Builder
		for _, p := range w.Parts {
			switch p := p.(type) {
			case *syntax.Lit:
				v, ok := unescape(p.Value, b.Len() == 0)
				if !ok {
					t.Fatalf("%q: literal %q may expand", src, p.Value)
				}
				b.WriteString(v)
			case *syntax.SglQuoted:
				if p.Dollar {
					t.Fatalf("%q: $'...' is not POSIX", src)
				}
				b.WriteString(p.Value)
			default:
				t.Fatalf("%q: word part %T expands", src, p)
			}
		}
		out = append(out, b.String())
	}
	return out
}

func TestShell(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"eth0", "eth0"},
		{"", "''"},
		{"a;reboot", "'a;reboot'"},
		{"x;touch${IFS}/tmp/PWNED;#", "'x;touch${IFS}/tmp/PWNED;#'"},
		{"it's", `'it'\''s'`},
		{"~root", "'~root'"},
		{"a=b", "'a=b'"},
		{"/sys/block/dm-0", "/sys/block/dm-0"},
	} {
		if got := Shell(tc.in); got != tc.want {
			t.Errorf("Shell(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestShellInDash gives quoted words to the real /bin/sh (dash on Debian)
// and compares the bytes it passes on with the input.
func TestShellInDash(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("no sh: %v", err)
	}
	for _, s := range []string{"a;reboot", "it's", "a\r\nb", "$(id)`id`", "\\", "'", "", "-n", "a\tb\n", "\u00e9\xff"} {
		out, err := exec.Command(sh, "-c", "printf %s "+Shell(s)).Output()
		if err != nil {
			t.Fatalf("sh -c printf %%s %s: %v", Shell(s), err)
		}
		if string(out) != s {
			t.Errorf("Shell(%q) came out of sh as %q", s, out)
		}
	}
}

func FuzzShell(f *testing.F) {
	for _, s := range []string{"eth0", "", "a;reboot", "$(id)", "`id`", "'", "a\nb", "-rf", "*", "~", "a b", "x;touch${IFS}/tmp/PWNED;#"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.IndexByte(s, 0) >= 0 {
			return // no shell word holds NUL; callers refuse it
		}
		if !utf8.ValidString(s) {
			// The parser reads UTF-8 only; inside single quotes a POSIX
			// shell takes every byte but ' literally, so nothing is lost.
			return
		}
		got := words(t, "cmd "+Shells(s, "next"))
		// mvdan.cc/sh reads CR LF as a newline even inside quotes (it
		// accepts Windows line endings); a POSIX shell keeps the CR
		// (TestShellInDash checks that with the real shell).
		want := strings.ReplaceAll(s, "\r\n", "\n")
		if len(got) != 3 || got[1] != want || got[2] != "next" {
			t.Fatalf("Shell(%q) parsed back as %q", s, got)
		}
	})
}

// unescape removes the backslash quoting of an unquoted literal (a
// backslash-newline disappears, a backslash keeps the next character
// literal) and reports false when an unescaped character would expand:
// a glob character, or a tilde at the start of the word.
func unescape(lit string, start bool) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(lit); i++ {
		c := lit[i]
		switch {
		case c == '\\' && i+1 < len(lit):
			i++
			if lit[i] != '\n' {
				b.WriteByte(lit[i])
			}
		case c == '*' || c == '?' || c == '[' || c == '\\':
			return "", false
		case c == '~' && start && i == 0:
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}
