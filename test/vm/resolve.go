package vm

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Debian's archive moves on under a pin: a security suite keeps only the
// newest linux-kbuild of a series, and an ABI bump (6.1.0-56 to 6.1.0-57)
// renames every package of the kernel. ResolvePin turns a pin into what the
// suite lists today: the pinned packages where they are still listed, else
// the newest of the same series and flavour, each with the sha256 that apt's
// signed index gives (InRelease, checked against Debian's keyring by
// apt-get update, lists the Packages file, which lists the .deb's sha256).

// IndexEntry is one package version as apt's index lists it.
type IndexEntry struct {
	Package, Version, SHA256 string
}

// Index is what the lab's suites list. aptIndex asks apt-cache; tests give
// a Packages text (parseIndex).
type Index interface {
	// Versions lists every version of pkg the index has (none: empty).
	Versions(pkg string) ([]IndexEntry, error)
	// Names lists the package names that start with prefix.
	Names(prefix string) ([]string, error)
}

// Resolved is a pin as the suite lists it now.
type Resolved struct {
	Pin     *Pin          // Release and Version are those resolved
	Debs    []ResolvedDeb // in the pin's order
	Changed []string      // one line per departure from the pin, for the log and summary
}

// ResolvedDeb is one package to fetch.
type ResolvedDeb struct {
	Package, Version, SHA256 string
	Pinned                   bool // the pin's own package, version and sha256
}

// ErrSeriesGone is returned when the suite lists no kernel of the pin's
// series and flavour at all: the pin must be replaced by hand.
var ErrSeriesGone = errors.New("the suite lists no kernel of this series")

// releaseScheme splits a Debian kernel release into the part that stays,
// the ABI number that moves and the rest: 6.1.0-56-cloud-amd64 (the ABI is
// the number after the upstream version) or 6.12.95+deb12-cloud-amd64
// (backports and trixie name the upstream patch level instead).
var releaseSchemes = []*regexp.Regexp{
	regexp.MustCompile(`^(\d+\.\d+\.)(\d+)(\+deb\d+-[a-z0-9-]+)$`),
	regexp.MustCompile(`^(\d+\.\d+\.\d+-)(\d+)(-[a-z0-9-]+)$`),
}

// series returns the release's fixed prefix, its ABI number and the suffix
// (flavour).
func series(release string) (prefix string, abi int, suffix string, err error) {
	for _, re := range releaseSchemes {
		if m := re.FindStringSubmatch(release); m != nil {
			n, err := strconv.Atoi(m[2])
			if err != nil {
				return "", 0, "", err
			}
			return m[1], n, m[3], nil
		}
	}
	return "", 0, "", fmt.Errorf("release %q is neither X.Y.Z-ABI-FLAVOUR nor X.Y.PATCH+debN-FLAVOUR", release)
}

