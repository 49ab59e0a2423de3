package storagemodel

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Crypt is a dm-crypt target as its table line describes it, with the key
// reduced to its size. Table format (Documentation/admin-guide/device-mapper/dm-crypt.rst,
// https://docs.kernel.org/admin-guide/device-mapper/dm-crypt.html):
//
//	<cipher> <key> <iv_offset> <device path> <offset> [<#opt_params> <opt_params>]
type Crypt struct {
	// CipherSpec is the cipher field as the kernel prints it, e.g.
	// aes-xts-plain64 or capi:xts(aes)-plain64.
	CipherSpec string `json:"cipher_spec"`
	Cipher     string `json:"cipher"`               // aes, serpent, twofish, ...
	ChainMode  string `json:"chain_mode,omitempty"` // xts, cbc, ecb, ...
	IVMode     string `json:"iv_mode,omitempty"`    // plain64, essiv, benbi, ...
	IVOpts     string `json:"iv_opts,omitempty"`    // essiv:sha256 -> sha256
	// KeyCount is the cipher[:keycount] multi-key count, 1 unless set.
	KeyCount int `json:"key_count,omitempty"`
	// Capi is true when the cipher was given in kernel crypto API form (capi:...).
	Capi bool `json:"capi,omitempty"`
	// AuthMode is the authenticated-encryption part of a capi spec, e.g. hmac(sha256).
	AuthMode string `json:"auth_mode,omitempty"`
	// KeyBits is the key size in bits: the whole key (both XTS halves), so
	// aes-xts with 512 bits is AES-256. 0 when the table had no key ("-").
	KeyBits int `json:"key_bits"`
	// KeySource says where the key lives: "hex" (redacted at collection),
	// "keyring" (a kernel key named by description), "none", or "unknown"
	// (the collector replaced an unrecognised key field with "redacted").
	KeySource string `json:"key_source"`
	// KeyringType is user, logon, encrypted or trusted for keyring keys.
	KeyringType string `json:"keyring_type,omitempty"`
	IVOffset    uint64 `json:"iv_offset"`
	Device      string `json:"device"` // major:minor or /dev path of the device below
	Offset      uint64 `json:"offset"` // sectors
	// SectorSize is the encryption sector size in bytes; 512 unless sector_size:N is set.
	SectorSize int `json:"sector_size"`

	AllowDiscards       bool `json:"allow_discards,omitempty"`
	SameCPUCrypt        bool `json:"same_cpu_crypt,omitempty"`
	SubmitFromCryptCPUs bool `json:"submit_from_crypt_cpus,omitempty"`
	NoReadWorkqueue     bool `json:"no_read_workqueue,omitempty"`
	NoWriteWorkqueue    bool `json:"no_write_workqueue,omitempty"`
	HighPriority        bool `json:"high_priority,omitempty"`
	IVLargeSectors      bool `json:"iv_large_sectors,omitempty"`
	// Integrity is integrity:<bytes>:<type> (dm-integrity below), e.g. "28:aead".
	Integrity        string `json:"integrity,omitempty"`
	IntegrityKeySize int    `json:"integrity_key_size,omitempty"`
	// Unknown lists optional parameters this build does not know; kept so a
	// newer kernel's flag shows up rather than vanishing.
	Unknown []string `json:"unknown_params,omitempty"`
}

// IsAES reports whether the cipher is AES in any mode.
func (c *Crypt) IsAES() bool {
	return strings.Contains(strings.ToLower(c.Cipher), "aes")
}

// Flags lists the optional flags that are set, in the kernel's spelling.
func (c *Crypt) Flags() []string {
	var out []string
	add := func(on bool, name string) {
		if on {
			out = append(out, name)
		}
	}
	add(c.AllowDiscards, "allow_discards")
	add(c.SameCPUCrypt, "same_cpu_crypt")
	add(c.SubmitFromCryptCPUs, "submit_from_crypt_cpus")
	add(c.NoReadWorkqueue, "no_read_workqueue")
	add(c.NoWriteWorkqueue, "no_write_workqueue")
	add(c.HighPriority, "high_priority")
	add(c.IVLargeSectors, "iv_large_sectors")
	if c.Integrity != "" {
		out = append(out, "integrity:"+c.Integrity)
	}
	if c.SectorSize != 0 && c.SectorSize != 512 {
		out = append(out, "sector_size:"+strconv.Itoa(c.SectorSize))
	}
	return out
}

// ErrCryptParams is wrapped by every crypt table parse error.
var ErrCryptParams = errors.New("malformed crypt table")

