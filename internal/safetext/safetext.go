// Package safetext is slowpath's one rule for text that comes from
// elsewhere (a snapshot, a bench result file) and ends up on a terminal,
// in a report or in a generated file: valid UTF-8, bounded, and no rune
// that acts on a terminal or breaks a line. snapshot.Validate and
// benchresult's decode check every string with Check; quote.Comment
// escapes the same runes (Unsafe) when it writes a comment line.
package safetext

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Unsafe reports whether r acts on a terminal or breaks a line: Unicode
// category Cc (C0 U+0000-U+001F, DEL U+007F and C1 U+0080-U+009F; U+009B
// is a CSI to many terminals) and the line and paragraph separators
// U+2028 and U+2029, which JavaScript, YAML 1.1 and some editors and
// terminals treat as line breaks (Unicode UAX #14, class BK).
func Unsafe(r rune) bool {
	return r < 0x20 || r >= 0x7f && r <= 0x9f || r == 0x2028 || r == 0x2029
}

// Clean is s with every Unsafe rune replaced by '?': one line that cannot
// act on a terminal, for text printed or written where it cannot be
// refused (a Prometheus label, a name in a marker file).
func Clean(s string) string {
	return strings.Map(func(r rune) rune {
		if Unsafe(r) {
			return '?'
		}
		return r
	}, s)
}

// The ways a string breaks the rule; Check's *Error wraps one of them.
var (
	ErrTooLong = errors.New("too long")
	ErrUTF8    = errors.New("not valid UTF-8")
	ErrUnsafe  = errors.New("holds a control character")
)

// Error says how a string breaks the rule. Err is ErrTooLong (Len, Max
// set), ErrUTF8, or ErrUnsafe (Rune set).
type Error struct {
	Err  error
	Len  int  // for ErrTooLong: the string's length in bytes
	Max  int  // for ErrTooLong: the bound
	Rune rune // for ErrUnsafe: the first unsafe rune
}

// Detail is the part of the rule broken, without the kind: "5000 bytes,
// at most 4096" or "U+001B"; empty for ErrUTF8.
func (e *Error) Detail() string {
	switch e.Err {
	case ErrTooLong:
		return fmt.Sprintf("%d bytes, at most %d", e.Len, e.Max)
	case ErrUnsafe:
		return fmt.Sprintf("%U", e.Rune)
	}
	return ""
}

func (e *Error) Error() string {
	if d := e.Detail(); d != "" {
		return e.Err.Error() + ": " + d
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Check applies the rule to s: at most maxLen bytes, valid UTF-8, and no
// Unsafe rune, except tab and newline where multiline says the text may
// span lines (error messages, notes, verbatim job files). It returns nil
// or an *Error, checking in that order so the error is the same on every
// run.
func Check(s string, maxLen int, multiline bool) error {
	if len(s) > maxLen {
		return &Error{Err: ErrTooLong, Len: len(s), Max: maxLen}
	}
	if !utf8.ValidString(s) {
		return &Error{Err: ErrUTF8}
	}
	for _, r := range s {
		if multiline && (r == '\n' || r == '\t') {
			continue
		}
		if Unsafe(r) {
			return &Error{Err: ErrUnsafe, Rune: r}
		}
	}
	return nil
}
