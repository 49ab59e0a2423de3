package vm

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sum is a distinct fake sha256 per name, so a test sees which entry won.
func sum(name string) string {
	var b strings.Builder
	for b.Len() < 64 {
		fmt.Fprintf(&b, "%x", []byte(name))
	}
	return b.String()[:64]
}

// stanzas writes a Packages file: one stanza per "PACKAGE VERSION".
func stanzas(entries ...string) string {
	var b strings.Builder
	for _, e := range entries {
		pkg, ver, _ := strings.Cut(e, " ")
		fmt.Fprintf(&b, "Package: %s\nSource: linux\nVersion: %s\nDescription: a kernel package\n multi-line description\nSHA256: %s\n\n", pkg, ver, sum(e))
	}
	return b.String()
}

func index(t *testing.T, text string) MemIndex {
	t.Helper()
	e, err := parseIndex(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return MemIndex(e)
}

// pin61 is kernels/6.1.pin's shape, with the fake sums of its versions.
func pin61() *Pin {
	p := &Pin{Name: "6.1", Release: "6.1.0-56-cloud-amd64", Version: "6.1.192-2",
		Suite: "http://deb.debian.org/debian-security bookworm-security main"}
	for _, pkg := range []string{"linux-image-6.1.0-56-cloud-amd64", "linux-headers-6.1.0-56-cloud-amd64", "linux-headers-6.1.0-56-common", "linux-kbuild-6.1", "linux-source-6.1"} {
		p.Debs = append(p.Debs, Deb{Package: pkg, SHA256: sum(pkg + " 6.1.192-2")})
	}
	return p
}

func pinned(pkgs ...string) []string {
	var out []string
	for _, p := range pkgs {
		out = append(out, p+" 6.1.192-2")
	}
	return out
}

var all61 = pinned("linux-image-6.1.0-56-cloud-amd64", "linux-headers-6.1.0-56-cloud-amd64", "linux-headers-6.1.0-56-common", "linux-kbuild-6.1", "linux-source-6.1")

func debs(r *Resolved) []string {
	var out []string
	for _, d := range r.Debs {
		s := d.Package + " " + d.Version
		if d.SHA256 != sum(s) {
			s += " (sha256 not the index's)"
		}
		if d.Pinned {
			s += " pinned"
		}
		out = append(out, s)
	}
	return out
}

func TestResolvePinAsPinned(t *testing.T) {
	r, err := ResolvePin(pin61(), index(t, stanzas(append(all61, "linux-kbuild-6.1 6.1.190-1", "linux-source-6.1 6.1.192-1")...)))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Changed) != 0 || r.Pin.Release != "6.1.0-56-cloud-amd64" || r.Pin.Version != "6.1.192-2" {
		t.Errorf("changed %q, release %s %s; want the pin as it is", r.Changed, r.Pin.Release, r.Pin.Version)
	}
	for _, d := range r.Debs {
		if !d.Pinned {
			t.Errorf("%s %s not marked pinned", d.Package, d.Version)
		}
	}
}

