package network

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestFileContains finds a needle anywhere, also across the 64 KiB chunk
// boundary, and nothing where it is absent or cut short.
func TestFileContains(t *testing.T) {
	needle := []byte("\x00skb_drop_reason\x00")
	dir := t.TempDir()
	for _, at := range []int{0, 1000, 64<<10 - 5, 64<<10 - len(needle), 64 << 10, 3*64<<10 - 7} {
		b := bytes.Repeat([]byte{'x'}, 4*64<<10)
		copy(b[at:], needle)
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if ok, err := fileContains(p, needle); err != nil || !ok {
			t.Errorf("needle at %d: %v, %v", at, ok, err)
		}
	}
	b := append(bytes.Repeat([]byte{'x'}, 64<<10-3), needle[:len(needle)-1]...)
	p := filepath.Join(dir, "g")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if ok, err := fileContains(p, needle); err != nil || ok {
		t.Errorf("truncated needle found: %v, %v", ok, err)
	}
	if _, err := fileContains(filepath.Join(dir, "missing"), needle); err == nil {
		t.Error("missing file: no error")
	}
}
