package safetext

import (
	"errors"
	"strings"
	"testing"
	"unicode"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		s         string
		max       int
		multiline bool
		want      error // nil, or the kind
		detail    string
	}{
		{"eth0", 15, false, nil, ""},
		{"Ünïcode ✓ text", 64, false, nil, ""},
		{"line one\n\tline two", 64, true, nil, ""},
		{"", 0, false, nil, ""},
		{"x\ny", 64, false, ErrUnsafe, "U+000A"},
		{"tab\there", 64, false, ErrUnsafe, "U+0009"},
		{"6.1\x1b[2J", 64, false, ErrUnsafe, "U+001B"},
		{"del\x7f", 64, true, ErrUnsafe, "U+007F"},
		{"csi\u009b31m", 64, true, ErrUnsafe, "U+009B"},
		{"carriage\rreturn", 64, true, ErrUnsafe, "U+000D"},
		// The separators break lines in JavaScript, YAML 1.1 and editors:
		// refused even in multiline text, where only \n and \t are allowed.
		{"a\u2028b", 64, false, ErrUnsafe, "U+2028"},
		{"a\u2029b", 64, true, ErrUnsafe, "U+2029"},
		{"bad\xffbyte", 64, false, ErrUTF8, ""},
		{strings.Repeat("x", 17), 16, false, ErrTooLong, "17 bytes, at most 16"},
		// Length comes first: a long string with a control character
		// reports its length.
		{strings.Repeat("\x00", 17), 16, false, ErrTooLong, "17 bytes, at most 16"},
	} {
		err := Check(tc.s, tc.max, tc.multiline)
		if tc.want == nil {
			if err != nil {
				t.Errorf("Check(%q) = %v, want nil", tc.s, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, tc.want) || e.Detail() != tc.detail {
			t.Errorf("Check(%q) = %v, want %v with detail %q", tc.s, err, tc.want, tc.detail)
		}
	}
}

// TestUnsafe: the rule is Unicode category Cc plus U+2028 and U+2029,
// over every rune.
func TestUnsafe(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		want := unicode.Is(unicode.Cc, r) || r == 0x2028 || r == 0x2029
		if Unsafe(r) != want {
			t.Fatalf("Unsafe(%U) = %v, want %v", r, !want, want)
		}
	}
}

func TestClean(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"eth0", "eth0"},
		{"a\nb\tc\rd", "a?b?c?d"},
		{"\x1b[31mred\u009b", "?[31mred?"},
		{"x\u2028y\u2029z", "x?y?z"},
		{"é ü 日本", "é ü 日本"},
		{"", ""},
	} {
		if got := Clean(tc.in); got != tc.want {
			t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if err := Check(Clean(tc.in), 1<<10, false); err != nil {
			t.Errorf("Clean(%q) = %q fails Check: %v", tc.in, Clean(tc.in), err)
		}
	}
}
