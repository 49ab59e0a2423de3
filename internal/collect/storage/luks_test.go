package storage

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// cryptsetup runs cryptsetup on an image file (no device-mapper needed:
// format, add key, token import and dump only write and read the file).
func cryptsetup(t *testing.T, stdin string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(testenv.RequireTool(t, "cryptsetup", "cryptsetup-bin"), args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cryptsetup %v: %v\n%s", args, err, out)
	}
	return out
}

func image(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "luks.img")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 32<<20); err != nil {
		t.Fatal(err)
	}
	return p
}

// fast is what keeps formatting quick: a test volume needs no real KDF.
var fast = []string{"--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000", "-q"}

// luksImage is a new image file formatted by cryptsetup as typ (luks1 or
// luks2) with the first passphrase in key slot 0 and each further one in
// the next slot.
func luksImage(t *testing.T, typ string, passphrases ...string) string {
	t.Helper()
	img := image(t)
	cryptsetup(t, passphrases[0], append(append([]string{"luksFormat", "--type", typ}, fast...), "--key-file", "-", img)...)
	for i, p := range passphrases[1:] {
		kf := filepath.Join(t.TempDir(), fmt.Sprintf("key%d", i))
		if err := os.WriteFile(kf, []byte(p), 0o600); err != nil {
			t.Fatal(err)
		}
		cryptsetup(t, passphrases[0], append(append([]string{"luksAddKey"}, fast...), "--key-file", "-", img, kf)...)
	}
	return img
}

// TestLUKS2HeaderAgainstCryptsetup: a LUKS2 volume made by cryptsetup, with
// two key slots (the second of priority ignore), a systemd-tpm2 token on
// one and a clevis token on the other, read by parseLUKSHeader and by
// cryptsetup's own JSON dump (luksDump --dump-json-metadata): the same
// slots that can open it, token types and flags.
func TestLUKS2HeaderAgainstCryptsetup(t *testing.T) {
	img := luksImage(t, "luks2", "pw", "second")
	// A slot of priority ignore opens the volume only when named: not one
	// a refresh would use.
	cryptsetup(t, "", "config", "--key-slot", "1", "--priority", "ignore", img)
	tokens := filepath.Join(t.TempDir(), "tokens")
	for i, tok := range []string{
		`{"type":"systemd-tpm2","keyslots":["0"],"tpm2-blob":"c2VjcmV0","tpm2-pcrs":[7],"tpm2-pcr-bank":"sha256","tpm2-primary-alg":"ecc","tpm2-policy-hash":"00"}`,
		`{"type":"clevis","keyslots":["1"],"jwe":{"protected":"eyJhbGciOiJkaXIifQ","encrypted_key":"","iv":"","ciphertext":"c2VjcmV0","tag":""}}`,
	} {
		p := tokens + strconv.Itoa(i)
		if err := os.WriteFile(p, []byte(tok), 0o600); err != nil {
			t.Fatal(err)
		}
		cryptsetup(t, "", "token", "import", "--json-file", p, img)
	}
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := parseLUKSHeader(f)
	if err != nil {
		t.Fatal(err)
	}

	var dump struct {
		Keyslots map[string]struct {
			Type     string `json:"type"`
			Priority *int   `json:"priority"`
		} `json:"keyslots"`
		Tokens map[string]struct {
			Type     string   `json:"type"`
			Keyslots []string `json:"keyslots"`
		} `json:"tokens"`
		Config struct {
			Flags []string `json:"flags"`
		} `json:"config"`
	}
	if err := json.Unmarshal(cryptsetup(t, "", "luksDump", "--dump-json-metadata", img), &dump); err != nil {
		t.Fatal(err)
	}
	want := snapshot.LUKSHeader{Version: 2, Flags: dump.Config.Flags}
	for id, ks := range dump.Keyslots {
		if ks.Type != "luks2" || ks.Priority != nil && *ks.Priority == 0 {
			continue // cannot open the volume unless named
		}
		n, _ := strconv.Atoi(id)
		want.Keyslots = append(want.Keyslots, n)
	}
	slices.Sort(want.Keyslots)
	var ids []int
	for id := range dump.Tokens {
		n, _ := strconv.Atoi(id)
		ids = append(ids, n)
	}
	slices.Sort(ids)
	for _, n := range ids {
		tok := dump.Tokens[strconv.Itoa(n)]
		lt := snapshot.LUKSToken{Type: tok.Type}
		for _, k := range tok.Keyslots {
			v, _ := strconv.Atoi(k)
			lt.Keyslots = append(lt.Keyslots, v)
		}
		want.Tokens = append(want.Tokens, lt)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed %+v\ncryptsetup says %+v", got, want)
	}
	if !reflect.DeepEqual(got.Keyslots, []int{0}) || len(got.Tokens) != 2 || got.Tokens[0].Type != "systemd-tpm2" || got.Tokens[1].Type != "clevis" {
		t.Errorf("parsed %+v: want slot 0 (slot 1 is priority ignore), a systemd-tpm2 and a clevis token", got)
	}
	// Nothing of a token but its type and slots is kept.
	b, _ := json.Marshal(got)
	if bytes.Contains(b, []byte("c2VjcmV0")) || bytes.Contains(b, []byte("pcr")) {
		t.Errorf("token contents reached the snapshot: %s", b)
	}
}

