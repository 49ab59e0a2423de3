package engine

import (
	"strings"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// CockroachDB's Encryption at Rest
// (https://www.cockroachlabs.com/docs/stable/encryption): one
// --enterprise-encryption=path=STORE,key=FILE,old-key=FILE[,rotation-period=P]
// per encrypted store, "plain" for no key; every file of the store is
// encrypted (AES-CTR, the key size the key file's). Stores are
// --store=path=DIR,... or --store=DIR (-s), cockroach-data in the working
// directory by default (https://www.cockroachlabs.com/docs/stable/cockroach-start#store).
const (
	cockroachFlag         = "enterprise-encryption"
	cockroachDefaultStore = "cockroach-data"
)

// parseCockroachFlag splits a --store or --enterprise-encryption value
// into its fields; a value without '=' is a path (--store=DIR).
func parseCockroachFlag(v string) map[string]string {
	out := map[string]string{}
	for f := range strings.SplitSeq(v, ",") {
		k, val, ok := strings.Cut(f, "=")
		if !ok {
			if _, seen := out["path"]; !seen {
				out["path"] = k
			}
			continue
		}
		out[strings.TrimSpace(k)] = val
	}
	return out
}

func collectCockroach(r *reader, argv []string) {
	var stores, encs []string
	args := argv[min(1, len(argv)):]
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, has := strings.Cut(a, "=")
		if !has && i+1 < len(args) {
			value = args[i+1]
		}
		switch name {
		case "--store", "-s":
			stores = append(stores, value)
		case "--" + cockroachFlag:
			encs = append(encs, value)
		default:
			continue
		}
		if !has {
			i++
		}
	}
	var storePaths []string
	for _, s := range stores {
		f := parseCockroachFlag(s)
		if f["type"] == "mem" {
			continue // an in-memory store holds nothing on disk
		}
		if p, ok := r.abs(f["path"], ""); ok {
			storePaths = append(storePaths, p)
		}
	}
	if len(stores) == 0 {
		if p, ok := r.abs(cockroachDefaultStore, ""); ok {
			storePaths = append(storePaths, p)
		}
	}
	if len(storePaths) > 0 {
		r.e.DataDir = storePaths[0]
	}
	for _, v := range encs {
		f := parseCockroachFlag(v)
		p, ok := r.abs(f["path"], "")
		if !ok {
			r.note("an --%s flag names no store path: not recorded", cockroachFlag)
			continue
		}
		// Value says what the flag does, without the key files' paths.
		key, old := keyWord(f["key"]), keyWord(f["old-key"])
		enc := snapshot.EngineEncryption{
			Setting: cockroachFlag, Value: "key=" + key + ",old-key=" + old, Enabled: key == "file",
			Source: srcCommandLine, Covers: []string{snapshot.CoversAll}, Path: p}
		if enc.Enabled {
			enc.KeyManager = snapshot.KeyManagerKeyfile
		}
		r.e.Encryption = append(r.e.Encryption, enc)
	}
}

// keyWord is what a key field may be recorded as: plain, or "file" for a
// key file whose path is not kept; "none" when missing.
func keyWord(v string) string {
	switch v {
	case "plain":
		return "plain"
	case "":
		return "none"
	}
	return "file"
}
