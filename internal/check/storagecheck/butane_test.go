package storagecheck

import (
	"reflect"
	"testing"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// butaneRoundTrip holds the Butane fragment for name to what a YAML reader
// (Butane's own is go-yaml) reads back: the same name and options.
func butaneRoundTrip(t *testing.T, name string) {
	t.Helper()
	flags := []string{"no_read_workqueue", "no_write_workqueue"}
	var doc struct {
		Storage struct {
			LUKS []struct {
				Name        string   `json:"name"`
				OpenOptions []string `json:"open_options"`
			} `json:"luks"`
		} `json:"storage"`
	}
	frag := butaneLUKS(name, flags)
	if err := yaml.UnmarshalStrict([]byte(frag), &doc); err != nil {
		t.Fatalf("name %q: fragment is not YAML: %v\n%s", name, err, frag)
	}
	l := doc.Storage.LUKS
	if len(l) != 1 || l[0].Name != name || !reflect.DeepEqual(l[0].OpenOptions, []string{"--perf-no_read_workqueue", "--perf-no_write_workqueue"}) {
		t.Fatalf("name %q read back as %+v\n%s", name, l, frag)
	}
}

// TestButaneHostileNames: a dm name YAML would read as something else
// (a mapping, a comment, an alias, a bool) stays the name.
func TestButaneHostileNames(t *testing.T) {
	for _, n := range []string{"scratch", "a: b", "x #y", "'q'", `"d"`, "-x", "- x", "[a]", "{b}", "*alias", "&anchor", "null", "true", "1e3", "~", "a\\b", "%TAG", "@x", "`x`", "é"} {
		butaneRoundTrip(t, n)
	}
}

// FuzzButaneLUKS: every name a dm name can be (printable, no newline)
// round-trips through the fragment.
func FuzzButaneLUKS(f *testing.F) {
	f.Add("scratch")
	f.Add("a: b #c")
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" || !utf8.ValidString(name) {
			return
		}
		for _, r := range name {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0xfeff {
				return // control characters are refused in a dm name (snapshot validation)
			}
		}
		butaneRoundTrip(t, name)
	})
}
