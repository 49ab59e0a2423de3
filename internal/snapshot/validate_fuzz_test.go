package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// devValidName is net/core/dev.c dev_valid_name() written again, byte for
// byte from the C, for the fuzz oracle: it must not share code with the
// validator it checks.
func devValidName(name string) bool {
	if len(name) == 0 || len(name) >= 16 || name == "." || name == ".." {
		return false
	}
	// lib/ctype.c marks 9-13, 32 and 160 as _S.
	space := []byte{9, 10, 11, 12, 13, 32, 160}
	for _, c := range []byte(name) {
		if c == 0 || c == '/' || c == ':' || bytes.IndexByte(space, c) >= 0 {
			return false
		}
	}
	return true
}

// noControl: no byte below 0x20, no DEL, no C1 rune, no U+2028 or U+2029;
// valid UTF-8.
func noControl(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == 0x2028 || r == 0x2029 {
			return false
		}
	}
	return true
}

var sysctlKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+$`)
var majMinRE = regexp.MustCompile(`^(0|[1-9][0-9]{0,3}):(0|[1-9][0-9]{0,6})$`)

// checkInvariants states, independently of validate.go, what every snapshot
// Decode returns must satisfy; it returns what is broken, or "".
func checkInvariants(s *Snapshot) string {
	ifname := func(n string) bool { return devValidName(n) && noControl(n) }
	if n := s.Net; n != nil {
		for _, i := range n.Interfaces {
			if !ifname(i.Name) || i.Master != "" && !ifname(i.Master) {
				return "interface name " + showString(i.Name) + " / master " + showString(i.Master)
			}
			for _, l := range append(append([]string{}, i.Lower...), i.Upper...) {
				if !ifname(l) {
					return "lower/upper " + showString(l)
				}
			}
		}
		for k, v := range n.Sysctls {
			if !sysctlKeyRE.MatchString(k) || v < -1<<31 || v > 1<<31-1 {
				return "sysctl " + showString(k)
			}
		}
		for _, smp := range n.Samples {
			for _, c := range smp.Interfaces {
				if !ifname(c.Name) {
					return "sample interface " + showString(c.Name)
				}
			}
			if c := smp.SoftnetColumns; c != 0 && c < 9 {
				return "softnet columns"
			}
		}
	}
	if st := s.Storage; st != nil {
		for _, m := range st.Mounts {
			if !strings.HasPrefix(m.MountPoint, "/") || path.Clean(m.MountPoint) != m.MountPoint || !noControl(m.MountPoint) {
				return "mount point " + showString(m.MountPoint)
			}
			if !majMinRE.MatchString(m.MajorMinor) {
				return "mount major:minor " + showString(m.MajorMinor)
			}
		}
		for _, d := range st.BlockDevices {
			for _, n := range append(append([]string{d.Name}, d.Slaves...), d.Holders...) {
				if n == "" || n == "." || n == ".." || strings.Contains(n, "/") || len(n) > 35 || !noControl(n) {
					return "block name " + showString(n)
				}
			}
			if !majMinRE.MatchString(d.MajorMinor) {
				return "block major:minor " + showString(d.MajorMinor)
			}
			if d.DM != nil {
				if n := d.DM.Name; n == "" || len(n) > 127 || strings.Contains(n, "/") || n == "control" || n == "." || n == ".." || !noControl(n) {
					return "dm name " + showString(n)
				}
				for _, t := range d.DM.Targets {
					if strings.ContainsAny(t.Params, "\n\x00") {
						return "dm params " + showString(t.Params)
					}
				}
			}
		}
	}
	if h := s.Host; h != nil {
		if len(h.KernelRelease) > 64 || strings.ContainsAny(h.KernelRelease, " \t\n") {
			return "kernel release " + showString(h.KernelRelease)
		}
	}
	if e := s.Engines; e != nil {
		absPath := func(p string) bool { return strings.HasPrefix(p, "/") && path.Clean(p) == p && noControl(p) }
		for _, p := range e.Processes {
			if p.PID <= 0 || p.Comm == "" || len(p.Comm) > 15 || !noControl(p.Comm) {
				return "engine pid/comm " + showString(p.Comm)
			}
			if p.DataDir != "" && !absPath(p.DataDir) || p.DataDev != "" && !majMinRE.MatchString(p.DataDev) {
				return "engine data dir " + showString(p.DataDir) + " dev " + showString(p.DataDev)
			}
			for _, f := range p.ConfigFiles {
				if !absPath(f) {
					return "engine config file " + showString(f)
				}
			}
			for _, x := range p.Encryption {
				if x.Setting == "" || strings.ContainsAny(x.Setting, " \t\n") || !noControl(x.Value) || x.Path != "" && !absPath(x.Path) {
					return "engine setting " + showString(x.Setting)
				}
			}
		}
	}
	if c := s.Cloud; c != nil && c.Provider != "azure" && c.Provider != "aws" && c.Provider != "gcp" {
		return "cloud provider " + showString(c.Provider)
	}
	for _, e := range s.Manifest.Errors {
		if !noControl(strings.NewReplacer("\n", "", "\t", "").Replace(e.Message)) {
			return "manifest error message " + showString(e.Message)
		}
	}
	return ""
}

// FuzzDecodeValidate: Decode never panics; it returns either a snapshot or
// an error, never both; an ErrInvalid error is a *ValidationError whose
// message carries no control character; a returned snapshot satisfies the
// invariants stated independently above and still decodes after Encode.
func FuzzDecodeValidate(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "hosts", "*.json"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	var base bytes.Buffer
	if err := Encode(&base, validBase()); err != nil {
		f.Fatal(err)
	}
	f.Add(base.Bytes())
	for _, name := range []string{"a;reboot", "x;touch${IFS}/tmp/PWNED;#", "../x", "a\nb", "a\x00b", "abcdefghijklmnop", "\xff\xfe", "à", "$(id)"} {
		f.Add(bytes.Replace(base.Bytes(), []byte(`"eth0"`), []byte(quoteJSON(name)), -1))
	}
	f.Add([]byte(`{"manifest":{"format_version":1},"net":{"interfaces":[{"name":"a b"}]}}`))
	f.Add([]byte(`{"manifest":{"format_version":1},"storage":{"mounts":[{"mount_point":"/a/../b","major_minor":"0:1","root":"/","fs_type":"x"}]}}`))
	f.Add([]byte(`{"manifest":{"format_version":1},"net":{"sysctls":{"net.core.x\nkernel.y":1}}}`))

	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Decode(bytes.NewReader(data))
		if err != nil {
			if s != nil {
				t.Fatalf("Decode returned a snapshot and an error: %v", err)
			}
			if errors.Is(err, ErrInvalid) {
				var ve *ValidationError
				if !errors.As(err, &ve) || ve.Path == "" || ve.Source == "" {
					t.Fatalf("ErrInvalid without a path and source: %v", err)
				}
				if strings.ContainsFunc(err.Error(), func(r rune) bool { return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 }) {
					t.Fatalf("error message carries a control character: %q", err)
				}
			}
			return
		}
		if s == nil {
			t.Fatal("Decode returned neither a snapshot nor an error")
		}
		if why := checkInvariants(s); why != "" {
			t.Fatalf("Decode accepted a snapshot that breaks an invariant: %s", why)
		}
		var buf bytes.Buffer
		if err := Encode(&buf, s); err != nil {
			t.Fatalf("Encode of a decoded snapshot: %v", err)
		}
		if _, err := Decode(&buf); err != nil {
			t.Fatalf("a decoded snapshot, encoded again, no longer decodes: %v", err)
		}
	})
}

// quoteJSON escapes control characters; invalid UTF-8 becomes U+FFFD, as
// any JSON a decoder reads would carry it.
func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