// TestLUKS1HeaderAgainstCryptsetup: a LUKS1 volume whose first slot was
// killed after a second was added: the active slots are what luksDump
// prints as ENABLED.
func TestLUKS1HeaderAgainstCryptsetup(t *testing.T) {
	img := luksImage(t, "luks1", "pw", "second")
	cryptsetup(t, "second", "luksKillSlot", "--key-file", "-", "-q", img, "0")
	var want []int
	for _, m := range regexp.MustCompile(`(?m)^Key Slot (\d): ENABLED`).FindAllStringSubmatch(string(cryptsetup(t, "", "luksDump", img)), -1) {
		n, _ := strconv.Atoi(m[1])
		want = append(want, n)
	}
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := parseLUKSHeader(f)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 1 || !reflect.DeepEqual(got.Keyslots, want) || !reflect.DeepEqual(want, []int{1}) {
		t.Errorf("parsed %+v, luksDump enables %v (want [1])", got, want)
	}
}

// luks2Bytes is a LUKS2 header with the given JSON metadata and hdr_size.
func luks2Bytes(meta string, size uint64) []byte {
	b := make([]byte, size)
	copy(b, luksMagic)
	binary.BigEndian.PutUint16(b[6:], 2)
	binary.BigEndian.PutUint64(b[8:], size)
	copy(b[luks2BinarySize:], meta)
	return b
}

func withHdrSize(b []byte, size uint64) []byte {
	binary.BigEndian.PutUint64(b[8:], size)
	return b
}

