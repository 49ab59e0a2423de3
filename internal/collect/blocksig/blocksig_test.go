package blocksig

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

func TestProbe(t *testing.T) {
	img := func(off int, b []byte) []byte {
		buf := make([]byte, ProbeSize)
		copy(buf[off:], b)
		return buf
	}
	mbr := make([]byte, 512)
	mbr[510], mbr[511], mbr[446+4] = 0x55, 0xaa, 0x83
	for _, tt := range []struct {
		name string
		in   []byte
		want string
	}{
		{"zeros", make([]byte, ProbeSize), ""},
		{"short", []byte("x"), ""},
		{"ext4", img(0x438, []byte{0x53, 0xef}), "ext2/3/4 filesystem"},
		{"luks", img(0, []byte("LUKS\xba\xbe")), "LUKS header"},
		{"gpt", img(512, []byte("EFI PART")), "GPT partition table"},
		{"md 1.2", img(4096, []byte{0xfc, 0x4e, 0x2b, 0xa9}), "md RAID member"},
		{"mbr", img(0, mbr), "MBR partition table"},
		{"boot signature only", img(510, []byte{0x55, 0xaa}), ""},
	} {
		got, err := Probe(bytes.NewReader(tt.in))
		if err != nil || got != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

// TestProbeMkfs: real filesystems made by mke2fs and mkswap are found.
func TestProbeMkfs(t *testing.T) {
	testenv.RequireTool(t, "mke2fs", "e2fsprogs")
	testenv.RequireTool(t, "mkswap", "util-linux")
	dir := t.TempDir()
	for _, tt := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"mke2fs", "-q", "-F", "-t", "ext4"}, "ext2/3/4 filesystem"},
		{[]string{"mkswap"}, "swap"},
	} {
		p := filepath.Join(dir, tt.cmd[0]+".img")
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, 8<<20); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(tt.cmd[0], append(tt.cmd[1:], p)...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", tt.cmd, err, out)
		}
		if got, err := ProbeDevice(p); err != nil || got != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.cmd[0], got, err, tt.want)
		}
	}
}

func FuzzProbe(f *testing.F) {
	f.Add([]byte("LUKS\xba\xbe"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := Probe(bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
	})
}
