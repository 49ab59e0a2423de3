package vm

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseDirectives(t *testing.T) {
	type call struct {
		N    int
		Line string
		F    []string
	}
	tests := []struct {
		name, in string
		want     []call
	}{
		{name: "empty", in: ""},
		{name: "comments and blanks only", in: "# a\n\n   \t\n  # b\n"},
		{name: "line numbers count skipped lines", in: "# head\n\nrelease 6.1  # why\n  deb a b\n",
			want: []call{{3, "release 6.1  ", []string{"release", "6.1"}}, {4, "  deb a b", []string{"deb", "a", "b"}}}},
		{name: "hash inside a word cuts it", in: "cpu max#x\n", want: []call{{1, "cpu max", []string{"cpu", "max"}}}},
		{name: "no final newline", in: "a\nb", want: []call{{1, "a", []string{"a"}}, {2, "b", []string{"b"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []call
			err := scanDirectives(strings.NewReader(tt.in), func(n int, line string, f []string) error {
				got = append(got, call{n, line, f})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseDirectivesStops(t *testing.T) {
	stop := errors.New("stop")
	var seen []int
	err := scanDirectives(strings.NewReader("a\nb\nc\n"), func(n int, _ string, _ []string) error {
		seen = append(seen, n)
		if n == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || !cmp.Equal([]int{1, 2}, seen) {
		t.Errorf("err %v after lines %v, want %v after [1 2]", err, seen, stop)
	}
	// A line longer than bufio's limit is an error, not a silent end.
	err = scanDirectives(strings.NewReader(strings.Repeat("x", bufio.MaxScanTokenSize+1)), func(int, string, []string) error { return nil })
	if !errors.Is(err, bufio.ErrTooLong) {
		t.Errorf("overlong line: err %v, want %v", err, bufio.ErrTooLong)
	}
}

func TestParseFileNamesPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.expect")
	if err := os.WriteFile(path, []byte("mystery 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadExpect(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+": line 1: ") {
		t.Errorf("err = %v, want it to start with %q", err, path+": line 1: ")
	}
	_, err = parseFile(filepath.Join(t.TempDir(), "absent.pin"), func(io.Reader) (*Pin, error) { return &Pin{}, nil })
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent file: err = %v, want not-exist", err)
	}
}
