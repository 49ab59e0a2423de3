package storage

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/slowpath/slowpath/internal/hostfs"
)

// materialise writes testdata/name (txtar) into a temporary root. A file
// named "path -> target" becomes a symlink, as sysfs is made of them.
func materialise(t testing.TB, name string) hostfs.FS {
	t.Helper()
	a, err := txtar.ParseFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range a.Files {
		name, target, isLink := strings.Cut(f.Name, " -> ")
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if isLink {
			err = os.Symlink(target, p)
		} else {
			err = os.WriteFile(p, f.Data, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return hostfs.New(dir)
}

// specTarget is one target to encode into a recorded payload.
type specTarget struct {
	start, length uint64
	typ, params   string
}

// encodeTableStatus builds a DM_TABLE_STATUS answer as the kernel lays it
// out (include/uapi/linux/dm-ioctl.h; drivers/md/dm-ioctl.c
// retrieve_status): struct dm_ioctl, then each dm_target_spec followed by
// its NUL-terminated params, 8-byte aligned, next relative to the first spec.
func encodeTableStatus(targets []specTarget) []byte {
	ne := binary.NativeEndian
	data := []byte{}
	for i, t := range targets {
		spec := make([]byte, dmTargetSpecSize)
		ne.PutUint64(spec[0:], t.start)
		ne.PutUint64(spec[8:], t.length)
		copy(spec[24:24+dmMaxTypeName-1], t.typ)
		body := append(spec, t.params...)
		body = append(body, 0)
		for len(body)%8 != 0 {
			body = append(body, 0)
		}
		if i+1 < len(targets) {
			ne.PutUint32(body[20:], uint32(len(data)+len(body)))
		}
		data = append(data, body...)
	}
	buf := make([]byte, dmIoctlSize, dmIoctlSize+len(data))
	buf = append(buf, data...)
	ne.PutUint32(buf[offVersion:], dmVersionMajor)
	ne.PutUint32(buf[offVersion+4:], 48)
	ne.PutUint32(buf[offDataSize:], uint32(len(buf)))
	ne.PutUint32(buf[offDataStart:], dmIoctlSize)
	ne.PutUint32(buf[offTargetCount:], uint32(len(targets)))
	ne.PutUint32(buf[offFlags:], dmStatusTableFlag|dmSecureDataFlag|1<<5)
	return buf
}

// fakeDM answers DM_TABLE_STATUS from recorded payloads keyed by
// "major:minor" and keeps every buffer it handed out, so tests can check
// that the collector zeroed them.
type fakeDM struct {
	payloads map[string][]byte
	handed   [][]byte
	closed   bool
}

func (f *fakeDM) TableStatus(major, minor uint32) ([]byte, error) {
	p, ok := f.payloads[mmString(major, minor)]
	if !ok {
		return nil, os.ErrNotExist
	}
	b := append([]byte(nil), p...)
	f.handed = append(f.handed, b)
	return b, nil
}

func (f *fakeDM) Close() error { f.closed = true; return nil }

func mmString(major, minor uint32) string { return fmt.Sprintf("%d:%d", major, minor) }
