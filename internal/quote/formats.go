package quote

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/slowpath/slowpath/internal/safetext"
)

// UnsafeError says that a value cannot be written in a format: the format
// has no escape for one of its characters, so any spelling would be read
// back as something else. Callers refuse to write the artifact and offer
// the runtime command instead.
type UnsafeError struct {
	Format string // "udev match value", "crypttab field", "sysctl key"
	Value  string
	Char   string // the offending character, printable (%q form)
	Why    string // what the format does with it
}

func (e *UnsafeError) Error() string {
	if e.Char == "" {
		return fmt.Sprintf("%s %q: %s", e.Format, e.Value, e.Why)
	}
	return fmt.Sprintf("%s %q: character %s %s", e.Format, e.Value, e.Char, e.Why)
}

// scan returns an UnsafeError at the first byte of s for which why says
// why it is unsafe in format, nil when no byte is.
func scan(format, s string, why func(c byte) string) error {
	for i := 0; i < len(s); i++ {
		if w := why(s[i]); w != "" {
			return unsafeAt(format, s, i, w)
		}
	}
	return nil
}

func unsafeAt(format, s string, i int, why string) *UnsafeError {
	r, n := utf8.DecodeRuneInString(s[i:])
	c := fmt.Sprintf("%q", r)
	if r == utf8.RuneError && n <= 1 {
		c = fmt.Sprintf("byte 0x%02x", s[i])
	}
	return &UnsafeError{Format: format, Value: s, Char: c, Why: why}
}

// Udev returns s as a udev match value, double quotes included, for a
// plain comparison (KERNELS=="...", NAME=="..."). udev reads a value
// between double quotes and unescapes only \" (systemd
// src/udev/udev-rules.c udev_rule_parse_value); it then treats *, ? and [
// as fnmatch globs and | as alternatives, and may substitute $ and %
// (udev(7), "Values and substitution"). None of these has an escape that
// keeps a plain comparison, so a value holding one is refused, as are
// control characters (a newline ends the rule), a backslash (it would
// escape the closing quote) and the empty string (it matches a missing
// property). Every other byte is compared as it is.
func Udev(s string) (string, error) {
	const format = "udev match value"
	if s == "" {
		return "", &UnsafeError{Format: format, Value: s, Why: "is empty, which udev reads as \"property absent\""}
	}
	if err := scan(format, s, func(c byte) string {
		switch {
		case c < 0x20 || c == 0x7f:
			return "is a control character, which would end or corrupt the rule line"
		case c == '"':
			return "ends udev's quoted value (the \\\" escape is not read by every udev version)"
		case c == '\\':
			return "would escape udev's closing quote"
		case c == '*' || c == '?' || c == '[':
			return "is an fnmatch glob in udev match values and udev has no escape for it"
		case c == '|':
			return "separates alternatives in udev match values and udev has no escape for it"
		case c == '$' || c == '%':
			return "starts a udev substitution"
		}
		return ""
	}); err != nil {
		return "", err
	}
	return `"` + s + `"`, nil
}

// Crypttab returns s as one whitespace-separated field of an /etc/crypttab
// line (crypttab(5): "fields are delimited by white space"). The formats
// disagree on escapes: Debian's cryptsetup decodes \0NNN octal sequences
// and calls any other backslash undefined behaviour, systemd's generator
// decodes none, so a field holding whitespace, a backslash, a quote or a
// control character cannot be written the same for both and is refused;
// so is a leading # (a comment) and the empty string.
func Crypttab(s string) (string, error) {
	const format = "crypttab field"
	if s == "" {
		return "", &UnsafeError{Format: format, Value: s, Why: "is empty, which would shift the fields after it"}
	}
	if s[0] == '#' {
		return "", unsafeAt(format, s, 0, "at the start makes the line a comment")
	}
	if err := scan(format, s, func(c byte) string {
		switch {
		case c == ' ' || c == '\t':
			return "separates crypttab fields and has no escape that both systemd and Debian's cryptsetup read"
		case c < 0x20 || c == 0x7f:
			return "is a control character, which would end or corrupt the line"
		case c == '\\':
			return "starts an octal escape for Debian's cryptsetup but not for systemd"
		case c == '"' || c == '\'':
			return "may be taken as quoting by the crypttab reader"
		}
		return ""
	}); err != nil {
		return "", err
	}
	return s, nil
}