// ResolvePin finds pin's packages in idx. Where the pinned version of a
// package is gone it takes the newest of the same package (linux-kbuild-6.1
// 6.1.192-3 beside image 6.1.192-2); where the image itself is gone it moves
// the whole kernel to the newest ABI of the series and flavour
// (6.1.0-57-cloud-amd64), renaming the packages that carry the ABI. A
// pinned version whose sha256 differs from the pin is an error, never a
// fallback: that is a changed package, not a newer one.
func ResolvePin(pin *Pin, idx Index) (*Resolved, error) {
	prefix, abi, suffix, err := series(pin.Release)
	if err != nil {
		return nil, fmt.Errorf("kernel %s: %w", pin.Name, err)
	}
	r := &Resolved{Pin: &Pin{}}
	*r.Pin = *pin
	imageVersions, err := idx.Versions(pin.ImagePackage())
	if err != nil {
		return nil, err
	}
	rename := func(pkg string) string { return pkg }
	if _, ok := findVersion(imageVersions, pin.Version); !ok {
		newest, newestABI, v, err := newestImage(idx, prefix, suffix)
		if err != nil {
			return nil, err
		}
		if newest == "" {
			return nil, fmt.Errorf("kernel %s: %s lists neither %s %s nor any linux-image-%sN%s: %w; choose another kernel (docs/testing.md, \"Adding a kernel\")",
				pin.Name, pin.Suite, pin.ImagePackage(), pin.Version, prefix, suffix, ErrSeriesGone)
		}
		old, next := prefix+strconv.Itoa(abi), prefix+strconv.Itoa(newestABI)
		rename = func(pkg string) string { return renameABI(pkg, old, next) }
		r.Pin.Release, r.Pin.Version = newest, v
		r.Changed = append(r.Changed, fmt.Sprintf("kernel %s: %s %s is no longer listed in %s; using %s %s, the newest of the series",
			pin.Name, pin.ImagePackage(), pin.Version, pin.Suite, "linux-image-"+newest, v))
	}
	moved := r.Pin.Release != pin.Release
	upstream := upstreamVersion(r.Pin.Version)
	for _, d := range pin.Debs {
		name := rename(d.Package)
		pinned := pin.Version
		if d.Version != "" {
			pinned = d.Version
		}
		want := pinned
		if moved {
			want = r.Pin.Version
		}
		vs, err := idx.Versions(name)
		if err != nil {
			return nil, err
		}
		if len(vs) == 0 {
			return nil, fmt.Errorf("kernel %s: %s lists no %s (pinned %s %s)", pin.Name, pin.Suite, name, d.Package, pinned)
		}
		if e, ok := findVersion(vs, want); ok {
			if !moved {
				if e.SHA256 != d.SHA256 {
					return nil, fmt.Errorf("kernel %s: apt index for %s=%s lists sha256 %s, the pin says %s: the same version changed, which the lab refuses", pin.Name, name, want, e.SHA256, d.SHA256)
				}
				r.Debs = append(r.Debs, ResolvedDeb{Package: name, Version: e.Version, SHA256: e.SHA256, Pinned: true})
				continue
			}
			r.Debs = append(r.Debs, ResolvedDeb{Package: name, Version: e.Version, SHA256: e.SHA256})
			if name != d.Package {
				r.Changed = append(r.Changed, fmt.Sprintf("kernel %s: %s %s for %s %s", pin.Name, name, e.Version, d.Package, pinned))
			}
			continue
		}
		// The same upstream kernel at a newer Debian revision first
		// (kbuild 6.1.192-3 beside image 6.1.192-2), else the newest.
		e := newestEntry(vs, func(e IndexEntry) bool { return upstreamVersion(e.Version) == upstream })
		why := "same upstream " + upstream
		if e == nil {
			e = newestEntry(vs, func(IndexEntry) bool { return true })
			why = "no version of upstream " + upstream + " is listed"
		}
		r.Debs = append(r.Debs, ResolvedDeb{Package: name, Version: e.Version, SHA256: e.SHA256})
		r.Changed = append(r.Changed, fmt.Sprintf("kernel %s: %s %s is no longer listed in %s; using %s %s (%s)",
			pin.Name, d.Package, want, pin.Suite, name, e.Version, why))
	}
	return r, nil
}

// renameABI replaces the ABI-carrying part of a package name:
// linux-headers-6.1.0-56-common becomes linux-headers-6.1.0-57-common;
// linux-kbuild-6.1 stays. The match must end the name or be followed by a
// non-digit, so 6.1.0-5 does not match inside 6.1.0-56.
func renameABI(pkg, old, next string) string {
	i := strings.Index(pkg, old)
	if i < 0 {
		return pkg
	}
	end := i + len(old)
	if end < len(pkg) && pkg[end] >= '0' && pkg[end] <= '9' {
		return pkg
	}
	return pkg[:i] + next + pkg[end:]
}

