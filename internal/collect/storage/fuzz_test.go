package storage

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/dmioctl"
	"github.com/slowpath/slowpath/internal/testing/dmtest"
)

func FuzzParseMountInfo(f *testing.F) {
	f.Add("36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n")
	f.Add(`40 27 0:50 /a\134b /mnt/a\040b rw - fuse.sshfs u@h:/x\04 rw` + "\n- - -\n")
	f.Fuzz(func(t *testing.T, in string) {
		ms, _, _ := parseMountInfo(strings.NewReader(in))
		for _, m := range ms {
			if m.FSType == "" || !validMajorMinor(m.MajorMinor) {
				t.Fatalf("accepted mount without type or device: %+v", m)
			}
		}
	})
}

func FuzzParseScheduler(f *testing.F) {
	f.Add("none [mq-deadline] kyber bfq")
	f.Add("[]")
	f.Fuzz(func(t *testing.T, in string) {
		active, all, err := parseScheduler(in)
		if err == nil && active == "" {
			t.Fatalf("no error and no active scheduler for %q (%q)", in, all)
		}
	})
}

// wantKeyField is what the key position of redacted params must hold for
// key: the placeholders the redactors document, nothing of the key itself.
// A keyring reference (":<size>:<type>:<desc>") and "-" name no key
// material and are kept as they are.
func wantKeyField(key string, keepRefs bool) string {
	switch {
	case keepRefs && (key == "-" || strings.HasPrefix(key, ":")):
		return key
	case isHex([]byte(key)):
		return "redacted:" + strconv.Itoa(4*len(key))
	}
	return "redacted"
}

// FuzzRedactCryptParams: a key "survives" when the output's key position
// (its second field) holds anything but the placeholder wantKeyField
// gives. The key's digits elsewhere (an offset of zeros, a cipher name)
// are not the key, so the oracle never searches the output for them as a
// substring (testdata/fuzz holds such an input). Every other field is
// kept as it was.
func FuzzRedactCryptParams(f *testing.F) {
	f.Add("aes-xts-plain64", testKey, "0 8:2 0 1 allow_discards")
	f.Add("aes", ":32:logon:x", "0 /dev/sda 0")
	f.Add("", "-", "")
	f.Add("00000000", "00000000", "00000000 00000000 00000000")
	f.Fuzz(func(t *testing.T, cipher, key, rest string) {
		in := cipher + " " + key + " " + rest
		out, err := redactCryptParams([]byte(in))
		inf, outf := strings.Fields(in), strings.Fields(out)
		if len(inf) < 5 {
			if err == nil || out != "" {
				t.Fatalf("short params %q: got %q, %v; want them dropped with an error", in, out, err)
			}
			return
		}
		if len(outf) != len(inf) {
			t.Fatalf("%d fields in, %d out: %q", len(inf), len(outf), out)
		}
		want := wantKeyField(inf[1], true)
		if outf[1] != want {
			t.Fatalf("key position of %q holds %q, want %q", in, outf[1], want)
		}
		for i := range inf {
			if i != 1 && outf[i] != inf[i] {
				t.Fatalf("field %d %q changed to %q", i, inf[i], outf[i])
			}
		}
		if (err != nil) != (want == "redacted") {
			t.Fatalf("key field %q replaced by %q with error %v (an error belongs to an unrecognised key field only)", inf[1], want, err)
		}
	})
}

