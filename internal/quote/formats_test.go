package quote

import (
	"errors"
	"path"
	"strings"
	"testing"
	"unicode/utf8"
)

// parseUdevValue reads a double-quoted udev value the way systemd's
// udev_rule_parse_value does for a value without the e prefix: up to the
// first " not preceded by a backslash, with \" unescaped. It returns the
// value and the rest of the line.
func parseUdevValue(t testing.TB, line string) (string, string) {
	t.Helper()
	if !strings.HasPrefix(line, `"`) {
		t.Fatalf("%q: value does not start with a double quote", line)
	}
	var b strings.Builder
	for i := 1; i < len(line); i++ {
		switch {
		case line[i] == '"':
			return b.String(), line[i+1:]
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '"':
			i++
		case line[i] == '\n':
			t.Fatalf("%q: newline inside the value ends the rule", line)
		}
		b.WriteByte(line[i])
	}
	t.Fatalf("%q: value not closed", line)
	return "", ""
}

func TestUdev(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		char     string // the refused character, when refused
	}{
		{"eth0", `"eth0"`, ""},
		{"0000:00:05.0", `"0000:00:05.0"`, ""},
		{"a;reboot", `"a;reboot"`, ""},
		{"x;touch${IFS}/tmp/PWNED;#", "", `'$'`},
		{"$(id)", "", `'$'`},
		{"`id`", "\"`id`\"", ""},
		{"eth*", "", `'*'`},
		{"a|b", "", `'|'`},
		{"a[0]", "", `'['`},
		{"a?", "", `'?'`},
		{`a"b`, "", `'"'`},
		{`a\`, "", `'\\'`},
		{"a\nACTION==\"add\"", "", `'\n'`},
		{"%k", "", `'%'`},
		{"", "", ""},
		{"é\xff", "\"é\xff\"", ""},
	} {
		got, err := Udev(tc.in)
		var ue *UnsafeError
		switch {
		case tc.want != "" && (err != nil || got != tc.want):
			t.Errorf("Udev(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		case tc.want == "" && !errors.As(err, &ue):
			t.Errorf("Udev(%q) = %q, %v; want an UnsafeError", tc.in, got, err)
		case tc.want == "" && ue.Char != tc.char:
			t.Errorf("Udev(%q) refused %s, want %s (%v)", tc.in, ue.Char, tc.char, err)
		}
	}
}

func FuzzUdev(f *testing.F) {
	for _, s := range []string{"eth0", "", "a;reboot", "$(id)", "`id`", `"`, `\`, "a\nb", "*", "|", "x;touch${IFS}/tmp/PWNED;#", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Udev(s)
		refuse := s == "" || strings.ContainsAny(s, "\"\\*?[|$%\x7f")
		for i := 0; i < len(s); i++ {
			refuse = refuse || s[i] < 0x20
		}
		if refuse {
			var ue *UnsafeError
			if !errors.As(err, &ue) {
				t.Fatalf("Udev(%q) = %q, %v: want a refusal", s, got, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Udev(%q): %v", s, err)
		}
		v, rest := parseUdevValue(t, got+`, RUN+="x"`)
		if v != s || rest != `, RUN+="x"` {
			t.Fatalf("Udev(%q) = %s reads back as %q, rest %q", s, got, v, rest)
		}
	})
}

func TestCrypttab(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		char     string
	}{
		{"data", "data", ""},
		{"luks-0b1c", "luks-0b1c", ""},
		{"a;reboot", "a;reboot", ""},
		{"a b", "", `' '`},
		{"a\tb", "", `'\t'`},
		{"a\nb", "", `'\n'`},
		{`a\040b`, "", `'\\'`},
		{"#data", "", `'#'`},
		{"a#b", "a#b", ""},
		{`a"b`, "", `'"'`},
		{"", "", ""},
	} {
		got, err := Crypttab(tc.in)
		var ue *UnsafeError
		switch {
		case tc.want != "" && (err != nil || got != tc.want):
			t.Errorf("Crypttab(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		case tc.want == "" && !errors.As(err, &ue):
			t.Errorf("Crypttab(%q) = %q, %v; want an UnsafeError", tc.in, got, err)
		case tc.want == "" && ue.Char != tc.char:
			t.Errorf("Crypttab(%q) refused %s, want %s (%v)", tc.in, ue.Char, tc.char, err)
		}
	}
	if _, err := CrypttabOption("a,b"); err == nil || !strings.Contains(err.Error(), "crypttab option") {
		t.Errorf("CrypttabOption(a,b): %v", err)
	}
	if got, err := CrypttabOption("no-read-workqueue"); err != nil || got != "no-read-workqueue" {
		t.Errorf("CrypttabOption(no-read-workqueue) = %q, %v", got, err)
	}
}

// FuzzCrypttab writes an accepted field into a crypttab line and reads the
// line back as both readers do: strings.Fields (systemd, Debian's read)
// and Debian's octal decoding, which must find nothing to decode.
func FuzzCrypttab(f *testing.F) {
	for _, s := range []string{"data", "", "a b", "#x", `a\040`, "a\nb", "a;reboot", "'", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Crypttab(s)
		if err != nil {
			if !strings.Contains(err.Error(), "crypttab field") {
				t.Fatalf("Crypttab(%q): unnamed error %v", s, err)
			}
			ok := s == "" || s[0] == '#' || strings.ContainsAny(s, " \t\\\"'\x7f")
			for i := 0; i < len(s); i++ {
				ok = ok || s[i] < 0x20
			}
			if !ok {
				t.Fatalf("Crypttab(%q) refused a writable field: %v", s, err)
			}
			return
		}
		line := got + " /dev/sdb none discard\n"
		// Split as the readers do: systemd's WHITESPACE and the shell's
		// IFS are ASCII; U+2000 and friends are part of a field to both.
		f := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' })
		if len(f) != 4 || f[0] != s || strings.HasPrefix(f[0], "#") || strings.Contains(f[0], `\`) || strings.Count(line, "\n") != 1 {
			t.Fatalf("Crypttab(%q) = %q reads back as %q", s, got, f)
		}
	})
}

func TestSysctlKey(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"net.core.netdev_max_backlog", true},
		{"net.ipv4.conf.eth-0.rp_filter", true},
		{"vm.swappiness", true},
		{"", false},
		{"-net.core.x", false},
		{"net..core", false},
		{"net.core.", false},
		{".net", false},
		{"net/core/x", false},
		{"net.core.*", false},
		{"net.core.x=1", false},
		{"net.core.x = 1\nkernel.sysrq", false},
		{"net.-x", false},
	} {
		got, err := SysctlKey(tc.in)
		if tc.ok != (err == nil) || (tc.ok && got != tc.in) {
			t.Errorf("SysctlKey(%q) = %q, %v; want ok=%v", tc.in, got, err, tc.ok)
		}
	}
}

// FuzzSysctlKey: an accepted key is one "key = value" token for
// systemd-sysctl (no leading -, no glob, no /, no =, no whitespace) and
// names a file under /proc/sys.
func FuzzSysctlKey(f *testing.F) {
	for _, s := range []string{"net.core.rmem_max", "", "..", "a..b", "-a", "a/b", "a*", "a=b", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := SysctlKey(s)
		if err != nil {
			return // refusing is always safe; TestSysctlKey pins what must pass
		}
		if got != s {
			t.Fatalf("SysctlKey(%q) = %q", s, got)
		}
		if strings.ContainsAny(s, "*?[/= \t\r\n\\#;") || strings.HasPrefix(s, "-") {
			t.Fatalf("SysctlKey(%q) accepted a character systemd-sysctl interprets", s)
		}
		p := path.Join("/proc/sys", strings.ReplaceAll(s, ".", "/"))
		if !strings.HasPrefix(p, "/proc/sys/") || p != "/proc/sys/"+strings.ReplaceAll(s, ".", "/") {
			t.Fatalf("SysctlKey(%q) names %s", s, p)
		}
	})
}

func TestComment(t *testing.T) {
	for in, want := range map[string]string{
		"plain text":                  "plain text",
		"net.backlog-drops on eth0":   "net.backlog-drops on eth0",
		"a\nrm -rf /":                 `a\nrm -rf /`,
		"a\r\n":                       `a\r\n`,
		"nul\x00":                     `nul\x00`,
		"bad \xff utf8":               `bad \xff utf8`,
		"line\u2028sep":               `line\u2028sep`,
		"next\u0085line":              `next\u0085line`,
		`ends with \`:                 `ends with \x5c`,
		`cryptsetup refresh 'a'\''b'`: `cryptsetup refresh 'a'\''b'`,
		"é ✓":                         "é ✓",
	} {
		if got := Comment(in); got != want {
			t.Errorf("Comment(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzComment: the result is one line of valid UTF-8 without control
// characters or a trailing backslash, it is s itself when s already was,
// and every character of s that needs no escape is still there, in order.
func FuzzComment(f *testing.F) {
	for _, s := range []string{"", "a\nb", "\\", "\xff", "\u2028", "a\\nb", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Comment(s)
		if !utf8.ValidString(got) || strings.HasSuffix(got, `\`) {
			t.Fatalf("Comment(%q) = %q", s, got)
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 {
				t.Fatalf("Comment(%q) = %q keeps %U", s, got, r)
			}
		}
		if commentSafe(s) {
			if got != s {
				t.Fatalf("Comment(%q) = %q changed a safe comment", s, got)
			}
			return
		}
		rest := got
		for i, r := range s {
			if r == utf8.RuneError || r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 || (r == '\\' && i == len(s)-1) {
				continue
			}
			j := strings.IndexRune(rest, r)
			if j < 0 {
				t.Fatalf("Comment(%q) = %q lost %q", s, got, r)
			}
			rest = rest[j+utf8.RuneLen(r):]
		}
	})
}

// FuzzTunedDevice: a name is refused exactly when tuned would read it as
// something else (a list, a negation, a pattern, a variable, a comment,
// stripped white space) or it would corrupt the line; an accepted name
// reads back as itself from a devices= line split as tuned splits it
// (commas, then white space trimmed), with no fnmatch character left to
// make it a pattern (tuned uses Python's fnmatch, where a backslash is
// literal).
func FuzzTunedDevice(f *testing.F) {
	for _, s := range []string{"eth0", "", "ens1f0.100", "we,ird", "eth*", "!lo", "${x}", " eth0", "a#b", "a\nb", "`id`", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := TunedDevice(s)
		refuse := s == "" || strings.TrimSpace(s) != s || strings.ContainsAny(s, ",!*?[]$%#;\x7f")
		for i := 0; i < len(s); i++ {
			refuse = refuse || s[i] < 0x20
		}
		if refuse {
			var ue *UnsafeError
			if !errors.As(err, &ue) {
				t.Fatalf("TunedDevice(%q) = %q, %v: want a refusal", s, got, err)
			}
			return
		}
		if err != nil || got != s {
			t.Fatalf("TunedDevice(%q) = %q, %v", s, got, err)
		}
		items := strings.Split(got, ",")
		if len(items) != 1 || strings.TrimSpace(items[0]) != s {
			t.Fatalf("devices=%s reads back as %q", got, items)
		}
	})
}
