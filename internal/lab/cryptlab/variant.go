package cryptlab

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Version is a device-mapper target version (DM_LIST_VERSIONS, as
// `dmsetup targets` prints it: "crypt v1.24.0").
type Version [3]uint32

func (v Version) String() string { return fmt.Sprintf("v%d.%d.%d", v[0], v[1], v[2]) }

// AtLeast reports whether v >= w.
func (v Version) AtLeast(w Version) bool {
	for i := range v {
		if v[i] != w[i] {
			return v[i] > w[i]
		}
	}
	return true
}

// Crypt target versions that introduced each optional parameter, as
// cryptsetup decides the same question (lib/libdevmapper.c
// _dm_set_crypt_compat: submit_from_crypt_cpus 1.14.0, sector_size 1.17.0,
// no_read/no_write_workqueue 1.22.0, high_priority 1.26.0), see also
// Documentation/admin-guide/device-mapper/dm-crypt.rst.
var (
	versionSameCPU     = Version{1, 14, 0} // same_cpu_crypt, submit_from_crypt_cpus
	versionSectorSize  = Version{1, 17, 0}
	versionNoWorkqueue = Version{1, 22, 0}
	versionHighPrio    = Version{1, 26, 0}
)

// Variant is one dm-crypt configuration of the matrix.
type Variant struct {
	Name string
	// Cipher is the dm-crypt cipher spec, KeyBytes its key length.
	Cipher   string
	KeyBytes int
	// Flags are the optional parameters in the kernel's order
	// (same_cpu_crypt, sector_size:4096, ...).
	Flags []string
	// Stacked puts a second default mapping under this one: crypt on crypt.
	Stacked bool
	// Needs is the crypt target version the flags require.
	Needs Version
}

// Table is the dm table line of the variant over dev (major:minor or a
// path) of sectors 512-byte sectors, with hexKey as the key. The result
// holds the key: the caller passes it to dmsetup on a pipe and clears it.
func (v Variant) Table(sectors uint64, dev string, hexKey []byte) []byte {
	// Sized once, so no append leaves a copy of the key in a buffer
	// that is not cleared.
	b := make([]byte, 0, 256+len(v.Cipher)+len(dev)+len(hexKey)+16*len(v.Flags))
	b = fmt.Appendf(b, "0 %d crypt %s ", sectors, v.Cipher)
	b = append(b, hexKey...)
	b = fmt.Appendf(b, " 0 %s 0", dev)
	if len(v.Flags) > 0 {
		b = fmt.Appendf(b, " %d %s", len(v.Flags), strings.Join(v.Flags, " "))
	}
	return append(b, '\n')
}

const defaultCipher = "aes-xts-plain64"

// catalogue is every variant name the lab knows, in table order.
var catalogue = []Variant{
	{Name: "default"},
	{Name: "same_cpu_crypt", Flags: []string{"same_cpu_crypt"}, Needs: versionSameCPU},
	{Name: "submit_from_crypt_cpus", Flags: []string{"submit_from_crypt_cpus"}, Needs: versionSameCPU},
	{Name: "both", Flags: []string{"same_cpu_crypt", "submit_from_crypt_cpus"}, Needs: versionSameCPU},
	{Name: "no_workqueue", Flags: []string{"no_read_workqueue", "no_write_workqueue"}, Needs: versionNoWorkqueue},
	{Name: "high_priority", Flags: []string{"high_priority"}, Needs: versionHighPrio},
	{Name: "sector_4096", Flags: []string{"sector_size:4096"}, Needs: versionSectorSize},
	{Name: "xts_256", KeyBytes: 32},
	{Name: "stacked", Stacked: true},
}

// DefaultVariants is the matrix run without --variants.
var DefaultVariants = []string{"default", "same_cpu_crypt", "submit_from_crypt_cpus", "both", "no_workqueue", "high_priority", "sector_4096", "stacked"}

// KnownVariants lists the catalogue's names, for help and errors.
func KnownVariants() []string {
	var out []string
	for _, v := range catalogue {
		out = append(out, v.Name)
	}
	return append(out, "cipher:SPEC:KEYBITS")
}

var cipherSpec = regexp.MustCompile(`^[a-z0-9]+-[a-z0-9]+(-[a-z0-9:]+)?$`)

// ParseVariants turns names (comma-separated on the command line) into
// variants. Besides the catalogue, cipher:SPEC:KEYBITS picks another
// cipher and key size, e.g. cipher:aes-cbc-essiv:sha256:256.
func ParseVariants(names []string) ([]Variant, error) {
	var out []Variant
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		var v Variant
		if rest, ok := strings.CutPrefix(n, "cipher:"); ok {
			i := strings.LastIndexByte(rest, ':')
			if i < 0 {
				return nil, fmt.Errorf("variant %q: want cipher:SPEC:KEYBITS, e.g. cipher:aes-xts-plain64:256", n)
			}
			spec, bits := rest[:i], rest[i+1:]
			kb, err := strconv.Atoi(bits)
			if err != nil || kb <= 0 || kb%8 != 0 || kb > 1024 {
				return nil, fmt.Errorf("variant %q: key size %q is not a multiple of 8 bits up to 1024", n, bits)
			}
			if !cipherSpec.MatchString(spec) {
				return nil, fmt.Errorf("variant %q: cipher %q is not a dm-crypt cipher spec like aes-xts-plain64", n, spec)
			}
			v = Variant{Name: n, Cipher: spec, KeyBytes: kb / 8}
		} else {
			i := slices.IndexFunc(catalogue, func(c Variant) bool { return c.Name == n })
			if i < 0 {
				return nil, fmt.Errorf("unknown variant %q (known: %s)", n, strings.Join(KnownVariants(), ", "))
			}
			v = catalogue[i]
		}
		if v.Cipher == "" {
			v.Cipher = defaultCipher
		}
		if v.KeyBytes == 0 {
			v.KeyBytes = 64 // aes-xts-plain64 with 512 bits: cryptsetup's default for LUKS2
		}
		if seen[v.Name] {
			return nil, fmt.Errorf("variant %q given twice", n)
		}
		seen[v.Name] = true
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no variants (known: %s)", strings.Join(KnownVariants(), ", "))
	}
	return out, nil
}

// Supported says whether the kernel's crypt target (version have) takes
// v's parameters, and if not why.
func (v Variant) Supported(have Version) (bool, string) {
	if !have.AtLeast(v.Needs) {
		return false, fmt.Sprintf("needs dm-crypt target %s, kernel has %s", v.Needs, have)
	}
	return true, ""
}

// parseTargets reads `dmsetup targets` (one "name vX.Y.Z" per line, the
// DM_LIST_VERSIONS answer) and returns the crypt target's version.
func parseTargets(out string) (Version, bool, error) {
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) != 2 || f[0] != "crypt" {
			continue
		}
		v, err := parseVersion(f[1])
		if err != nil {
			return Version{}, false, err
		}
		return v, true, nil
	}
	return Version{}, false, nil
}

func parseVersion(s string) (Version, error) {
	var v Version
	parts := strings.Split(strings.TrimPrefix(s, "v"), ".")
	if len(parts) != 3 {
		return v, fmt.Errorf("target version %q: want vX.Y.Z", s)
	}
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return v, fmt.Errorf("target version %q: %w", s, err)
		}
		v[i] = uint32(n)
	}
	return v, nil
}