// FuzzRedactIntegrityParams: every "internal_hash:<alg>:<key>",
// "journal_crypt:..." and "journal_mac:..." option keeps its name and
// algorithm, and its key position (after the second colon, as
// drivers/md/dm-integrity.c get_alg_and_key splits it) holds only the
// placeholder. A key "survives" when that position holds anything else;
// the same digits as the algorithm name or another field are not the key
// (internal_hash:00000000:00000000 was once reported as a survival).
func FuzzRedactIntegrityParams(f *testing.F) {
	f.Add("8:1 0 28 J 1 internal_hash:hmac(sha256):" + testKey[:64])
	f.Add("internal_hash:00000000:00000000")
	f.Add("8:1 0 28 J 3 internal_hash:crc32c journal_crypt:ctr(aes):0a0b:0c journal_mac:hmac(sha256):")
	f.Fuzz(func(t *testing.T, in string) {
		out := redactIntegrityParams([]byte(in))
		inf, outf := strings.Fields(in), strings.Fields(out)
		if len(outf) != len(inf) {
			t.Fatalf("%d fields in, %d out: %q", len(inf), len(outf), out)
		}
		for i, w := range inf {
			name, rest, _ := strings.Cut(w, ":")
			alg, key, hasKey := strings.Cut(rest, ":")
			switch name {
			case "internal_hash", "journal_crypt", "journal_mac":
			default:
				hasKey = false
			}
			if !hasKey {
				if outf[i] != w {
					t.Fatalf("field %d %q changed to %q", i, w, outf[i])
				}
				continue
			}
			got, ok := strings.CutPrefix(outf[i], name+":"+alg+":")
			if !ok {
				t.Fatalf("option %q lost its name or algorithm: %q", w, outf[i])
			}
			if want := wantKeyField(key, false); got != want {
				t.Fatalf("key position of %q holds %q, want %q", w, got, want)
			}
		}
	})
}

// FuzzRedactTableStatus: arbitrary ioctl answers never panic through
// decoding and redaction, and what decodes stays inside the buffer.
func FuzzRedactTableStatus(f *testing.F) {
	f.Add(dmtest.EncodeTableStatus([]dmtest.Target{dmtest.T(0, 8, "crypt", "aes-xts-plain64 "+testKey+" 0 8:2 0"), dmtest.T(8, 8, "linear", "8:1 0")}))
	f.Add(dmtest.EncodeTableStatus(nil))
	f.Add(make([]byte, dmioctl.HeaderSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		raw, err := dmioctl.DecodeTableStatus(b)
		if err != nil {
			return
		}
		for _, r := range raw {
			if !bytes.Contains(b, r.Params) {
				t.Fatal("params not from the buffer")
			}
		}
		redactTargets(raw)
	})
}

func FuzzDecodeFscryptPolicy(f *testing.F) {
	f.Add(uint64(24), []byte{2, 1, 4, 0})
	f.Fuzz(func(t *testing.T, size uint64, p []byte) {
		decodeFscryptPolicy(size, p)
	})
}

func FuzzParseDMTable(f *testing.F) {
	f.Add([]byte("0 2048 crypt aes-xts-plain64 " + testKey + " 0 8:2 0\n0 8 linear 8:1 0\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, _ := ParseDMTable(in)
		for _, tg := range got {
			if tg.Type == "crypt" {
				f := strings.Fields(tg.Params)
				if len(f) >= 2 && len(f[1]) >= 8 && isHex([]byte(f[1])) {
					t.Fatalf("hex key survived: %q", tg.Params)
				}
			}
		}
	})
}

// FuzzParseBlockStat: an accepted line has at least 11 fields and reads
// back the counters it was given.
func FuzzParseBlockStat(f *testing.F) {
	f.Add("255999 814 12369153 47919 996858 81 36123056 426009 0 301809 580491 0 0 0 0 60605 106562\n")
	f.Add("1 2 3 4 5 6 7 8 9 10")
	f.Add("1 2 3 4 5 6 7 8 9 10 11 +1")
	f.Fuzz(func(t *testing.T, in string) {
		st, err := parseBlockStat(in)
		if err != nil {
			if st != nil {
				t.Fatalf("error %v with a result %+v", err, st)
			}
			return
		}
		fields := strings.Fields(in)
		if st.Fields != len(fields) || st.Fields < 11 {
			t.Fatalf("Fields = %d for %d fields in %q", st.Fields, len(fields), in)
		}
		if got := strconv.FormatUint(st.TimeInQueueMS, 10); strings.TrimLeft(fields[10], "0") != strings.TrimLeft(got, "0") {
			t.Fatalf("time_in_queue %s read as %s from %q", fields[10], got, in)
		}
	})
}
