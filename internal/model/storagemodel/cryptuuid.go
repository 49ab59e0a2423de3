package storagemodel

import "strings"

// InferredCrypt is a dm layer whose table was not read (the
// DM_TABLE_STATUS ioctl needs CAP_SYS_ADMIN, which the default Kubernetes
// DaemonSet does not grant, and --live-sources off skips it) but whose dm
// uuid, readable by anyone in /sys/block/dm-N/dm/uuid, names a cryptsetup
// mapping that is dm-crypt. It counts as dm-crypt for the encryption tax
// span only (CryptSpan, dmcrypt.tax, the agent's tax series): the layer
// stays EncryptionUnknown everywhere else, and what lives in the table (the
// cipher, sector size, workqueue flags) stays unknown.
type InferredCrypt struct {
	// Type is the cryptsetup device type the uuid names: LUKS2, LUKS1,
	// PLAIN, LOOPAES, TCRYPT, BITLK, FVAULT2.
	Type string `json:"type"`
	// AssumedCipher is the data cipher taken for the tax, from the type's
	// default (CryptsetupCipher); "" when the type has no AES default, so
	// the cipher figure (AES-XTS) cannot be applied.
	AssumedCipher string `json:"assumed_cipher,omitempty"`
	// AssumedFrom says where AssumedCipher comes from.
	AssumedFrom string `json:"assumed_from,omitempty"`
	// TableNotRead is why the table was not read, as the collector said.
	TableNotRead string `json:"table_not_read"`
}

// Label is how findings and the agent name the inference, e.g.
// "dm-crypt inferred from uuid CRYPT-LUKS2-…; table not read: …".
func (ic *InferredCrypt) Label(uuid string) string {
	return "dm-crypt inferred from uuid " + uuid + "; table not read: " + ic.TableNotRead
}

// cryptsetup (https://gitlab.com/cryptsetup/cryptsetup, as read at
// 38f95b70, June 2026) names every mapping it creates
// CRYPT-<type>-[<uuid without dashes>-]<name> (cryptsetup
// lib/libdevmapper.c dm_prepare_uuid, DM_UUID_PREFIX "CRYPT-" in
// lib/libcryptsetup_macros.h; the types are lib/libcryptsetup.h's
// CRYPT_PLAIN ... CRYPT_FVAULT2). Not every type is dm-crypt: VERITY is
// dm-verity, INTEGRITY dm-integrity, SUBDEV (lib/internal.h) the helper
// devices beneath a public type (dm-integrity under authenticated LUKS2,
// TCRYPT cascade legs, reencryption overlays), TEMP a short-lived device,
// and LUKS2-OPAL (lib/internal.h CRYPT_LUKS2_HW_OPAL) may be a dm-linear
// over a self-encrypting drive (setup.c: "HW OPAL only encryption does not
// use dm-crypt target"). Those are not inferred.
const cryptUUIDPrefix = "CRYPT-"

// cryptTypes are the cryptsetup types whose top mapping is a dm-crypt
// target, with the data cipher assumed when the table cannot say:
//   - LUKS1, LUKS2: luksFormat's default, DEFAULT_CIPHER(LUKS1) for both
//     versions (src/cryptsetup.c), aes + xts-plain64 (configure.ac
//     luks1-cipher, luks1-mode; meson_options.txt default-luks1-*). A
//     volume formatted with --cipher differs: the assumption is stated.
//   - PLAIN: default aes + xts-plain64 (configure.ac plain-cipher,
//     plain-mode) since 2.7.0; aes-cbc-essiv:sha256 before
//     (docs/v2.7.0-ReleaseNotes, docs/v1.1.0-ReleaseNotes): AES either way.
//   - LOOPAES: loop-AES is AES by definition (DEFAULT_LOOPAES_CIPHER aes).
//   - BITLK: BitLocker encrypts with AES only, CBC or XTS (lib/bitlk/bitlk.c
//     sets cipher "aes" for every encryption type it supports).
//   - FVAULT2: FileVault 2 is AES-XTS (lib/fvault2/fvault2.c).
//   - TCRYPT: TrueCrypt/VeraCrypt let the user pick AES, Serpent, Twofish
//     or cascades and cryptsetup has no default: no cipher is assumed, so
//     dmcrypt.tax says unknown.
var cryptTypes = map[string]struct{ cipher, from string }{
	"LUKS2":   {"aes-xts-plain64", "cryptsetup's LUKS2 default"},
	"LUKS1":   {"aes-xts-plain64", "cryptsetup's LUKS1 default"},
	"PLAIN":   {"aes-xts-plain64", "cryptsetup's plain default since 2.7.0, aes-cbc-essiv:sha256 before"},
	"LOOPAES": {"aes", "loop-AES uses AES only"},
	"BITLK":   {"aes", "BitLocker uses AES only"},
	"FVAULT2": {"aes-xts-plain64", "FileVault 2 uses AES-XTS only"},
	"TCRYPT":  {"", ""},
}

// CryptsetupType returns the cryptsetup device type a dm uuid names
// ("LUKS2" for CRYPT-LUKS2-<uuid>-<name>), "LUKS2-OPAL" for an OPAL-backed
// LUKS2, or "" when the uuid is not cryptsetup's.
func CryptsetupType(uuid string) string {
	rest, ok := strings.CutPrefix(uuid, cryptUUIDPrefix)
	if !ok {
		return ""
	}
	if strings.HasPrefix(rest, "LUKS2-OPAL-") {
		return "LUKS2-OPAL"
	}
	typ, _, ok := strings.Cut(rest, "-")
	if !ok || typ == "" {
		return ""
	}
	return typ
}

// inferCrypt returns what a dm uuid says of a mapping whose table was not
// read, or nil when it does not name a dm-crypt mapping.
func inferCrypt(uuid, notRead string) *InferredCrypt {
	typ := CryptsetupType(uuid)
	c, ok := cryptTypes[typ]
	if !ok {
		return nil
	}
	return &InferredCrypt{Type: typ, AssumedCipher: c.cipher, AssumedFrom: c.from, TableNotRead: notRead}
}

// crypts reports whether the layer is dm-crypt for the tax span: its table
// says so, or its uuid does when the table was not read.
func (l *Layer) crypts() bool { return l.Kind == LayerDMCrypt || l.InferredCrypt != nil }
