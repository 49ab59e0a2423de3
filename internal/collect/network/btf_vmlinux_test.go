package network

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// btfBlob builds a BTF blob as the kernel lays it out: header, type
// section, string section (starting with the empty string).
func btfBlob(bo binary.ByteOrder, types []byte, strs ...string) []byte {
	str := []byte{0}
	for _, s := range strs {
		str = append(append(str, s...), 0)
	}
	h := make([]byte, btfHeaderSize)
	bo.PutUint16(h[0:], btfMagic)
	h[2] = 1 // version
	bo.PutUint32(h[4:], btfHeaderSize)
	bo.PutUint32(h[8:], 0)
	bo.PutUint32(h[12:], uint32(len(types)))
	bo.PutUint32(h[16:], uint32(len(types)))
	bo.PutUint32(h[20:], uint32(len(str)))
	return append(append(h, types...), str...)
}

func writeBlob(t testing.TB, b []byte) string {
	p := filepath.Join(t.TempDir(), "vmlinux")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBTFHasName(t *testing.T) {
	le := binary.LittleEndian
	filler := strings.Repeat("x", btfChunk-len("skb_drop_re")-1) // puts the name across the first chunk boundary
	ok := btfBlob(le, []byte{1, 2, 3, 4}, "sk_buff", "skb_drop_reason", "reason")
	cut := ok[:len(ok)-10]
	tests := []struct {
		name    string
		blob    []byte
		want    bool
		wantErr string
	}{
		{"kernel with reasons", ok, true, ""},
		{"kernel without reasons", btfBlob(le, nil, "sk_buff", "kfree_skb", "location"), false, ""},
		{"big-endian kernel", btfBlob(binary.BigEndian, nil, "skb_drop_reason"), true, ""},
		{"name only in the type section", btfBlob(le, []byte("\x00skb_drop_reason\x00"), "sk_buff"), false, ""},
		{"longer name only", btfBlob(le, nil, "skb_drop_reason_x", "x_skb_drop_reason"), false, ""},
		{"across a chunk boundary", btfBlob(le, nil, filler, "skb_drop_reason"), true, ""},
		{"far into the strings", btfBlob(le, nil, strings.Repeat("y", 3*btfChunk), "skb_drop_reason"), true, ""},
		{"empty", nil, false, "header"},
		{"bad magic", append([]byte{0x7f, 'E', 'L', 'F'}, make([]byte, 40)...), false, "magic"},
		{"string section cut short", cut, false, "cut short"},
	}
	for _, tt := range tests {
		got, err := btfHasName(writeBlob(t, tt.blob), "skb_drop_reason")
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err %v, want one saying %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: got %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
}

// TestDropReasonsFromBTF: without tracefs the answer comes from the tree's
// BTF, on both kinds of kernel.
func TestDropReasonsFromBTF(t *testing.T) {
	for _, tt := range []struct {
		blob []byte
		want string
	}{
		{btfBlob(binary.LittleEndian, nil, "sk_buff", "skb_drop_reason"), "yes"},
		{btfBlob(binary.LittleEndian, nil, "sk_buff", "kfree_skb"), "no"},
		{[]byte("garbage"), "unknown"},
	} {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "sys/kernel/btf/vmlinux"), string(tt.blob))
		fs := hostfs.New(dir)
		got := readDropReasons(fs)
		if got.Status != tt.want {
			t.Errorf("%q: status %q (%s), want %q", tt.blob[:min(len(tt.blob), 8)], got.Status, got.Detail, tt.want)
		}
		if tt.want != "unknown" && got.Source != fs.SysPath("kernel", "btf", "vmlinux") {
			t.Errorf("source %q", got.Source)
		}
	}
}

// TestBTFHasNameLive: on this kernel the targeted lookup agrees with
// searching the whole blob, and with the tracepoint when tracefs is
// mounted.
func TestBTFHasNameLive(t *testing.T) {
	const p = "/sys/kernel/btf/vmlinux"
	whole, err := os.ReadFile(p)
	if err != nil {
		testenv.Unavailable(t, "no kernel BTF here: "+err.Error())
	}
	got, err := btfHasName(p, "skb_drop_reason")
	if err != nil {
		t.Fatal(err)
	}
	if want := bytes.Contains(whole, []byte("\x00skb_drop_reason\x00")); got != want {
		t.Errorf("targeted lookup %v, whole blob %v", got, want)
	}
	if b, err := os.ReadFile("/sys/kernel/tracing/events/skb/kfree_skb/format"); err == nil && formatHasReason(b) != got {
		t.Errorf("BTF says %v, the tracepoint format %v", got, formatHasReason(b))
	}
	if absent, err := btfHasName(p, "no_such_type_in_any_kernel_slowpath"); err != nil || absent {
		t.Errorf("absent name: %v, %v", absent, err)
	}
}

func FuzzBTFHasName(f *testing.F) {
	f.Add(btfBlob(binary.LittleEndian, []byte{1, 2}, "skb_drop_reason"))
	f.Add(btfBlob(binary.BigEndian, nil, "a", "b"))
	f.Add([]byte{0x9f, 0xeb, 1, 0, 0xff, 0xff, 0xff, 0xff})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "vmlinux")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		has, err := btfHasName(p, "skb_drop_reason")
		if has && err != nil {
			t.Fatalf("found and failed: %v", err)
		}
		if has && !bytes.Contains(b, []byte("\x00skb_drop_reason\x00")) {
			t.Fatal("found a name the blob does not hold")
		}
	})
}
