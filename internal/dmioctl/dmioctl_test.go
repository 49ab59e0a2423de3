package dmioctl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/testing/dmtest"
)

const testKey = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" +
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestCommandNumbers pins the request numbers to the values the kernel
// headers produce (_IOWR(0xfd, nr, struct dm_ioctl) with a 312-byte
// struct), as strace prints them for dmsetup.
func TestCommandNumbers(t *testing.T) {
	for _, tt := range []struct {
		name      string
		got, want uint32
	}{
		{"DM_VERSION", CmdVersion, 0xc138fd00},
		{"DM_DEV_SUSPEND", CmdDevSuspend, 0xc138fd06},
		{"DM_TABLE_LOAD", CmdTableLoad, 0xc138fd09},
		{"DM_TABLE_CLEAR", CmdTableClear, 0xc138fd0a},
		{"DM_TABLE_STATUS", CmdTableStatus, 0xc138fd0c},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %#x, want %#x", tt.name, tt.got, tt.want)
		}
	}
}

func TestPutHeader(t *testing.T) {
	ne := binary.NativeEndian
	tests := []struct {
		name    string
		size    int
		req     Request
		wantDev uint64
		wantErr bool
	}{
		{name: "by number", size: HeaderSize, req: Request{Major: 253, Minor: 3, Flags: StatusTableFlag | SecureDataFlag}, wantDev: 0xfd03},
		// new_encode_dev: minor bits above 8 go to bits 20 and up.
		{name: "large minor", size: 1024, req: Request{Major: 259, Minor: 0x12345}, wantDev: 0x45 | 259<<8 | 0x12300<<12},
		{name: "by name", size: HeaderSize, req: Request{Name: "crypt0", Flags: ReadonlyFlag}},
		{name: "longest name", size: HeaderSize, req: Request{Name: string(bytes.Repeat([]byte("n"), NameLen-1))}},
		{name: "name too long", size: HeaderSize, req: Request{Name: string(bytes.Repeat([]byte("n"), NameLen))}, wantErr: true},
		{name: "short buffer", size: HeaderSize - 1, wantErr: true},
	}
	for _, tt := range tests {
		buf := make([]byte, tt.size)
		err := PutHeader(buf, tt.req)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: err = %v, wantErr %v", tt.name, err, tt.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		got := struct {
			Version, DataSize, DataStart, Flags uint32
			Dev                                 uint64
			Name                                string
		}{
			ReplyVersion(buf), ne.Uint32(buf[offDataSize:]), ne.Uint32(buf[offDataStart:]), ReplyFlags(buf),
			ne.Uint64(buf[offDev:]), string(bytes.TrimRight(buf[offName:offName+NameLen], "\x00")),
		}
		want := got
		want.Version, want.DataSize, want.DataStart, want.Flags = VersionMajor, uint32(tt.size), HeaderSize, tt.req.Flags
		want.Dev, want.Name = tt.wantDev, tt.req.Name
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
		if buf[offName+NameLen-1] != 0 {
			t.Errorf("%s: name not NUL-terminated", tt.name)
		}
	}
}