// ParseCryptParams parses the params of a crypt target line as it appears in
// a snapshot (key already replaced by redacted:<bits>, a keyring reference
// :<bytes>:<type>:<desc>, or "-").
func ParseCryptParams(params string) (*Crypt, error) {
	f := strings.Fields(params)
	if len(f) < 5 {
		return nil, fmt.Errorf("%w: want at least 5 fields (cipher key iv_offset device offset), got %d", ErrCryptParams, len(f))
	}
	c := &Crypt{SectorSize: 512}
	if err := parseCipherSpecInto(c, f[0]); err != nil {
		return nil, err
	}
	if err := parseKey(c, f[1]); err != nil {
		return nil, err
	}
	var err error
	if c.IVOffset, err = strconv.ParseUint(f[2], 10, 64); err != nil {
		return nil, fmt.Errorf("%w: iv_offset %q: not a number", ErrCryptParams, f[2])
	}
	c.Device = f[3]
	if c.Offset, err = strconv.ParseUint(f[4], 10, 64); err != nil {
		return nil, fmt.Errorf("%w: offset %q: not a number", ErrCryptParams, f[4])
	}
	if len(f) == 5 {
		return c, nil
	}
	n, err := strconv.Atoi(f[5])
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%w: optional parameter count %q: not a number", ErrCryptParams, f[5])
	}
	opts := f[6:]
	if len(opts) != n {
		return nil, fmt.Errorf("%w: %d optional parameters announced, %d present", ErrCryptParams, n, len(opts))
	}
	for _, o := range opts {
		if err := parseCryptOpt(c, o); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func parseCryptOpt(c *Crypt, o string) error {
	switch o {
	case "allow_discards":
		c.AllowDiscards = true
	case "same_cpu_crypt":
		c.SameCPUCrypt = true
	case "submit_from_crypt_cpus":
		c.SubmitFromCryptCPUs = true
	case "no_read_workqueue":
		c.NoReadWorkqueue = true
	case "no_write_workqueue":
		c.NoWriteWorkqueue = true
	case "high_priority":
		c.HighPriority = true
	case "iv_large_sectors":
		c.IVLargeSectors = true
	default:
		name, val, _ := strings.Cut(o, ":")
		switch name {
		case "sector_size":
			n, err := strconv.Atoi(val)
			// The kernel accepts powers of two from 512 to 4096.
			if err != nil || n < 512 || n > 4096 || n&(n-1) != 0 {
				return fmt.Errorf("%w: sector_size %q: want a power of two from 512 to 4096", ErrCryptParams, val)
			}
			c.SectorSize = n
		case "integrity":
			if val == "" {
				return fmt.Errorf("%w: empty integrity parameter", ErrCryptParams)
			}
			c.Integrity = val
		case "integrity_key_size":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return fmt.Errorf("%w: integrity_key_size %q: not a number", ErrCryptParams, val)
			}
			c.IntegrityKeySize = n
		default:
			c.Unknown = append(c.Unknown, o)
		}
	}
	return nil
}

// parseKey reads the key field without ever keeping key material: only a
// redacted marker, a keyring reference or "-" are accepted. A raw hex key
// means the snapshot was not redacted; it is refused rather than modelled.
func parseKey(c *Crypt, k string) error {
	switch {
	case k == "-":
		c.KeySource = "none"
	case k == "redacted":
		// The collector could not size an odd key field and replaced it whole.
		c.KeySource = "unknown"
	case strings.HasPrefix(k, "redacted:"):
		bits, err := strconv.Atoi(strings.TrimPrefix(k, "redacted:"))
		if err != nil || bits < 0 {
			return fmt.Errorf("%w: key marker %q: want redacted:<bits>", ErrCryptParams, k)
		}
		c.KeySource, c.KeyBits = "hex", bits
	case strings.HasPrefix(k, ":"):
		// :<key_size>:<user|logon|encrypted|trusted>:<key_description>, size in bytes.
		parts := strings.SplitN(k[1:], ":", 3)
		if len(parts) != 3 {
			return fmt.Errorf("%w: keyring key %q: want :<bytes>:<type>:<description>", ErrCryptParams, k)
		}
		n, err := strconv.Atoi(parts[0])
		if err != nil || n < 0 || n > 1<<20 {
			return fmt.Errorf("%w: keyring key size %q: not a number", ErrCryptParams, parts[0])
		}
		c.KeySource, c.KeyBits, c.KeyringType = "keyring", n*8, parts[1]
	default:
		return fmt.Errorf("%w: key field is neither redacted:<bits>, a keyring reference nor \"-\" (unredacted key material is refused)", ErrCryptParams)
	}
	return nil
}

// ParseCipherSpec parses a dm-crypt cipher field: cipher[:keycount]-chainmode-ivmode[:ivopts]
// or capi:<crypto api spec>-ivmode[:ivopts].
func ParseCipherSpec(spec string) (*Crypt, error) {
	c := &Crypt{}
	if err := parseCipherSpecInto(c, spec); err != nil {
		return nil, err
	}
	return c, nil
}

