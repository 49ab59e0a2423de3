package storagemodel

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseCryptParams(t *testing.T) {
	tests := []struct {
		name   string
		params string
		want   *Crypt
	}{
		{
			name:   "luks2 default, redacted hex key",
			params: "aes-xts-plain64 redacted:512 0 259:1 32768",
			want: &Crypt{CipherSpec: "aes-xts-plain64", Cipher: "aes", ChainMode: "xts", IVMode: "plain64", KeyCount: 1,
				KeyBits: 512, KeySource: "hex", Device: "259:1", Offset: 32768, SectorSize: 512},
		},
		{
			name:   "keyring key, capi spec, flags and 4k sectors",
			params: "capi:xts(aes)-plain64 :64:logon:cryptsetup:3f0c-d0 0 8:16 32768 4 no_read_workqueue no_write_workqueue sector_size:4096 allow_discards",
			want: &Crypt{CipherSpec: "capi:xts(aes)-plain64", Cipher: "aes", ChainMode: "xts", IVMode: "plain64", KeyCount: 1, Capi: true,
				KeyBits: 512, KeySource: "keyring", KeyringType: "logon", Device: "8:16", Offset: 32768, SectorSize: 4096,
				NoReadWorkqueue: true, NoWriteWorkqueue: true, AllowDiscards: true},
		},
		{
			name:   "essiv with ivopts, all cpu flags",
			params: "aes-cbc-essiv:sha256 redacted:256 0 /dev/sdb 0 5 same_cpu_crypt submit_from_crypt_cpus high_priority iv_large_sectors integrity_key_size:32",
			want: &Crypt{CipherSpec: "aes-cbc-essiv:sha256", Cipher: "aes", ChainMode: "cbc", IVMode: "essiv", IVOpts: "sha256", KeyCount: 1,
				KeyBits: 256, KeySource: "hex", Device: "/dev/sdb", SectorSize: 512,
				SameCPUCrypt: true, SubmitFromCryptCPUs: true, HighPriority: true, IVLargeSectors: true, IntegrityKeySize: 32},
		},
		{
			name:   "authenticated capi with integrity",
			params: "capi:authenc(hmac(sha256),xts(aes))-random redacted:768 0 253:1 0 1 integrity:32:aead",
			want: &Crypt{CipherSpec: "capi:authenc(hmac(sha256),xts(aes))-random", Cipher: "aes", ChainMode: "xts", IVMode: "random",
				KeyCount: 1, Capi: true, AuthMode: "hmac(sha256)", KeyBits: 768, KeySource: "hex", Device: "253:1", SectorSize: 512,
				Integrity: "32:aead"},
		},
		{
			name:   "empty key, keycount, unknown future flag",
			params: "serpent:64-cbc-lmk - 0 7:0 0 1 some_future_flag",
			want: &Crypt{CipherSpec: "serpent:64-cbc-lmk", Cipher: "serpent", ChainMode: "cbc", IVMode: "lmk", KeyCount: 64,
				KeySource: "none", Device: "7:0", SectorSize: 512, Unknown: []string{"some_future_flag"}},
		},
		{
			name:   "key field the collector could not size",
			params: "aes-xts-plain64 redacted 0 8:0 0",
			want: &Crypt{CipherSpec: "aes-xts-plain64", Cipher: "aes", ChainMode: "xts", IVMode: "plain64", KeyCount: 1,
				KeySource: "unknown", Device: "8:0", SectorSize: 512},
		},
		{
			name:   "old-style bare cipher means cbc-plain",
			params: "aes redacted:128 0 8:0 0",
			want: &Crypt{CipherSpec: "aes", Cipher: "aes", ChainMode: "cbc", IVMode: "plain", KeyCount: 1, KeyBits: 128,
				KeySource: "hex", Device: "8:0", SectorSize: 512},
		},
		{
			name:   "adiantum",
			params: "capi:adiantum(xchacha12,aes)-plain64 redacted:256 0 8:0 0",
			want: &Crypt{CipherSpec: "capi:adiantum(xchacha12,aes)-plain64", Cipher: "xchacha12,aes", ChainMode: "adiantum", IVMode: "plain64",
				KeyCount: 1, Capi: true, KeyBits: 256, KeySource: "hex", Device: "8:0", SectorSize: 512},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCryptParams(tt.params)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestParseCryptParamsMalformed(t *testing.T) {
	tests := []struct{ name, params, want string }{
		{"empty", "", "want at least 5 fields"},
		{"truncated", "aes-xts-plain64 redacted:512 0", "want at least 5 fields"},
		{"raw hex key refused", "aes-xts-plain64 0123456789abcdef0123456789abcdef 0 8:0 0", "unredacted key material is refused"},
		{"bad redacted", "aes-xts-plain64 redacted:x 0 8:0 0", "redacted:<bits>"},
		{"bad keyring", "aes-xts-plain64 :64:logon 0 8:0 0", "keyring key"},
		{"bad iv offset", "aes-xts-plain64 redacted:512 x 8:0 0", "iv_offset"},
		{"bad offset", "aes-xts-plain64 redacted:512 0 8:0 -1", "offset"},
		{"count mismatch", "aes-xts-plain64 redacted:512 0 8:0 0 3 allow_discards", "3 optional parameters announced, 1 present"},
		{"bad count", "aes-xts-plain64 redacted:512 0 8:0 0 x", "optional parameter count"},
		{"bad sector size", "aes-xts-plain64 redacted:512 0 8:0 0 1 sector_size:1000", "sector_size"},
		{"missing iv mode", "aes-xts redacted:512 0 8:0 0", "missing IV mode"},
		{"too many dashes", "aes-xts-plain64-x redacted:512 0 8:0 0", "cipher-chainmode-ivmode"},
		{"capi without iv", "capi:xts(aes) redacted:512 0 8:0 0", "missing -ivmode"},
		{"capi unbalanced", "capi:xts(aes-plain64 redacted:512 0 8:0 0", "capi cipher"},
		{"capi bare", "capi:aes-plain64 redacted:512 0 8:0 0", "want mode(cipher)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCryptParams(tt.params)
			if err == nil {
				t.Fatalf("no error for %q", tt.params)
			}
			if !errors.Is(err, ErrCryptParams) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want ErrCryptParams containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "0123456789abcdef") {
				t.Errorf("error message echoes key material: %v", err)
			}
		})
	}
}

func TestCryptFlags(t *testing.T) {
	c, err := ParseCryptParams("aes-xts-plain64 redacted:512 0 8:0 0 4 same_cpu_crypt no_read_workqueue integrity:28:aead sector_size:4096")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"same_cpu_crypt", "no_read_workqueue", "integrity:28:aead", "sector_size:4096"}
	if d := cmp.Diff(want, c.Flags()); d != "" {
		t.Errorf("flags (-want +got):\n%s", d)
	}
	if !c.IsAES() {
		t.Error("aes-xts not recognised as AES")
	}
}