func TestEncodeTableLoad(t *testing.T) {
	ne := binary.NativeEndian
	crypt := Target{Start: 0, Length: 2048, Type: "crypt", Params: []byte("aes-xts-plain64 " + testKey + " 0 8:2 0 1 sector_size:4096")}
	linear := Target{Start: 2048, Length: 8, Type: "linear", Params: []byte("8:1 0")}
	zero := Target{Start: 2056, Length: 8, Type: "zero"}
	tests := []struct {
		name     string
		targets  []Target
		wantNext []uint32 // spec->next: from the current spec to the next
		wantErr  bool
	}{
		{name: "none", targets: nil},
		// 40 + 171 params + NUL = 212, padded to 216.
		{name: "one crypt", targets: []Target{crypt}, wantNext: []uint32{216}},
		// 40 + 5 + 1 = 46 -> 48; 40 + 0 + 1 -> 48.
		{name: "three", targets: []Target{crypt, linear, zero}, wantNext: []uint32{216, 48, 48}},
		{name: "empty type", targets: []Target{{Length: 8}}, wantErr: true},
		{name: "type too long", targets: []Target{{Length: 8, Type: "abcdefghijklmnop"}}, wantErr: true},
		{name: "NUL in params", targets: []Target{{Length: 8, Type: "linear", Params: []byte("8:1\x000")}}, wantErr: true},
	}
	for _, tt := range tests {
		buf, err := EncodeTableLoad(Request{Name: "crypt0", Flags: SecureDataFlag}, tt.targets)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: err = %v, wantErr %v", tt.name, err, tt.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if got := ne.Uint32(buf[offTargetCount:]); got != uint32(len(tt.targets)) {
			t.Errorf("%s: target_count %d", tt.name, got)
		}
		if got := ne.Uint32(buf[offDataSize:]); got != uint32(len(buf)) {
			t.Errorf("%s: data_size %d, buffer %d", tt.name, got, len(buf))
		}
		// Walk the specs as populate_table does, relative to each spec.
		off := HeaderSize
		for i, want := range tt.targets {
			spec := buf[off:]
			next := ne.Uint32(spec[offSpecNext:])
			if next != tt.wantNext[i] {
				t.Errorf("%s: target %d next %d, want %d", tt.name, i, next, tt.wantNext[i])
			}
			got := Target{
				Start: ne.Uint64(spec[offSpecStart:]), Length: ne.Uint64(spec[offSpecLength:]),
				Type:   string(bytes.TrimRight(spec[offSpecType:offSpecType+MaxTypeName], "\x00")),
				Params: spec[TargetSpecSize : TargetSpecSize+bytes.IndexByte(spec[TargetSpecSize:], 0)],
			}
			if diff := cmp.Diff(want, got, cmp.Comparer(bytes.Equal)); diff != "" {
				t.Errorf("%s: target %d (-want +got):\n%s", tt.name, i, diff)
			}
			off += int(next)
		}
		if off != len(buf) {
			t.Errorf("%s: specs end at %d, buffer at %d", tt.name, off, len(buf))
		}
	}
}

// TestRoundTrip: with one or two targets the load and status layouts
// coincide (the second spec's offset from the first is the same both
// ways), so what EncodeTableLoad writes, DecodeTableStatus reads back.
func TestRoundTrip(t *testing.T) {
	for _, targets := range [][]Target{
		{{Start: 0, Length: 1 << 30, Type: "crypt", Params: []byte("aes-xts-plain64 " + testKey + " 0 8:2 4096 2 no_read_workqueue no_write_workqueue")}},
		{{Start: 0, Length: 8, Type: "linear", Params: []byte("8:1 0")}, {Start: 8, Length: 8, Type: "zero", Params: []byte{}}},
	} {
		buf, err := EncodeTableLoad(Request{Name: "x"}, targets)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeTableStatus(buf)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(targets, got, cmp.Comparer(bytes.Equal)); diff != "" {
			t.Errorf("(-encoded +decoded):\n%s", diff)
		}
	}
}

