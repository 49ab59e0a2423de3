package engine

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// MongoDB's encrypted storage engine (WiredTiger's native encryption,
// MongoDB Enterprise and Percona Server for MongoDB): the configuration
// file is YAML given with --config or -f (mongod reads none without it),
// the command line overrides it
// (https://www.mongodb.com/docs/manual/reference/configuration-options/#security-options,
// https://docs.percona.com/percona-server-for-mongodb/7.0/data-at-rest-encryption.html).
// security.enableEncryption encrypts every file of the data directory;
// the key comes from security.encryptionKeyFile (a keyfile, whose path is
// never recorded), a KMIP server (security.kmip.*) or, in Percona's build
// only, HashiCorp Vault (security.vault.*). encryptionCipherMode is
// AES256-CBC unless set.
const (
	mongoEnable        = "security.enableEncryption"
	mongoDefaultCipher = "AES256-CBC"
	mongoDefaultDBPath = "/data/db"
)

// mongoConf is what the collector takes from mongod.conf.
type mongoConf struct {
	dbPath      string
	enable      *found
	cipher      string
	keyFile     bool
	kmip, vault bool
}

// parseMongoYAML reads mongod.conf; an error says only where, never what
// the file holds (the parser's own message may quote it).
func parseMongoYAML(data []byte) (mongoConf, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return mongoConf{}, fmt.Errorf("not YAML mongod reads")
	}
	var c mongoConf
	if st, ok := doc["storage"].(map[string]any); ok {
		if p, ok := st["dbPath"].(string); ok {
			c.dbPath = p
		}
	}
	sec, _ := doc["security"].(map[string]any)
	if v, ok := sec["enableEncryption"]; ok {
		c.enable = &found{value: fmt.Sprint(v)}
		if _, isBool := v.(bool); !isBool {
			if _, isStr := v.(string); !isStr {
				c.enable.value = "not a boolean"
			}
		}
	}
	if v, ok := sec["encryptionCipherMode"].(string); ok {
		c.cipher = v
	}
	_, c.keyFile = sec["encryptionKeyFile"]
	if k, ok := sec["kmip"].(map[string]any); ok && len(k) > 0 {
		c.kmip = true
	}
	if k, ok := sec["vault"].(map[string]any); ok && len(k) > 0 {
		c.vault = true
	}
	return c, nil
}

// mongoBool: YAML true, or the string as mongod's option parser takes it.
func mongoBool(v string) bool {
	switch strings.ToLower(v) {
	case "true", "1", "yes", "on":
		return true
	}
	return false
}

func collectMongo(r *reader, argv []string) {
	var c mongoConf
	cmd := mongoConf{}
	config := ""
	args := argv[min(1, len(argv)):]
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, value, has := strings.Cut(strings.TrimLeft(a, "-"), "=")
		next := func() string {
			if !has && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				return args[i]
			}
			return value
		}
		switch name {
		case "config", "f":
			config = next()
		case "dbpath":
			cmd.dbPath = next()
		case "enableEncryption":
			v := "true"
			if has {
				v = value
			}
			cmd.enable = &found{v, srcCommandLine}
		case "encryptionCipherMode":
			cmd.cipher = next()
		case "encryptionKeyFile":
			next() // its value is a key's path: never kept
			cmd.keyFile = true
		default:
			if strings.HasPrefix(name, "kmip") {
				cmd.kmip = true
			} else if strings.HasPrefix(name, "vault") {
				cmd.vault = true
			}
		}
	}
	if config != "" {
		if p, ok := r.abs(config, ""); ok {
			if b, ok := r.read(p, false); ok {
				var err error
				if c, err = parseMongoYAML(b); err != nil {
					r.note("%s: %v", show(p), err)
				}
				if c.enable != nil {
					c.enable.source = p
				}
			}
		}
	}
	// The command line overrides the file.
	if cmd.dbPath != "" {
		c.dbPath = cmd.dbPath
	}
	if cmd.enable != nil {
		c.enable = cmd.enable
	}
	if cmd.cipher != "" {
		c.cipher = cmd.cipher
	}
	c.keyFile = c.keyFile || cmd.keyFile
	c.kmip = c.kmip || cmd.kmip
	c.vault = c.vault || cmd.vault

	r.e.DataDir = mongoDefaultDBPath
	if c.dbPath != "" {
		r.e.DataDir = ""
		if p, ok := r.abs(c.dbPath, ""); ok {
			r.e.DataDir = p
		}
	}
	if c.vault {
		r.e.Product = "Percona Server for MongoDB" // Vault is Percona's alone
	}
	if c.enable == nil {
		return
	}
	km := ""
	switch {
	case c.vault:
		km = snapshot.KeyManagerVault
	case c.kmip:
		km = snapshot.KeyManagerKMIP
	case c.keyFile:
		km = snapshot.KeyManagerKeyfile
	}
	cipher := c.cipher
	if cipher == "" {
		cipher = mongoDefaultCipher
	}
	r.emit([]setting{{mongoEnable, []string{snapshot.CoversAll}, mongoBool}},
		map[string]found{mongoEnable: *c.enable}, km, cipher)
}
