package analyze_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/collect/host"
	"github.com/slowpath/slowpath/internal/collect/storage"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/report"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/dmtest"
)

type noFscrypt struct{}

func (noFscrypt) Policy(string, uint64) (*snapshot.Fscrypt, error) { return nil, unix.ENODATA }

// TestKeyNeverLeaves collects a host whose dm-crypt tables carry real-looking
// hex keys (recorded DM_TABLE_STATUS payloads, as the kernel returns them)
// through the real collector and decoder, then proves that no key, in lower
// or upper case, is in the snapshot JSON, the archive, or any report format.
func TestKeyNeverLeaves(t *testing.T) {
	dir := t.TempDir()
	syn, err := dmtest.WriteSynthetic(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	// One more table shape: a second target and an integrity key.
	intKey := strings.ToUpper(dmtest.KeyFor(99)[:64])
	syn.Payloads["253:2"] = dmtest.EncodeTableStatus([]dmtest.Target{
		dmtest.T(0, 100, "crypt", "capi:authenc(hmac(sha256),xts(aes))-random "+dmtest.KeyFor(2)+" 0 259:3 0 1 integrity:32:aead"),
		dmtest.T(100, 100, "integrity", "259:3 0 32 J 1 internal_hash:hmac(sha256):"+intKey),
	})
	keys := append(syn.Keys, intKey)

	fs := hostfs.New(dir)
	ctl := &dmtest.Control{Payloads: syn.Payloads}
	s := &snapshot.Snapshot{Manifest: snapshot.Manifest{FormatVersion: snapshot.FormatVersion}}
	host.Collect(fs, s)
	(&storage.Collector{FS: fs, OpenDM: func() (storage.DMControl, error) { return ctl, nil }, Fscrypt: noFscrypt{}}).
		Collect(context.Background(), s)
	if !ctl.AllZero() {
		t.Error("raw ioctl buffers were not zeroed after decoding")
	}

	var outputs = map[string][]byte{}
	var js bytes.Buffer
	if err := snapshot.Encode(&js, s); err != nil {
		t.Fatal(err)
	}
	outputs["snapshot.json"] = js.Bytes()
	// The tables did go through: redacted, not dropped.
	for _, want := range []string{"aes-xts-plain64 redacted:512 0 259:1 32768", "-random redacted:512 0 259:3", "internal_hash:hmac(sha256):redacted:256"} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("snapshot lacks %q: the test would prove nothing", want)
		}
	}

	var arch bytes.Buffer
	if err := snapshot.WriteArchive(&arch, s); err != nil {
		t.Fatal(err)
	}
	outputs["archive (raw)"] = arch.Bytes()
	outputs["archive (unpacked)"] = unpack(t, arch.Bytes())

	loaded, err := snapshot.Decode(bytes.NewReader(js.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []*snapshot.Snapshot{s, loaded} {
		r, err := analyze.Run(src, check.Config{})
		if err != nil {
			t.Fatal(err)
		}
		for _, format := range []string{"text", "json", "markdown"} {
			var buf bytes.Buffer
			if err := report.Write(&buf, r, format, report.Options{Color: true}); err != nil {
				t.Fatal(err)
			}
			if buf.Len() == 0 {
				t.Errorf("%s report empty", format)
			}
			outputs["report."+format] = append(outputs["report."+format], buf.Bytes()...)
		}
	}

	for name, out := range outputs {
		for _, k := range keys {
			for _, form := range []string{strings.ToLower(k), strings.ToUpper(k), strings.ToLower(k[:16]), strings.ToUpper(k[:16])} {
				if bytes.Contains(out, []byte(form)) {
					t.Errorf("%s contains key material %q", name, form)
				}
			}
		}
	}
}

func unpack(t *testing.T, b []byte) []byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var all []byte
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return all
		}
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, h.Name...)
		c, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, c...)
	}
}