func TestDecodeTableStatus(t *testing.T) {
	good := dmtest.EncodeTableStatus([]dmtest.Target{
		dmtest.T(0, 2048, "linear", "8:1 0"),
		dmtest.T(2048, 4096, "crypt", "aes-xts-plain64 "+testKey+" 0 8:2 0"),
		dmtest.T(6144, 8, "zero", ""),
	})
	want := []Target{
		{Start: 0, Length: 2048, Type: "linear", Params: []byte("8:1 0")},
		{Start: 2048, Length: 4096, Type: "crypt", Params: []byte("aes-xts-plain64 " + testKey + " 0 8:2 0")},
		{Start: 6144, Length: 8, Type: "zero", Params: []byte{}},
	}
	ne := binary.NativeEndian
	mutate := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	tests := []struct {
		name string
		in   []byte
		want []Target // nil: ErrPayload expected
	}{
		{"three targets", good, want},
		{"no targets", dmtest.EncodeTableStatus(nil), []Target{}},
		{"short", good[:100], nil},
		{"version 3", mutate(func(b []byte) []byte { ne.PutUint32(b[offVersion:], 3); return b }), nil},
		{"buffer full", mutate(func(b []byte) []byte { ne.PutUint32(b[offFlags:], BufferFullFlag); return b }), nil},
		{"data_size big", mutate(func(b []byte) []byte { ne.PutUint32(b[offDataSize:], uint32(len(b)+1)); return b }), nil},
		{"data_size small", mutate(func(b []byte) []byte { ne.PutUint32(b[offDataSize:], HeaderSize-1); return b }), nil},
		{"data_start low", mutate(func(b []byte) []byte { ne.PutUint32(b[offDataStart:], 8); return b }), nil},
		{"data_start high", mutate(func(b []byte) []byte { ne.PutUint32(b[offDataStart:], uint32(len(b)+8)); return b }), nil},
		{"count huge", mutate(func(b []byte) []byte { ne.PutUint32(b[offTargetCount:], 1<<30); return b }), nil},
		{"next loops", mutate(func(b []byte) []byte { ne.PutUint32(b[HeaderSize+offSpecNext:], 0); return b }), nil},
		{"next past end", mutate(func(b []byte) []byte { ne.PutUint32(b[HeaderSize+offSpecNext:], 1<<20); return b }), nil},
		{"no NUL", mutate(func(b []byte) []byte {
			b = bytes.TrimRight(b[:len(b)-8], "\x00")
			ne.PutUint32(b[offDataSize:], uint32(len(b)))
			return b
		}), nil},
		{"bad type", mutate(func(b []byte) []byte { b[HeaderSize+offSpecType] = 0x01; return b }), nil},
		{"empty type", mutate(func(b []byte) []byte { b[HeaderSize+offSpecType] = 0; return b }), nil},
		{"type fills the field", mutate(func(b []byte) []byte {
			copy(b[HeaderSize+offSpecType:], "abcdefghijklmnop")
			return b
		}), nil},
	}
	for _, tt := range tests {
		got, err := DecodeTableStatus(tt.in)
		if tt.want == nil {
			if !errors.Is(err, ErrPayload) {
				t.Errorf("%s: err = %v, want ErrPayload", tt.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got, cmp.Comparer(bytes.Equal)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// FuzzDecodeTableStatus: arbitrary answers never panic; what decodes lies
// inside the buffer, has a printable type, and decodes the same after
// being laid out again as the kernel would (dmtest, written from the
// documented layout independently of this decoder).
func FuzzDecodeTableStatus(f *testing.F) {
	f.Add(dmtest.EncodeTableStatus([]dmtest.Target{dmtest.T(0, 8, "crypt", "aes-xts-plain64 "+testKey+" 0 8:2 0"), dmtest.T(8, 8, "linear", "8:1 0")}))
	f.Add(dmtest.EncodeTableStatus([]dmtest.Target{dmtest.T(0, 8, "zero", ""), dmtest.T(8, 8, "zero", ""), dmtest.T(16, 8, "error", "")}))
	f.Add(dmtest.EncodeTableStatus(nil))
	f.Add(make([]byte, HeaderSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := DecodeTableStatus(b)
		if err != nil {
			if !errors.Is(err, ErrPayload) {
				t.Fatalf("error %v is not ErrPayload", err)
			}
			return
		}
		again := make([]dmtest.Target, len(got))
		for i, tg := range got {
			if !bytes.Contains(b, tg.Params) || bytes.IndexByte(tg.Params, 0) >= 0 {
				t.Fatalf("target %d params not a C string from the buffer", i)
			}
			if _, err := cString(append([]byte(tg.Type), 0)); err != nil || tg.Type == "" {
				t.Fatalf("target %d type %q", i, tg.Type)
			}
			again[i] = dmtest.T(tg.Start, tg.Length, tg.Type, string(tg.Params))
		}
		got2, err := DecodeTableStatus(dmtest.EncodeTableStatus(again))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(got, got2, cmp.Comparer(bytes.Equal)); diff != "" {
			t.Fatalf("re-encoded answer decodes differently (-first +second):\n%s", diff)
		}
	})
}

// TestTableStatusNotControl: the ioctl on a file that is not the control
// node fails with the kernel's error and hands back no buffer.
func TestTableStatusNotControl(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf, err := TableStatus(f, Request{Major: 253, Flags: StatusTableFlag})
	if err == nil || buf != nil {
		t.Fatalf("TableStatus on %s: buf %d bytes, err %v", os.DevNull, len(buf), err)
	}
}