func FuzzParseCryptParams(f *testing.F) {
	for _, s := range []string{
		"aes-xts-plain64 redacted:512 0 259:1 32768",
		"capi:xts(aes)-plain64 :64:logon:cryptsetup:x 0 8:16 0 2 no_read_workqueue sector_size:4096",
		"capi:authenc(hmac(sha256),xts(aes))-random redacted:768 0 253:1 0 1 integrity:32:aead",
		"aes - 0 7:0 0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCryptParams(s)
		if err != nil {
			if !errors.Is(err, ErrCryptParams) {
				t.Fatalf("error does not wrap ErrCryptParams: %v", err)
			}
			return
		}
		if c.Cipher == "" || c.SectorSize < 512 || c.KeyBits < 0 {
			t.Fatalf("accepted %q as %+v", s, c)
		}
	})
}

func FuzzParseCipherSpec(f *testing.F) {
	for _, s := range []string{"aes-xts-plain64", "capi:xts(aes)-plain64", "capi:essiv(cbc(aes),sha256)-essiv", "serpent:64-cbc-lmk", "aes"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCipherSpec(s)
		if err != nil {
			if !errors.Is(err, ErrCryptParams) {
				t.Fatalf("error does not wrap ErrCryptParams: %v", err)
			}
			return
		}
		if c.Cipher == "" || c.KeyCount < 1 {
			t.Fatalf("accepted %q as %+v", s, c)
		}
	})
}
