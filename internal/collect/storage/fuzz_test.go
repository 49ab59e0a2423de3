package storage

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/collect/storage/dmtest"
	"github.com/slowpath/slowpath/internal/dmioctl"
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

// FuzzRedactCryptParams: whatever the params, a hex key field never
// survives into the output. (testdata/fuzz holds an input it found where
// another field repeats the key's digits.)
func FuzzRedactCryptParams(f *testing.F) {
	f.Add("aes-xts-plain64", testKey, "0 8:2 0 1 allow_discards")
	f.Add("aes", ":32:logon:x", "0 /dev/sda 0")
	f.Add("", "-", "")
	f.Fuzz(func(t *testing.T, cipher, key, rest string) {
		in := cipher + " " + key + " " + rest
		out, err := redactCryptParams([]byte(in))
		f := strings.Fields(in)
		if len(f) >= 5 && len(f[1]) >= 8 && isHex([]byte(f[1])) {
			// The key's digits may also be another field (an offset of
			// zeros): they must not appear more often than there.
			others := strings.Join(append([]string{f[0]}, f[2:]...), " ")
			if strings.Count(out, f[1]) > strings.Count(others, f[1]) {
				t.Fatalf("key %q survived: %q", f[1], out)
			}
			if of := strings.Fields(out); len(of) < 2 || !strings.HasPrefix(of[1], "redacted:") {
				t.Fatalf("key field not redacted: %q", out)
			}
		}
		if err == nil && len(f) < 5 {
			t.Fatalf("short params accepted: %q", in)
		}
	})
}

func FuzzRedactIntegrityParams(f *testing.F) {
	f.Add("8:1 0 28 J 1 internal_hash:hmac(sha256):" + testKey[:64])
	f.Fuzz(func(t *testing.T, in string) {
		out := redactIntegrityParams([]byte(in))
		// Fields map one to one; another field may repeat a key's digits,
		// so each key is looked for in its own field of the output.
		inf, outf := strings.Fields(in), strings.Fields(out)
		if len(outf) != len(inf) {
			t.Fatalf("%d fields in, %d out: %q", len(inf), len(outf), out)
		}
		for i, w := range inf {
			for _, pre := range []string{"internal_hash:", "journal_crypt:", "journal_mac:"} {
				if rest, ok := strings.CutPrefix(w, pre); ok {
					if _, key, ok := strings.Cut(rest, ":"); ok && len(key) >= 8 && isHex([]byte(key)) && strings.Contains(outf[i], key) {
						t.Fatalf("integrity key %q survived: %q", key, out)
					}
				}
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
