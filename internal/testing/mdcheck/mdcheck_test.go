package mdcheck

import (
	"testing"
)

// fatal records whether Check failed; its Fatalf stops Check, as
// testing's does, with a panic that fails recovers.
type fatal struct {
	testing.TB
	failed bool
}

func (f *fatal) Helper() {}

func (f *fatal) Fatalf(string, ...any) {
	f.failed = true
	panic(f)
}

func fails(r Rules, out string) (failed bool) {
	f := &fatal{}
	defer func() {
		if p := recover(); p != nil && p != f {
			panic(p)
		}
		failed = f.failed
	}()
	r.Check(f, out)
	return false
}

// TestCheck: the oracle refuses each way out of a cell and accepts a
// table of escaped text.
func TestCheck(t *testing.T) {
	good := "# x\n\n| a | b |\n| --- | --- |\n| " + Escaped("eth0") + " | `code` |\n\n| one |\n| --- |\n| 1 |\n"
	for _, tt := range []struct {
		name string
		r    Rules
		out  string
		fail bool
	}{
		{"escaped", Rules{}, good, false},
		{"escaped, cells", Rules{Cells: 2}, "| a | b |\n| --- | --- |\n| " + Escaped("x") + " | y |\n", false},
		{"raw", Rules{}, "| a | b |\n| --- | --- |\n| " + Hostile("eth0") + " | y |\n", true},
		{"html", Rules{}, "text <b>\n", true},
		{"row of the wrong cells", Rules{}, "| a | b |\n| --- | --- |\n| a | b | c |\n", true},
		{"other than Cells", Rules{Cells: 3}, "| a | b |\n| --- | --- |\n", true},
		{"pipe outside", Rules{}, "a | b\n", true},
		{"open code span", Rules{}, "`a\n", true},
		{"backtick, no code", Rules{NoCode: true}, "`a`\n", true},
	} {
		if got := fails(tt.r, tt.out); got != tt.fail {
			t.Errorf("%s: failed %v, want %v", tt.name, got, tt.fail)
		}
	}
}
