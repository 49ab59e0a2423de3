package capfile

import (
	"regexp"
	"strings"
	"testing"
)

// The regexps the checks replaced: the oracle they must agree with.
var (
	hexSHARE  = regexp.MustCompile(`^[0-9a-f]{64}$`)
	majMinRE  = regexp.MustCompile(`^[0-9]{1,10}:[0-9]{1,10}$`)
	devNameRE = regexp.MustCompile(`^[A-Za-z0-9_.:+-]{1,64}$`)
)

// agree fails t where a check and its regexp disagree on s.
func agree(t *testing.T, s string) {
	t.Helper()
	for _, c := range []struct {
		name  string
		check func(string) bool
		re    *regexp.Regexp
	}{{"isHexSHA", isHexSHA, hexSHARE}, {"isMajMin", isMajMin, majMinRE}, {"isDevName", isDevName, devNameRE}} {
		if got, want := c.check(s), c.re.MatchString(s); got != want {
			t.Errorf("%s(%q) = %v, the regexp says %v", c.name, s, got, want)
		}
	}
}

func TestManifestValueChecks(t *testing.T) {
	for _, s := range []string{
		"", ":", "8:0", "259:12", "0:0", "1234567890:1234567890", "12345678901:0", "8:", ":0", "8:0:1", "8 :0", "-1:0", "８:0",
		strings.Repeat("a", 64), strings.Repeat("f", 63), strings.Repeat("0", 65), strings.Repeat("A", 64), strings.Repeat("g", 64),
		"nvme0n1", "dm-0", "sda1", "md127", "vg0-lv_root", "a.b:c+d", strings.Repeat("x", 64), strings.Repeat("x", 65),
		"with space", "slash/name", "tab\tname", "nul\x00", "é", "ram0\n",
	} {
		agree(t, s)
	}
}

func FuzzManifestValueChecks(f *testing.F) {
	for _, s := range []string{"8:0", strings.Repeat("a", 64), "nvme0n1", "x\n", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { agree(t, s) })
}
