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

// FlagSupport is when the crypt target took an optional parameter.
type FlagSupport struct {
	Flag  string  // as in the table: sector_size stands for sector_size:N
	Needs Version // the crypt target version that accepts it
	Linux string  // the upstream kernel that brought it, where checked
}

// cryptFlags is every optional parameter the lab's variants use, with the
// crypt target version that takes it, as cryptsetup decides the same
// question (lib/libdevmapper.c _dm_set_crypt_compat:
// submit_from_crypt_cpus 1.14.0, sector_size 1.17.0,
// no_read/no_write_workqueue 1.22.0, high_priority 1.26.0). Checked
// against the kernels of the VM lab (drivers/md/dm-crypt.c, .version and
// crypt_ctr_optional): Debian's 5.10 is crypt 1.22.0 with the workqueue
// flags and no high_priority, 6.1 is 1.24.0 without high_priority, 6.12 is
// 1.28.0 with it (added in 6.10 by "dm-crypt: add the optional
// high_priority flag"; the workqueue flags came with 5.9).
var cryptFlags = []FlagSupport{
	{Flag: "same_cpu_crypt", Needs: Version{1, 14, 0}},
	{Flag: "submit_from_crypt_cpus", Needs: Version{1, 14, 0}},
	{Flag: "sector_size", Needs: Version{1, 17, 0}},
	{Flag: "no_read_workqueue", Needs: Version{1, 22, 0}, Linux: "5.9"},
	{Flag: "no_write_workqueue", Needs: Version{1, 22, 0}, Linux: "5.9"},
	{Flag: "high_priority", Needs: Version{1, 26, 0}, Linux: "6.10"},
}

// flagSupport returns the row of a table flag ("sector_size:4096" is
// sector_size); ok is false for a flag the table does not know.
func flagSupport(flag string) (FlagSupport, bool) {
	name, _, _ := strings.Cut(flag, ":")
	i := slices.IndexFunc(cryptFlags, func(f FlagSupport) bool { return f.Flag == name })
	if i < 0 {
		return FlagSupport{}, false
	}
	return cryptFlags[i], true
}

// Variant is one dm-crypt configuration of the matrix.
type Variant struct {
	Name string
	// Cipher is the dm-crypt cipher spec, KeyBytes its key length (0 for
	// the null cipher, whose table key is "-").
	Cipher   string
	KeyBytes int
	// Flags are the optional parameters in the kernel's order
	// (same_cpu_crypt, sector_size:4096, ...).
	Flags []string
	// Stacked puts a second default mapping under this one: crypt on crypt.
	Stacked bool
}

// Table is the dm table line of the variant over dev (major:minor or a
// path) of sectors 512-byte sectors, with hexKey as the key. The result
// holds the key: the caller passes it to dmsetup on a pipe and clears it.
func (v Variant) Table(sectors uint64, dev string, hexKey []byte) []byte {
	// Sized once, so no append leaves a copy of the key in a buffer
	// that is not cleared.
	b := make([]byte, 0, 256+len(v.Cipher)+len(dev)+len(hexKey)+16*len(v.Flags))
	b = fmt.Appendf(b, "0 %d crypt %s ", sectors, v.Cipher)
	if len(hexKey) == 0 {
		hexKey = []byte("-") // dm-crypt's "no key" (Documentation/admin-guide/device-mapper/dm-crypt.rst)
	}
	b = append(b, hexKey...)
	b = fmt.Appendf(b, " 0 %s 0", dev)
	if len(v.Flags) > 0 {
		b = fmt.Appendf(b, " %d %s", len(v.Flags), strings.Join(v.Flags, " "))
	}
	return append(b, '\n')
}

const defaultCipher = "aes-xts-plain64"

// NullCipher is dm-crypt with no cipher: the kernel's ecb(cipher_null)
// (crypto/crypto_null.c) copies the data, so the mapping costs what
// dm-crypt's queueing and copying cost without AES. The dm-crypt authors
// split the tax with it (dm-devel, "dm crypt: add flags to optionally
// bypass kcryptd workqueues", 2020).
const NullCipher = "cipher_null-ecb"

// Encrypts says whether v encrypts at all (the null cipher does not).
func (v Variant) Encrypts() bool { return v.Cipher != NullCipher }

// catalogue is every variant name the lab knows, in table order.
var catalogue = []Variant{
	{Name: "default"},
	{Name: "same_cpu_crypt", Flags: []string{"same_cpu_crypt"}},
	{Name: "submit_from_crypt_cpus", Flags: []string{"submit_from_crypt_cpus"}},
	{Name: "both", Flags: []string{"same_cpu_crypt", "submit_from_crypt_cpus"}},
	{Name: "no_workqueue", Flags: []string{"no_read_workqueue", "no_write_workqueue"}},
	{Name: "no_read_workqueue", Flags: []string{"no_read_workqueue"}},
	{Name: "no_write_workqueue", Flags: []string{"no_write_workqueue"}},
	{Name: "null_cipher", Cipher: NullCipher},
	{Name: "null_cipher_no_workqueue", Cipher: NullCipher, Flags: []string{"no_read_workqueue", "no_write_workqueue"}},
	{Name: "high_priority", Flags: []string{"high_priority"}},
	{Name: "sector_4096", Flags: []string{"sector_size:4096"}},
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
		if v.KeyBytes == 0 && v.Encrypts() {
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

// Needs is the crypt target version v's flags require (the highest of
// cryptFlags' rows for them); the zero version when it has none.
func (v Variant) Needs() Version {
	var need Version
	for _, f := range v.Flags {
		if fs, ok := flagSupport(f); ok && !need.AtLeast(fs.Needs) {
			need = fs.Needs
		}
	}
	return need
}

// Supported says whether the kernel's crypt target (version have) takes
// v's parameters, and if not why: "needs dm-crypt target v1.26.0, kernel
// has v1.24.0 (high_priority came with Linux 6.10): unsupported on this
// kernel". The opening words are what scripts and the VM lab match.
func (v Variant) Supported(have Version) (bool, string) {
	var missing []string
	for _, f := range v.Flags {
		fs, ok := flagSupport(f)
		if !ok || have.AtLeast(fs.Needs) {
			continue
		}
		m := fs.Flag
		if fs.Linux != "" {
			m += " came with Linux " + fs.Linux
		}
		if !slices.Contains(missing, m) {
			missing = append(missing, m)
		}
	}
	if len(missing) == 0 {
		return true, ""
	}
	return false, fmt.Sprintf("needs dm-crypt target %s, kernel has %s (%s): unsupported on this kernel", v.Needs(), have, strings.Join(missing, "; "))
}

// Availability is one catalogue variant on a kernel.
type Availability struct {
	Name        string
	Supported   bool
	Unsupported string // why not, as Supported says
}

// Catalogue says which of the catalogue's variants a crypt target of
// version have runs, in table order: the variant list of `lab crypt` on
// that kernel.
func Catalogue(have Version) []Availability {
	out := make([]Availability, 0, len(catalogue))
	for _, v := range catalogue {
		ok, why := v.Supported(have)
		out = append(out, Availability{Name: v.Name, Supported: ok, Unsupported: why})
	}
	return out
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
