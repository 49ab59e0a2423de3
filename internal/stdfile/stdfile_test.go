package stdfile

import (
	"bytes"
	"errors"
	"io"
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

// TestWriteFile: a write that succeeds replaces the file whole with mode
// 0644; one that fails leaves the old file as it was and no temporary file.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "result.json")
	if err := WriteFile(p, func(w io.Writer) error { _, err := io.WriteString(w, "first"); return err }); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteFile(p, func(w io.Writer) error { io.WriteString(w, "half"); return boom })
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), p) {
		t.Fatalf("failed write: %v, want boom naming %s", err, p)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "first" {
		t.Fatalf("after a failed write the file holds %q (%v), want the first write", b, err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v (%v), want 0644", st.Mode(), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("directory holds %d entries, want only the file", len(ents))
	}
	if err := WriteFile(filepath.Join(dir, "no", "such"), func(io.Writer) error { return nil }); err == nil {
		t.Fatal("write into a missing directory: no error")
	}
	private := filepath.Join(dir, "state.json")
	if err := WriteFileMode(private, 0o600, func(w io.Writer) error { _, err := io.WriteString(w, "{}"); return err }); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(private); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("WriteFileMode 0600: mode %v (%v)", st.Mode(), err)
	}
}
