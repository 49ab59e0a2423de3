package cipherlimit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileRoundTrip: what crypto-limit --format json writes reads back
// with its emulated flag, and converts to the cipher a result records; a
// file of another cipher, or with no figure, is refused naming the format.
func TestFileRoundTrip(t *testing.T) {
	r := &Result{Algorithm: "xts(aes)", KeyBits: 512, SectorSize: 512, Method: "af_alg", What: "the kernel's xts-aes-aesni through AF_ALG",
		PerCore: 2.5e9, Cores: 4, Kernel: &Implementation{Driver: "xts-aes-aesni"}}
	var b bytes.Buffer
	if err := (&File{Result: r, Emulated: true, Figures: "emulated", FiguresNote: "functional"}).Write(&b); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "limit.json")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Emulated || f.PerCore != 2.5e9 || f.Kernel == nil || f.Kernel.Driver != "xts-aes-aesni" {
		t.Errorf("read back %+v", f)
	}
	c := f.Cipher("file " + path)
	if c.BytesPerSecPerCore != 2.5e9 || c.Driver != "xts-aes-aesni" || c.KeyBits != 512 || c.Source != "file "+path {
		t.Errorf("cipher %+v", c)
	}
	for name, body := range map[string]string{"cbc.json": `{"algorithm": "cbc(aes)", "bytes_per_sec_per_core": 1e9}`,
		"zero.json": `{"algorithm": "xts(aes)", "bytes_per_sec_per_core": 0}`, "empty.json": `{}`, "text.json": "xts"} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := ReadFile(p); err == nil || !strings.Contains(err.Error(), "crypto-limit --format json") {
			t.Errorf("%s: err %v", name, err)
		}
	}
}