// CrypttabOption returns s as one option of the comma-separated fourth
// crypttab field: a Crypttab field without a comma.
func CrypttabOption(s string) (string, error) {
	if i := strings.IndexByte(s, ','); i >= 0 {
		return "", unsafeAt("crypttab option", s, i, "separates crypttab options and has no escape")
	}
	if _, err := Crypttab(s); err != nil {
		err.(*UnsafeError).Format = "crypttab option"
		return "", err
	}
	return s, nil
}

// TunedDevice returns s as the devices= value of a tuned unit that must
// select exactly the device s. tuned splits the value at commas, takes a
// leading ! as "not", matches each item with fnmatch (*, ? and [) and
// expands ${...} variables in every option (tuned/plugins/base.py,
// tuned/profiles/variables.py); its INI reader strips surrounding white
// space and takes # and ; as comments at a line's start. None of these has
// an escape, so a name holding one of , ! * ? [ ] $ # ; % or a control
// character, white space at either end, or the empty string is refused.
func TunedDevice(s string) (string, error) {
	const format = "tuned devices value"
	if s == "" {
		return "", &UnsafeError{Format: format, Value: s, Why: "is empty, which tuned reads as every device"}
	}
	if strings.TrimSpace(s) != s {
		return "", &UnsafeError{Format: format, Value: s, Why: "has white space at an end, which tuned's INI reader strips"}
	}
	if err := scan(format, s, func(c byte) string {
		switch {
		case c < 0x20 || c == 0x7f:
			return "is a control character, which would end or corrupt the line"
		case c == ',':
			return "separates tuned's device list and has no escape"
		case c == '!':
			return "negates a device in tuned's device list"
		case c == '*' || c == '?' || c == '[' || c == ']':
			return "is an fnmatch pattern in tuned's device list and has no escape"
		case c == '$' || c == '%':
			return "starts a tuned variable or INI interpolation"
		case c == '#' || c == ';':
			return "may be taken as a comment by tuned's INI reader"
		}
		return ""
	}); err != nil {
		return "", err
	}
	return s, nil
}

// SysctlKey returns s as the key of an /etc/sysctl.d line (sysctl.d(5):
// "key = value") and of `sysctl -w`: dot-separated segments of letters,
// digits, _ and - (not first). systemd-sysctl gives a leading - the meaning
// "ignore failure" and treats *, ? and [ as globs; a / swaps the roles of
// / and .; = ends the key; an empty segment would make the /proc/sys path
// step out of its directory. The keys slowpath sets are of this shape, so
// anything else is refused rather than escaped.
func SysctlKey(s string) (string, error) {
	const format = "sysctl key"
	if s == "" {
		return "", &UnsafeError{Format: format, Value: s, Why: "is empty"}
	}
	start := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
			start = false
		case c == '-' && !start:
		case c == '.' && !start && i < len(s)-1:
			start = true
		case c == '.':
			return "", unsafeAt(format, s, i, "leaves an empty segment, which would name a path outside /proc/sys")
		default:
			return "", unsafeAt(format, s, i, "is not a letter, digit, _ or inner - of a sysctl name segment")
		}
	}
	return s, nil
}

// Comment returns s as text that stays on one comment line of any of the
// generated formats (shell, udev rules, sysctl.d, the txtar comment): a
// control character, DEL, a Unicode line or paragraph separator (YAML 1.1
// and some editors break lines there) and each byte of invalid UTF-8 is
// written as a Go escape (\n, \x00, \u2028); a trailing backslash becomes
// \x5c so no reader takes it as a line continuation. Everything else,
// backslashes included, is kept so commands quoted for the shell can be
// copied from the comment as they are.
func Comment(s string) string {
	if commentSafe(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0, r == 0x2028, r == 0x2029:
			fmt.Fprintf(&b, `\u%04x`, r)
		case r == '\\' && i+n == len(s):
			b.WriteString(`\x5c`)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func commentSafe(s string) bool {
	if strings.HasSuffix(s, `\`) || !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, safetext.Unsafe)
}
