package storage

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/slowpath/slowpath/internal/dmioctl"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// errDMParams marks target parameters that do not follow the target's
// documented syntax.
var errDMParams = errors.New("malformed dm target parameters")

// redactTargets turns decoded targets into snapshot targets, removing key
// material. The returned strings never alias or contain key bytes; the
// caller zeroes the buffer the raw params point into. A target whose
// params cannot be made safe is kept with empty params and reported.
func redactTargets(raw []dmioctl.Target) ([]snapshot.DMTarget, []error) {
	var (
		out  []snapshot.DMTarget
		errs []error
	)
	for _, r := range raw {
		t := snapshot.DMTarget{Start: r.Start, Length: r.Length, Type: r.Type}
		p, err := redactParams(r.Type, r.Params)
		if err != nil {
			errs = append(errs, fmt.Errorf("target %s at sector %d: %w", r.Type, r.Start, err))
		}
		t.Params = p
		out = append(out, t)
	}
	return out, errs
}

// redactParams returns the parameter string of one target with any key
// replaced. Targets that carry keys in their table line:
//   - crypt (Documentation/admin-guide/device-mapper/dm-crypt.rst) and
//     Android's default-key, which copies its syntax: the second field;
//   - integrity (dm-integrity.rst): internal_hash, journal_crypt and
//     journal_mac options take "alg:key".
func redactParams(typ string, p []byte) (string, error) {
	switch typ {
	case "crypt", "default-key":
		return redactCryptParams(p)
	case "integrity":
		return redactIntegrityParams(p), nil
	}
	return string(p), nil
}

// redactCryptParams handles
//
//	<cipher> <key> <iv_offset> <device path> <offset> [<#opt_params> <opt_params>]
//
// The key is hex ("redacted:<bits>"), a keyring reference
// ":<key_size>:<key_type>:<key_description>" (kept: it names a key without
// containing it), or "-" for no key (kept). Anything else in the key field
// is replaced with "redacted" and reported. With fewer than five fields
// the key's position is not certain, so the params are dropped entirely.
func redactCryptParams(p []byte) (string, error) {
	f := bytes.Fields(p)
	if len(f) < 5 {
		return "", fmt.Errorf("%w: crypt has %d fields, want at least 5 (<cipher> <key> <iv_offset> <device> <offset>); parameters dropped", errDMParams, len(f))
	}
	var (
		key string
		err error
	)
	switch k := f[1]; {
	case string(k) == "-", k[0] == ':':
		key = string(k)
	case isHex(k):
		key = "redacted:" + strconv.Itoa(len(k)*4)
	default:
		key = "redacted"
		err = fmt.Errorf("%w: crypt key field is neither hex, a keyring reference nor \"-\"; replaced", errDMParams)
	}
	var b bytes.Buffer
	b.Write(f[0])
	b.WriteByte(' ')
	b.WriteString(key)
	for _, w := range f[2:] {
		b.WriteByte(' ')
		b.Write(w)
	}
	return b.String(), err
}

// redactIntegrityParams replaces the key of "internal_hash:alg:key",
// "journal_crypt:alg:key" and "journal_mac:alg:key" options
// (drivers/md/dm-integrity.c emits them with the key in hex).
func redactIntegrityParams(p []byte) string {
	f := bytes.Fields(p)
	var b bytes.Buffer
	for i, w := range f {
		if i > 0 {
			b.WriteByte(' ')
		}
		name, rest, ok := bytes.Cut(w, []byte(":"))
		switch string(name) {
		case "internal_hash", "journal_crypt", "journal_mac":
			if alg, key, hasKey := bytes.Cut(rest, []byte(":")); ok && hasKey {
				b.Write(name)
				b.WriteByte(':')
				b.Write(alg)
				if isHex(key) {
					b.WriteString(":redacted:" + strconv.Itoa(len(key)*4))
				} else {
					b.WriteString(":redacted")
				}
				continue
			}
		}
		b.Write(w)
	}
	return b.String()
}

func isHex(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// ParseDMTable parses the text `dmsetup table NAME` prints, one target per
// line: "<start> <length> <type> <params...>" (the same fields the ioctl
// returns; dmsetup(8)). Keys are redacted exactly as for the ioctl, so the
// VM lab can compare `dmsetup table --showkeys` with the ioctl decoder.
// Bad lines are reported and skipped.
func ParseDMTable(text []byte) ([]snapshot.DMTarget, []error) {
	var (
		out  []snapshot.DMTarget
		errs []error
	)
	for n, line := range bytes.Split(text, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		f := bytes.SplitN(line, []byte(" "), 4)
		if len(f) < 3 {
			errs = append(errs, fmt.Errorf("%w: line %d: want <start> <length> <type> [params]", errDMParams, n+1))
			continue
		}
		start, err1 := strconv.ParseUint(string(f[0]), 10, 64)
		length, err2 := strconv.ParseUint(string(f[1]), 10, 64)
		if err1 != nil || err2 != nil {
			errs = append(errs, fmt.Errorf("%w: line %d: start and length must be sector counts", errDMParams, n+1))
			continue
		}
		var params []byte
		if len(f) == 4 {
			params = f[3]
		}
		t := snapshot.DMTarget{Start: start, Length: length, Type: string(f[2])}
		p, err := redactParams(t.Type, params)
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", n+1, err))
		}
		t.Params = p
		out = append(out, t)
	}
	return out, errs
}
