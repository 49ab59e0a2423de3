package stdfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("file"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := Stdin
	t.Cleanup(func() { Stdin = old })
	Stdin = strings.NewReader("piped")
	for _, tc := range []struct{ name, want string }{{p, "file"}, {"-", "piped"}} {
		b, err := ReadFile(tc.name)
		if err != nil || string(b) != tc.want {
			t.Errorf("ReadFile(%q) = %q, %v; want %q", tc.name, b, err, tc.want)
		}
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing")); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
	// "./-" is a file named "-", not stdin.
	if _, err := ReadFile("./-"); !os.IsNotExist(err) {
		t.Errorf("./-: %v, want the file", err)
	}
	Stdin = bytes.NewReader(make([]byte, MaxStdin+1))
	if _, err := ReadFile("-"); err == nil || !strings.Contains(err.Error(), "stdin: more than 256 MiB") {
		t.Errorf("oversized stdin: %v", err)
	}
	if Name("-") != "stdin" || Name(p) != p {
		t.Errorf("Name: %q %q", Name("-"), Name(p))
	}
}
