// Package quote writes data into the artifacts slowpath generates and
// root runs, one helper per format: a POSIX shell word (Shell, Shells), a
// udev match value (Udev), a crypttab field or option (Crypttab,
// CrypttabOption), a sysctl key (SysctlKey) and a comment line of any of
// these (Comment). Shell and Comment can write any string; the others
// refuse, with an *UnsafeError, a value their format has no escape for,
// so the caller writes no artifact rather than one that reads back as
// something else. A value that comes from a snapshot, a job file or the
// command line goes through one of them before it is written.
package quote

import (
	"fmt"
	"strings"
)

// Shell returns s as one POSIX shell word: single-quoted unless it is made
// only of characters no shell treats specially. Inside the quotes nothing is
// special (POSIX.1-2017 XCU 2.2.2), so each single quote of s closes the
// quotes, is escaped with a backslash and reopens them. The empty string
// becomes a pair of quotes.
func Shell(s string) string {
	if s != "" && safeShell(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Shells quotes each word with Shell and joins them with spaces.
func Shells(words ...string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = Shell(w)
	}
	return strings.Join(q, " ")
}

// safeShell reports whether s needs no quoting: letters, digits and
// characters that are literal in every position of a POSIX shell word
// (no glob, no tilde, no expansion, no operator, no assignment).
func safeShell(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-' || c == '_' || c == '.' || c == '/' || c == ',' || c == '+' || c == ':' || c == '@' || c == '%':
		default:
			return false
		}
	}
	return true
}

// PathComponent spells s as one file name component that needs no
// quoting anywhere: letters, digits, _, - and . are kept (a leading . is
// encoded, so "." and ".." cannot occur); every other byte is written %XX.
// % is never kept, so two different strings never give the same name.
func PathComponent(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteByte(c)
		case c == '.' && i > 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
