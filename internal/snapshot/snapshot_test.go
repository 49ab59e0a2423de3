package snapshot

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func sample() *Snapshot {
	s := &Snapshot{
		Manifest: Manifest{FormatVersion: FormatVersion, Tool: "slowpath test", CollectedAt: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)},
		Host:     &Host{KernelRelease: "6.1.0-50-cloud-amd64", CPUFlags: []string{"aes", "avx2"}},
		Storage: &Storage{BlockDevices: []BlockDevice{{
			Name: "dm-0", MajorMinor: "253:0", Kind: KindDM,
			DM: &DM{Name: "data", Targets: []DMTarget{{Length: 2048, Type: "crypt", Params: "aes-xts-plain64 redacted:512 0 8:16 0"}}},
		}}},
	}
	s.AddError("storage.dm", "/dev/mapper/control", syscall.ENOENT)
	return s
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"s.json", "s.tar.gz"} {
		p := filepath.Join(dir, name)
		if err := Save(p, sample()); err != nil {
			t.Fatal(err)
		}
		got, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(sample(), got); d != "" {
			t.Errorf("%s round trip (-want +got):\n%s", name, d)
		}
	}
}

func TestAddErrorClassifies(t *testing.T) {
	s := sample()
	if got := s.Manifest.Errors[0].Kind; got != "missing" {
		t.Fatalf("kind = %q, want missing", got)
	}
	s.AddError("x", "y", nil)
	if len(s.Manifest.Errors) != 1 {
		t.Fatal("nil error was recorded")
	}
}

func TestLoadRejects(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var archive bytes.Buffer
	if err := WriteArchive(&archive, sample()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
	}{
		{"future version", write("v99.json", []byte(`{"manifest":{"format_version":99}}`)), "unsupported snapshot format version 99"},
		{"no version", write("v0.json", []byte(`{"manifest":{}}`)), "unsupported snapshot format version 0"},
		// Another file, named for what it is (recordkind).
		{"no manifest", write("empty.json", []byte(`{}`)), `not a snapshot: it has no "manifest"`},
		{"doctor's JSON", write("doctor.json", []byte(`{"format_version":1,"findings":[],"storage":{}}`)), "not a snapshot: this is a command's JSON output"},
		{"a capture manifest", write("manifest.json", []byte(`{"kind":"slowpath-capture","schema_version":1}`)), "not a snapshot: this is a slowpath capture"},
		{"truncated json", write("t.json", []byte(`{"manifest":{"format_ver`)), "decode snapshot"},
		{"truncated archive", write("t.tar.gz", archive.Bytes()[:archive.Len()/2]), "load snapshot"},
		{"not a snapshot archive", write("g.tar.gz", []byte{0x1f, 0x8b, 0, 0}), "gzip"},
		{"missing file", filepath.Join(dir, "absent.json"), "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	// Every malformed file tells the user what to do about it.
	for _, name := range []string{"t.json", "t.tar.gz", "g.tar.gz"} {
		if _, err := Load(filepath.Join(dir, name)); err == nil || !strings.Contains(err.Error(), "slowpath collect") {
			t.Errorf("Load(%s) error %v does not say to collect again", name, err)
		}
	}
	_, err := Load(filepath.Join(dir, "v99.json"))
	if !errors.Is(err, ErrVersion) {
		t.Errorf("version error does not wrap ErrVersion: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	var b bytes.Buffer
	_ = Encode(&b, sample())
	f.Add(b.Bytes())
	f.Add([]byte(`{"manifest":{"format_version":1},"storage":{"block_devices":[{}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Decode(bytes.NewReader(data))
		if err == nil && s.Manifest.FormatVersion != FormatVersion {
			t.Fatalf("accepted version %d", s.Manifest.FormatVersion)
		}
	})
}