// newestImage finds linux-image-PREFIX<N>SUFFIX with the highest N listed.
func newestImage(idx Index, prefix, suffix string) (release string, abi int, version string, err error) {
	names, err := idx.Names("linux-image-" + prefix)
	if err != nil {
		return "", 0, "", err
	}
	re := regexp.MustCompile(`^linux-image-` + regexp.QuoteMeta(prefix) + `(\d+)` + regexp.QuoteMeta(suffix) + `$`)
	best := -1
	for _, n := range names {
		m := re.FindStringSubmatch(n)
		if m == nil {
			continue
		}
		v, err := strconv.Atoi(m[1])
		if err != nil || v <= best {
			continue
		}
		vs, err := idx.Versions(n)
		if err != nil {
			return "", 0, "", err
		}
		if e := newestEntry(vs, func(IndexEntry) bool { return true }); e != nil {
			best, release, version = v, strings.TrimPrefix(n, "linux-image-"), e.Version
		}
	}
	return release, best, version, nil
}

func findVersion(vs []IndexEntry, version string) (IndexEntry, bool) {
	for _, e := range vs {
		if e.Version == version {
			return e, true
		}
	}
	return IndexEntry{}, false
}

func newestEntry(vs []IndexEntry, keep func(IndexEntry) bool) *IndexEntry {
	var best *IndexEntry
	for i := range vs {
		if keep(vs[i]) && (best == nil || CompareVersions(vs[i].Version, best.Version) > 0) {
			best = &vs[i]
		}
	}
	return best
}

// upstreamVersion is a Debian version without its revision: 6.1.192-2 and
// 6.1.192-3 are both 6.1.192; 6.12.95-1~bpo12+1 is 6.12.95.
func upstreamVersion(v string) string {
	if i := strings.LastIndexByte(v, '-'); i >= 0 {
		v = v[:i]
	}
	if i := strings.IndexByte(v, ':'); i >= 0 {
		v = v[i+1:]
	}
	return v
}

// CompareVersions orders two Debian versions as dpkg does (deb-version(7)):
// epoch numerically, then upstream version and revision, each compared in
// alternating runs of non-digits (letters before other characters, '~'
// before everything, even the end) and numbers.
func CompareVersions(a, b string) int {
	ea, ua, ra := splitVersion(a)
	eb, ub, rb := splitVersion(b)
	if ea != eb {
		if ea < eb {
			return -1
		}
		return 1
	}
	if c := compareFragment(ua, ub); c != 0 {
		return c
	}
	return compareFragment(ra, rb)
}

func splitVersion(v string) (epoch int, upstream, revision string) {
	if i := strings.IndexByte(v, ':'); i >= 0 {
		epoch, _ = strconv.Atoi(v[:i])
		v = v[i+1:]
	}
	if i := strings.LastIndexByte(v, '-'); i >= 0 {
		return epoch, v[:i], v[i+1:]
	}
	return epoch, v, ""
}

func order(c byte) int {
	switch {
	case c == '~':
		return -1
	case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		return int(c)
	default:
		return int(c) + 256
	}
}

func compareFragment(a, b string) int {
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	for a != "" || b != "" {
		// The non-digit run; the end of a string sorts after '~' only.
		for (a != "" && !isDigit(a[0])) || (b != "" && !isDigit(b[0])) {
			ac, bc := 0, 0
			if a != "" && !isDigit(a[0]) {
				ac = order(a[0])
			}
			if b != "" && !isDigit(b[0]) {
				bc = order(b[0])
			}
			if ac != bc {
				if ac < bc {
					return -1
				}
				return 1
			}
			a, b = a[1:], b[1:]
		}
		// The digit run, as a number (leading zeros do not count).
		var na, nb string
		for a != "" && isDigit(a[0]) {
			na, a = na+a[:1], a[1:]
		}
		for b != "" && isDigit(b[0]) {
			nb, b = nb+b[:1], b[1:]
		}
		na, nb = strings.TrimLeft(na, "0"), strings.TrimLeft(nb, "0")
		if len(na) != len(nb) {
			if len(na) < len(nb) {
				return -1
			}
			return 1
		}
		if na != nb {
			if na < nb {
				return -1
			}
			return 1
		}
	}
	return 0
}