// The archive's move that broke CI: bookworm-security replaced
// linux-kbuild-6.1 192-2 by 192-3 and lists only the newest kbuild, while
// the image and source stay at 192-2.
func TestResolvePinNewerKbuild(t *testing.T) {
	idx := index(t, stanzas(
		"linux-image-6.1.0-56-cloud-amd64 6.1.192-2", "linux-headers-6.1.0-56-cloud-amd64 6.1.192-2",
		"linux-headers-6.1.0-56-common 6.1.192-2", "linux-kbuild-6.1 6.1.192-3",
		"linux-source-6.1 6.1.192-3", "linux-source-6.1 6.1.192-2", "linux-source-6.1 6.1.190-1",
		"linux-kbuild-6.10 6.10.1-1", // another series: never taken
	))
	r, err := ResolvePin(pin61(), idx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"linux-image-6.1.0-56-cloud-amd64 6.1.192-2 pinned", "linux-headers-6.1.0-56-cloud-amd64 6.1.192-2 pinned",
		"linux-headers-6.1.0-56-common 6.1.192-2 pinned", "linux-kbuild-6.1 6.1.192-3", "linux-source-6.1 6.1.192-2 pinned",
	}
	if diff := cmp.Diff(want, debs(r)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(r.Changed) != 1 || !strings.Contains(r.Changed[0], "linux-kbuild-6.1 6.1.192-2 is no longer listed in http://deb.debian.org/debian-security bookworm-security main; using linux-kbuild-6.1 6.1.192-3 (same upstream 6.1.192)") {
		t.Errorf("changed = %q, want one line saying kbuild moved to 192-3", r.Changed)
	}
	if r.Pin.Release != "6.1.0-56-cloud-amd64" {
		t.Errorf("release moved to %s", r.Pin.Release)
	}
}

// An ABI bump renames every package that carries the ABI: the newest
// image of the series and flavour wins, never another flavour or a -dbg.
func TestResolvePinNewerABI(t *testing.T) {
	idx := index(t, stanzas(
		"linux-image-6.1.0-55-cloud-amd64 6.1.190-1",
		"linux-image-6.1.0-57-cloud-amd64 6.1.195-1", "linux-headers-6.1.0-57-cloud-amd64 6.1.195-1", "linux-headers-6.1.0-57-common 6.1.195-1",
		"linux-image-6.1.0-58-amd64 6.1.197-1", "linux-image-6.1.0-58-cloud-amd64-dbg 6.1.197-1", "linux-image-6.1.0-58-cloud-amd64-unsigned 6.1.197-1",
		"linux-kbuild-6.1 6.1.195-1", "linux-source-6.1 6.1.195-1", "linux-source-6.1 6.1.192-2",
	))
	r, err := ResolvePin(pin61(), idx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"linux-image-6.1.0-57-cloud-amd64 6.1.195-1", "linux-headers-6.1.0-57-cloud-amd64 6.1.195-1",
		"linux-headers-6.1.0-57-common 6.1.195-1", "linux-kbuild-6.1 6.1.195-1", "linux-source-6.1 6.1.195-1",
	}
	if diff := cmp.Diff(want, debs(r)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if r.Pin.Release != "6.1.0-57-cloud-amd64" || r.Pin.Version != "6.1.195-1" || r.Pin.ImagePackage() != "linux-image-6.1.0-57-cloud-amd64" {
		t.Errorf("resolved %s %s", r.Pin.Release, r.Pin.Version)
	}
	if len(r.Changed) == 0 || !strings.Contains(r.Changed[0], "linux-image-6.1.0-56-cloud-amd64 6.1.192-2 is no longer listed") || !strings.Contains(r.Changed[0], "using linux-image-6.1.0-57-cloud-amd64 6.1.195-1") {
		t.Errorf("changed = %q", r.Changed)
	}
}

// Backports name the ABI by the upstream patch level, kbuild included.
func TestResolvePinBackportsScheme(t *testing.T) {
	p := &Pin{Name: "6.12", Release: "6.12.95+deb12-cloud-amd64", Version: "6.12.95-1~bpo12+1",
		Suite: "http://deb.debian.org/debian bookworm-backports main"}
	for _, pkg := range []string{"linux-image-6.12.95+deb12-cloud-amd64", "linux-headers-6.12.95+deb12-common", "linux-kbuild-6.12.95+deb12", "linux-source-6.12"} {
		p.Debs = append(p.Debs, Deb{Package: pkg, SHA256: sum(pkg + " 6.12.95-1~bpo12+1")})
	}
	idx := index(t, stanzas(
		"linux-image-6.12.101+deb12-cloud-amd64 6.12.101-1~bpo12+1", "linux-image-6.12.117+deb12-cloud-amd64 6.12.117-1~deb12u1",
		"linux-image-6.12.117+deb12-cloud-amd64-unsigned 6.12.117-1~deb12u1",
		"linux-headers-6.12.117+deb12-common 6.12.117-1~deb12u1", "linux-kbuild-6.12.117+deb12 6.12.117-1~deb12u1",
		"linux-source-6.12 6.12.117-1~deb12u1", "linux-source-6.12 6.12.95-1~bpo12+1", "linux-source-6.12 6.12.115-2~deb12u1",
	))
	r, err := ResolvePin(p, idx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"linux-image-6.12.117+deb12-cloud-amd64 6.12.117-1~deb12u1", "linux-headers-6.12.117+deb12-common 6.12.117-1~deb12u1",
		"linux-kbuild-6.12.117+deb12 6.12.117-1~deb12u1", "linux-source-6.12 6.12.117-1~deb12u1",
	}
	if diff := cmp.Diff(want, debs(r)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A series that left the suite is a named error that says which suite and
// what to do; a package that vanished alone names itself.
func TestResolvePinSeriesGone(t *testing.T) {
	idx := index(t, stanzas("linux-image-6.12.117+deb12-cloud-amd64 6.12.117-1~deb12u1", "linux-kbuild-6.1 6.1.192-3"))
	_, err := ResolvePin(pin61(), idx)
	if !errors.Is(err, ErrSeriesGone) {
		t.Fatalf("err = %v, want ErrSeriesGone", err)
	}
	for _, w := range []string{"kernel 6.1", "http://deb.debian.org/debian-security bookworm-security main", "linux-image-6.1.0-56-cloud-amd64 6.1.192-2", "linux-image-6.1.0-N-cloud-amd64", "Adding a kernel"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}

	// The image is there but its source is gone from the suite entirely.
	idx = index(t, stanzas(all61[:4]...))
	_, err = ResolvePin(pin61(), idx)
	if err == nil || !strings.Contains(err.Error(), "lists no linux-source-6.1") || errors.Is(err, ErrSeriesGone) {
		t.Errorf("err = %v, want one naming linux-source-6.1", err)
	}
}

// The same version with another sha256 is a changed package: refused.
func TestResolvePinChangedSum(t *testing.T) {
	text := stanzas(all61...)
	text = strings.Replace(text, sum("linux-kbuild-6.1 6.1.192-2"), strings.Repeat("0", 64), 1)
	_, err := ResolvePin(pin61(), index(t, text))
	if err == nil || !strings.Contains(err.Error(), "the same version changed") {
		t.Errorf("err = %v, want a refusal of the changed package", err)
	}
}

func TestSeriesAndRename(t *testing.T) {
	for _, tt := range []struct{ release, prefix, suffix string }{
		{"6.1.0-56-cloud-amd64", "6.1.0-", "-cloud-amd64"},
		{"5.10.0-32-cloud-amd64", "5.10.0-", "-cloud-amd64"},
		{"6.12.95+deb12-cloud-amd64", "6.12.", "+deb12-cloud-amd64"},
	} {
		p, _, s, err := series(tt.release)
		if err != nil || p != tt.prefix || s != tt.suffix {
			t.Errorf("series(%s) = %q %q %v", tt.release, p, s, err)
		}
	}
	if _, _, _, err := series("6.1-custom"); err == nil {
		t.Error("a release of neither scheme accepted")
	}
	for _, tt := range []struct{ in, want string }{
		{"linux-headers-6.1.0-56-common", "linux-headers-6.1.0-57-common"},
		{"linux-kbuild-6.1", "linux-kbuild-6.1"},
		{"linux-headers-6.1.0-567-common", "linux-headers-6.1.0-567-common"},
	} {
		if got := renameABI(tt.in, "6.1.0-56", "6.1.0-57"); got != tt.want {
			t.Errorf("renameABI(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// CompareVersions against dpkg itself, the oracle, on the versions the
// archive uses and deb-version(7)'s corner cases.
func TestCompareVersions(t *testing.T) {
	vs := []string{"6.1.192-2", "6.1.192-3", "6.1.192-10", "6.1.19-1", "6.12.95-1~bpo12+1", "6.12.95-1", "6.12.117-1~deb12u1",
		"6.12.95-1~bpo12+2", "1:0.1-1", "1.0~rc1-1", "1.0-1", "1.0a-1", "1.0+b1-1", "1.00-1", "1.0", "1.0-0", "1.0.1"}
	dpkg, err := exec.LookPath("dpkg")
	for _, a := range vs {
		for _, b := range vs {
			got := CompareVersions(a, b)
			if CompareVersions(b, a) != -got {
				t.Errorf("CompareVersions(%s, %s) = %d is not antisymmetric", a, b, got)
			}
			if err != nil {
				continue
			}
			lt := exec.Command(dpkg, "--compare-versions", a, "lt", b).Run() == nil
			gt := exec.Command(dpkg, "--compare-versions", a, "gt", b).Run() == nil
			want := 0
			if lt {
				want = -1
			} else if gt {
				want = 1
			}
			if got != want {
				t.Errorf("CompareVersions(%s, %s) = %d, dpkg says %d", a, b, got, want)
			}
		}
	}
	if err != nil {
		t.Logf("no dpkg (%v): antisymmetry only", err)
	}
}

// TestUpdatePins rewrites pins from resolutions (the pure part of `make
// vm-pins`): a rewritten pin resolves again to itself, every package
// pinned. With SLOWPATH_UPDATE_PINS=1 it rewrites kernels/*.pin from the
// suites as they are now (`make vm-pins`).
func TestUpdatePins(t *testing.T) {
	var text strings.Builder
	p := pin61()
	fmt.Fprintf(&text, "# Debian 12's kernel.\nrelease %s\nversion %s  # the image's\nsuite %s\ncpu max\n", p.Release, p.Version, p.Suite)
	for _, d := range p.Debs {
		fmt.Fprintf(&text, "deb %s %s\n", d.Package, d.SHA256)
	}
	for _, tt := range []struct {
		name    string
		index   []string
		release string
	}{
		{"kbuild rebuilt", []string{"linux-image-6.1.0-56-cloud-amd64 6.1.192-2", "linux-headers-6.1.0-56-cloud-amd64 6.1.192-2",
			"linux-headers-6.1.0-56-common 6.1.192-2", "linux-kbuild-6.1 6.1.192-3", "linux-source-6.1 6.1.192-2"}, "6.1.0-56-cloud-amd64"},
		{"abi moved", []string{"linux-image-6.1.0-57-cloud-amd64 6.1.195-1", "linux-headers-6.1.0-57-cloud-amd64 6.1.195-1",
			"linux-headers-6.1.0-57-common 6.1.195-1", "linux-kbuild-6.1 6.1.195-1", "linux-source-6.1 6.1.195-1"}, "6.1.0-57-cloud-amd64"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			idx := index(t, stanzas(tt.index...))
			r, err := ResolvePin(p, idx)
			if err != nil {
				t.Fatal(err)
			}
			out, err := RewritePin(text.String(), r)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("rewritten:\n%s", out)
			if !strings.HasPrefix(out, "# Debian 12's kernel.\n") || !strings.Contains(out, "version "+r.Pin.Version+"  # the image's\n") || !strings.Contains(out, "cpu max\n") {
				t.Errorf("comments or other lines not kept:\n%s", out)
			}
			again, err := parsePin(strings.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			again.Name = p.Name
			r2, err := ResolvePin(again, idx)
			if err != nil {
				t.Fatal(err)
			}
			if len(r2.Changed) != 0 || r2.Pin.Release != tt.release {
				t.Errorf("the rewritten pin resolves to %s with changes %q, want %s as pinned", r2.Pin.Release, r2.Changed, tt.release)
			}
			if len(r2.Debs) != len(tt.index) {
				t.Fatalf("%d packages, want %d", len(r2.Debs), len(tt.index))
			}
			for i, d := range r2.Debs {
				if got := d.Package + " " + d.Version; got != tt.index[i] || !d.Pinned {
					t.Errorf("package %d: %s (pinned %v), want %s pinned", i, got, d.Pinned, tt.index[i])
				}
			}
		})
	}
	if os.Getenv("SLOWPATH_UPDATE_PINS") == "1" {
		updatePins(t)
	}
}

// updatePins resolves every kernels/*.pin against its suite today and
// writes the result back.
func updatePins(t *testing.T) {
	names, err := KernelNames("kernels")
	if err != nil {
		t.Fatal(err)
	}
	var pins []*Pin
	for _, n := range names {
		p, err := ReadPin(filepath.Join("kernels", n+".pin"))
		if err != nil {
			t.Fatal(err)
		}
		pins = append(pins, p)
	}
	apt, err := NewAptLab(CacheDir(), pins)
	if err != nil {
		t.Fatal(err)
	}
	idx := aptIndex{apt: apt, log: t.Logf}
	for _, p := range pins {
		r, err := ResolvePin(p, idx)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		path := filepath.Join("kernels", p.Name+".pin")
		old, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text, err := RewritePin(string(old), r)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if text == string(old) {
			t.Logf("%s: as the suite lists it", path)
			continue
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s rewritten: %s. Check its comments, kernels/%s.expect and testdata/cryptlab-model-%s.json (SLOWPATH_UPDATE=1 after a boot)", path, strings.Join(r.Changed, "; "), p.Name, p.Name)
	}
}