func parseCipherSpecInto(c *Crypt, spec string) error {
	c.CipherSpec = spec
	c.KeyCount = 1
	if spec == "" {
		return fmt.Errorf("%w: empty cipher", ErrCryptParams)
	}
	if api, ok := strings.CutPrefix(spec, "capi:"); ok {
		c.Capi = true
		return parseCapi(c, api)
	}
	parts := strings.Split(spec, "-")
	if len(parts) > 3 {
		return fmt.Errorf("%w: cipher %q: want cipher-chainmode-ivmode", ErrCryptParams, spec)
	}
	cipher, count, hasCount := strings.Cut(parts[0], ":")
	if cipher == "" {
		return fmt.Errorf("%w: cipher %q: empty cipher name", ErrCryptParams, spec)
	}
	if hasCount {
		n, err := strconv.Atoi(count)
		if err != nil || n < 1 {
			return fmt.Errorf("%w: cipher %q: key count %q", ErrCryptParams, spec, count)
		}
		c.KeyCount = n
	}
	c.Cipher = cipher
	if len(parts) > 1 {
		c.ChainMode = parts[1]
	}
	if len(parts) > 2 {
		c.IVMode, c.IVOpts, _ = strings.Cut(parts[2], ":")
	}
	// The kernel's compatibility rule: "aes" alone or "aes-plain" means cbc-plain.
	if c.ChainMode == "" || (c.ChainMode == "plain" && c.IVMode == "") {
		c.ChainMode, c.IVMode = "cbc", "plain"
	}
	if c.ChainMode == "" || (c.IVMode == "" && c.ChainMode != "ecb") {
		return fmt.Errorf("%w: cipher %q: missing IV mode", ErrCryptParams, spec)
	}
	return nil
}

// parseCapi reads "xts(aes)-plain64", "essiv(cbc(aes),sha256)-essiv" or
// "authenc(hmac(sha256),xts(aes))-random".
func parseCapi(c *Crypt, api string) error {
	// The IV mode follows the last '-' after the closing parenthesis.
	close := strings.LastIndexByte(api, ')')
	dash := strings.LastIndexByte(api, '-')
	if dash <= close || dash == len(api)-1 {
		return fmt.Errorf("%w: capi cipher %q: missing -ivmode", ErrCryptParams, api)
	}
	alg := api[:dash]
	c.IVMode, c.IVOpts, _ = strings.Cut(api[dash+1:], ":")
	name, args, err := splitAlg(alg)
	if err != nil {
		return fmt.Errorf("%w: capi cipher %q: %v", ErrCryptParams, api, err)
	}
	switch name {
	case "authenc":
		if len(args) != 2 {
			return fmt.Errorf("%w: capi cipher %q: authenc wants two arguments", ErrCryptParams, api)
		}
		c.AuthMode = args[0]
		alg = args[1]
	case "essiv":
		if len(args) != 2 {
			return fmt.Errorf("%w: capi cipher %q: essiv wants two arguments", ErrCryptParams, api)
		}
		alg = args[0]
		c.IVOpts = args[1]
	}
	name, args, err = splitAlg(alg)
	if err != nil {
		return fmt.Errorf("%w: capi cipher %q: %v", ErrCryptParams, api, err)
	}
	switch len(args) {
	case 0: // a bare cipher such as ecb-less "aes" is not valid crypt input
		return fmt.Errorf("%w: capi cipher %q: want mode(cipher)", ErrCryptParams, api)
	case 1:
		c.ChainMode, c.Cipher = name, args[0]
	default: // adiantum(xchacha12,aes) and friends: the mode names the construction
		c.ChainMode, c.Cipher = name, strings.Join(args, ",")
	}
	// Nested modes such as xts(ecb(aes)) name the innermost cipher.
	for len(args) == 1 {
		_, inner, err := splitAlg(c.Cipher)
		if err != nil || len(inner) != 1 {
			break
		}
		c.Cipher = inner[0]
	}
	if c.Cipher == "" {
		return fmt.Errorf("%w: capi cipher %q: empty cipher name", ErrCryptParams, api)
	}
	return nil
}

// splitAlg splits "name(a,b(c))" into name and top-level arguments.
func splitAlg(s string) (string, []string, error) {
	open := strings.IndexByte(s, '(')
	if open < 0 {
		if strings.ContainsAny(s, ",)") || s == "" {
			return "", nil, fmt.Errorf("bad algorithm name %q", s)
		}
		return s, nil, nil
	}
	if !strings.HasSuffix(s, ")") || open == 0 {
		return "", nil, fmt.Errorf("unbalanced parentheses in %q", s)
	}
	inner := s[open+1 : len(s)-1]
	var args []string
	depth, start := 0, 0
	for i, r := range inner {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return "", nil, fmt.Errorf("unbalanced parentheses in %q", s)
			}
		case ',':
			if depth == 0 {
				args = append(args, inner[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return "", nil, fmt.Errorf("unbalanced parentheses in %q", s)
	}
	args = append(args, inner[start:])
	for _, a := range args {
		if a == "" {
			return "", nil, fmt.Errorf("empty argument in %q", s)
		}
	}
	return s[:open], args, nil
}