// parseIndex reads deb822 stanzas (a Packages file, or apt-cache show's
// output) into entries; stanzas without Package, Version and SHA256 are
// skipped.
func parseIndex(r io.Reader) ([]IndexEntry, error) {
	var out []IndexEntry
	var cur IndexEntry
	flush := func() {
		if cur.Package != "" && cur.Version != "" && cur.SHA256 != "" {
			out = append(out, cur)
		}
		cur = IndexEntry{}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			continue // a continuation line of a multi-line field
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "Package":
			cur.Package = v
		case "Version":
			cur.Version = v
		case "SHA256":
			cur.SHA256 = strings.ToLower(v)
		}
	}
	flush()
	return out, sc.Err()
}

// MemIndex is an Index over parsed entries.
type MemIndex []IndexEntry

func (m MemIndex) Versions(pkg string) ([]IndexEntry, error) {
	var out []IndexEntry
	for _, e := range m {
		if e.Package == pkg {
			out = append(out, e)
		}
	}
	return out, nil
}

func (m MemIndex) Names(prefix string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, e := range m {
		if strings.HasPrefix(e.Package, prefix) && !seen[e.Package] {
			seen[e.Package] = true
			out = append(out, e.Package)
		}
	}
	sort.Strings(out)
	return out, nil
}

// aptIndex asks apt-cache, over the lab's own lists (updated once first).
type aptIndex struct {
	apt *AptLab
	log func(string, ...any)
}

func (a aptIndex) Versions(pkg string) ([]IndexEntry, error) {
	if err := a.apt.update(a.log); err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd := a.apt.command("apt-cache", "show", pkg)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		// apt-cache exits 100 for a name it does not know: no versions.
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 100 && bytes.Contains(stderr.Bytes(), []byte("No packages found")) {
			return nil, nil
		}
		if errors.As(err, &ee) && ee.ExitCode() == 100 && bytes.Contains(stderr.Bytes(), []byte("Unable to locate package")) {
			return nil, nil
		}
		return nil, fmt.Errorf("apt-cache show %s: %v: %s", pkg, err, stderr.Bytes())
	}
	all, err := parseIndex(bytes.NewReader(out))
	if err != nil {
		return nil, err
	}
	return MemIndex(all).Versions(pkg)
}

func (a aptIndex) Names(prefix string) ([]string, error) {
	if err := a.apt.update(a.log); err != nil {
		return nil, err
	}
	out, err := a.apt.command("apt-cache", "pkgnames", prefix).Output()
	if err != nil {
		// pkgnames exits 0 with no output when nothing matches; anything
		// else is apt failing.
		return nil, fmt.Errorf("apt-cache pkgnames %s: %w", prefix, err)
	}
	names := strings.Fields(string(out))
	sort.Strings(names)
	return names, nil
}

// RewritePin returns the pin file text with its release, version and deb
// lines set to what r resolved, comments and every other line kept (`make
// vm-pins`). The deb lines are replaced in order: r.Debs follows the pin's.
func RewritePin(text string, r *Resolved) (string, error) {
	lines := strings.SplitAfter(text, "\n")
	deb := 0
	for i, l := range lines {
		body, comment, _ := strings.Cut(l, "#")
		f := strings.Fields(body)
		if len(f) == 0 {
			continue
		}
		nl := ""
		if strings.HasSuffix(l, "\n") {
			nl = "\n"
		}
		if comment != "" {
			comment = "  #" + strings.TrimSuffix(comment, "\n")
		}
		switch f[0] {
		case "release":
			lines[i] = "release " + r.Pin.Release + comment + nl
		case "version":
			lines[i] = "version " + r.Pin.Version + comment + nl
		case "deb":
			if deb >= len(r.Debs) {
				return "", fmt.Errorf("the pin has more deb lines than were resolved")
			}
			d := r.Debs[deb]
			lines[i] = "deb " + d.Package + " " + d.SHA256
			if d.Version != r.Pin.Version {
				// The suite has this package at another version than the
				// image (a kbuild rebuilt alone): the pin names it.
				lines[i] += " " + d.Version
			}
			lines[i] += comment + nl
			deb++
		}
	}
	if deb != len(r.Debs) {
		return "", fmt.Errorf("the pin has %d deb lines, %d were resolved", deb, len(r.Debs))
	}
	return strings.Join(lines, ""), nil
}