func TestParseLUKSHeader(t *testing.T) {
	ok := `{"keyslots":{"1":{"type":"luks2"},"0":{"type":"luks2","priority":1},"2":{"type":"luks2","priority":0},"3":{"type":"reencrypt"}},"tokens":{"3":{"type":"luks2-keyring","keyslots":["1"]},"0":{"type":"systemd-fido2","keyslots":["0"]}},"config":{"flags":["no-read-workqueue","no-write-workqueue"]}}`
	tests := []struct {
		name string
		in   []byte
		want snapshot.LUKSHeader
		err  string
	}{
		{"luks2", luks2Bytes(ok, 16384), snapshot.LUKSHeader{Version: 2, Keyslots: []int{0, 1},
			Tokens: []snapshot.LUKSToken{{Type: "systemd-fido2", Keyslots: []int{0}}, {Type: "luks2-keyring", Keyslots: []int{1}}},
			Flags:  []string{"no-read-workqueue", "no-write-workqueue"}}, ""},
		{"empty", nil, snapshot.LUKSHeader{}, "no LUKS header"},
		{"not luks", bytes.Repeat([]byte{0}, 4096), snapshot.LUKSHeader{}, "no LUKS header"},
		{"version 3", append(append([]byte{}, luksMagic...), 0, 3), snapshot.LUKSHeader{}, "LUKS version 3"},
		{"luks1 truncated", append(append([]byte{}, luksMagic...), 0, 1), snapshot.LUKSHeader{}, "LUKS1 header truncated"},
		{"luks2 binary truncated", luks2Bytes(ok, 16384)[:100], snapshot.LUKSHeader{}, "LUKS2 header truncated"},
		{"luks2 json truncated", luks2Bytes(ok, 16384)[:8192], snapshot.LUKSHeader{}, "JSON area truncated"},
		{"hdr_size small", withHdrSize(luks2Bytes(ok, 16384), 8192), snapshot.LUKSHeader{}, "hdr_size 8192"},
		{"hdr_size large", withHdrSize(luks2Bytes(ok, 16384), 8<<20), snapshot.LUKSHeader{}, "hdr_size 8388608"},
		{"bad json", luks2Bytes(`{"keyslots":`, 16384), snapshot.LUKSHeader{}, "LUKS2 metadata"},
		{"token type with a space", luks2Bytes(`{"tokens":{"0":{"type":"a b"}}}`, 16384), snapshot.LUKSHeader{}, "not a token type name"},
		{"token type newline", luks2Bytes(`{"tokens":{"0":{"type":"x\n#"}}}`, 16384), snapshot.LUKSHeader{}, "not a token type name"},
		{"slot id 01", luks2Bytes(`{"keyslots":{"01":{}}}`, 16384), snapshot.LUKSHeader{}, "key slot id"},
		{"slot id 32", luks2Bytes(`{"keyslots":{"32":{}}}`, 16384), snapshot.LUKSHeader{}, "key slot id"},
		{"token slot -1", luks2Bytes(`{"tokens":{"0":{"type":"t","keyslots":["-1"]}}}`, 16384), snapshot.LUKSHeader{}, "key slot id"},
		{"bad flag", luks2Bytes(`{"config":{"flags":["$(x)"]}}`, 16384), snapshot.LUKSHeader{}, "not a flag name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseLUKSHeader(bytes.NewReader(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// FuzzParseLUKSHeader: never a panic; what is kept is ids in range,
// sorted, and token types and flags that are plain words.
func FuzzParseLUKSHeader(f *testing.F) {
	f.Add(luks2Bytes(`{"keyslots":{"0":{"type":"luks2"}},"tokens":{"0":{"type":"systemd-tpm2","keyslots":["0"]}},"config":{"flags":["allow-discards"]}}`, 16384))
	f.Add(append(append([]byte{}, luksMagic...), make([]byte, 600)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseLUKSHeader(bytes.NewReader(b))
		if err != nil {
			if errors.Is(err, errNoLUKS) && len(b) >= 6 && bytes.Equal(b[:6], luksMagic) {
				t.Fatalf("LUKS magic read as no LUKS header")
			}
			return
		}
		if !slices.IsSorted(h.Keyslots) {
			t.Fatalf("key slots %v not sorted", h.Keyslots)
		}
		max := luks2MaxSlots
		if h.Version == 1 {
			max = luks1Slots
		}
		for _, k := range h.Keyslots {
			if k < 0 || k >= max {
				t.Fatalf("key slot %d", k)
			}
		}
		for _, tok := range h.Tokens {
			if !snapshot.ValidLUKSWord(tok.Type) {
				t.Fatalf("token type %q", tok.Type)
			}
			for _, k := range tok.Keyslots {
				if k < 0 || k >= luks2MaxSlots {
					t.Fatalf("token key slot %d", k)
				}
			}
		}
		for _, fl := range h.Flags {
			if !snapshot.ValidLUKSWord(fl) {
				t.Fatalf("flag %q", fl)
			}
		}
	})
}

// TestLUKSHeadersOnlyLive: a foreign root's /dev is not the devices its
// sysfs names, so no header is read there; the mapping says why.
func TestLUKSHeadersOnlyLive(t *testing.T) {
	devs := []snapshot.BlockDevice{
		{Name: "dm-0", Slaves: []string{"nvme1n1"}, DM: &snapshot.DM{Name: "scratch", UUID: "CRYPT-LUKS2-0123-scratch"}},
		{Name: "dm-1", Slaves: []string{"sda"}, DM: &snapshot.DM{Name: "plain", UUID: "CRYPT-PLAIN-plain"}},
	}
	s := &snapshot.Snapshot{}
	readLUKSHeaders(hostfs.New(t.TempDir()), devs, s)
	if h := devs[0].DM.LUKS; h == nil || h.Device != "nvme1n1" || h.NotRead == "" || h.Version != 0 {
		t.Errorf("LUKS mapping in a foreign root: %+v", h)
	}
	if devs[1].DM.LUKS != nil {
		t.Errorf("a plain mapping got a LUKS header: %+v", devs[1].DM.LUKS)
	}
}

// TestLUKSHeadersLive: on the live host the header is read from the node
// of the device beneath (here a cryptsetup image where /dev/nvme1n1 would
// be); one that cannot be read says why, in the mapping and the manifest.
func TestLUKSHeadersLive(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	img := luksImage(t, "luks2", "pw")
	if err := os.Rename(img, filepath.Join(root, "dev", "nvme1n1")); err != nil {
		t.Fatal(err)
	}
	devs := []snapshot.BlockDevice{
		{Name: "dm-0", Slaves: []string{"nvme1n1"}, DM: &snapshot.DM{Name: "scratch", UUID: "CRYPT-LUKS2-0123-scratch"}},
		{Name: "dm-1", Slaves: []string{"sdb"}, DM: &snapshot.DM{Name: "gone", UUID: "CRYPT-LUKS1-4567-gone"}},
	}
	s := &snapshot.Snapshot{}
	readLUKSHeaders(hostfs.FS{Proc: filepath.Join(root, "proc"), Sys: filepath.Join(root, "sys"), Root: root, Live: true}, devs, s)
	if h := devs[0].DM.LUKS; h == nil || h.Version != 2 || h.Device != "nvme1n1" || !reflect.DeepEqual(h.Keyslots, []int{0}) || h.NotRead != "" {
		t.Errorf("header of scratch: %+v", h)
	}
	if h := devs[1].DM.LUKS; h == nil || h.NotRead == "" || h.Device != "sdb" {
		t.Errorf("header of a missing device: %+v", h)
	}
	if len(s.Manifest.Errors) != 1 || s.Manifest.Errors[0].Collector != "storage.luks" {
		t.Errorf("manifest errors %+v, want one of storage.luks", s.Manifest.Errors)
	}
}
