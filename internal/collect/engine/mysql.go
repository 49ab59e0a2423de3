package engine

import (
	"encoding/json"
	"path"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// MySQL's data-at-rest encryption settings
// (https://dev.mysql.com/doc/refman/8.4/en/innodb-data-encryption.html):
// default_table_encryption for new schemas and general tablespaces,
// innodb_redo_log_encrypt and innodb_undo_log_encrypt, binlog_encryption
// (https://dev.mysql.com/doc/refman/8.4/en/replication-binlog-encryption.html).
var mysqlSettings = []setting{
	{"default_table_encryption", []string{snapshot.CoversTables}, myBool},
	{"innodb_redo_log_encrypt", []string{snapshot.CoversLogs}, myBool},
	{"innodb_undo_log_encrypt", []string{snapshot.CoversLogs}, myBool},
	{"binlog_encryption", []string{snapshot.CoversLogs}, myBool},
}

// mysqlKeyrings names the kind of key manager of each keyring component
// and plugin (https://dev.mysql.com/doc/refman/8.4/en/keyring-component-plugin-comparison.html);
// the file ones are MySQL's own keyring, the rest hold keys elsewhere.
var mysqlKeyrings = []struct{ name, kind string }{
	{"keyring_file", snapshot.KeyManagerKeyring},
	{"keyring_encrypted_file", snapshot.KeyManagerKeyring},
	{"keyring_kmip", snapshot.KeyManagerKMIP},
	{"keyring_okv", snapshot.KeyManagerKMIP},
	{"keyring_hashicorp", snapshot.KeyManagerVault},
	{"keyring_vault", snapshot.KeyManagerVault}, // Percona Server for MySQL
	{"keyring_aws", snapshot.KeyManagerCloudKMS},
	{"keyring_oci", snapshot.KeyManagerCloudKMS},
}

func keyringKind(s string) string {
	for _, k := range mysqlKeyrings {
		if strings.Contains(s, k.name) {
			return k.kind
		}
	}
	return ""
}

// mysqlManifest is a component manifest, mysqld.my: JSON naming the
// components loaded at start, next to the mysqld binary, and when
// read_local_manifest says so in the data directory
// (https://dev.mysql.com/doc/refman/8.4/en/keyring-component-installation.html).
// The component's own .cnf names its key file and is not read.
type mysqlManifest struct {
	ReadLocal  bool   `json:"read_local_manifest"`
	Components string `json:"components"`
}

// mysqlKeyManager finds the keyring: a component in the manifest, else a
// plugin of early-plugin-load.
func mysqlKeyManager(r *reader, o *myOptions, argv []string) string {
	dir := "/usr/sbin"
	if len(argv) > 0 && path.IsAbs(argv[0]) {
		dir = path.Dir(argv[0])
	}
	if kind := r.readManifest(path.Join(dir, "mysqld.my"), true); kind != "" {
		return kind
	}
	for _, p := range o.plugins {
		if kind := keyringKind(p); kind != "" {
			return kind
		}
	}
	return ""
}

func (r *reader) readManifest(p string, global bool) string {
	p, ok := r.abs(p, "")
	if !ok {
		return ""
	}
	b, ok := r.read(p, true)
	if !ok {
		return ""
	}
	var m mysqlManifest
	if err := json.Unmarshal(b, &m); err != nil {
		// The decoder's message may quote the file: say only that.
		r.note("%s is not a component manifest (JSON with \"components\")", show(p))
		return ""
	}
	if global && m.ReadLocal && r.e.DataDir != "" {
		if kind := r.readManifest(path.Join(r.e.DataDir, "mysqld.my"), false); kind != "" {
			return kind
		}
	}
	return keyringKind(m.Components)
}

// readPersisted applies the settings SET PERSIST wrote to mysqld-auto.cnf
// in the data directory, which the server reads "after all other option
// files" (https://dev.mysql.com/doc/refman/8.4/en/persisted-system-variables.html):
// JSON whose sections (mysql_server in version 1; mysql_static_variables,
// mysql_dynamic_variables and others in version 2) map a variable to
// {"Value": ...}. Only the settings the collector knows are taken;
// mysql_sensitive_dynamic_variables hold encrypted values and are skipped.
func (r *reader) readPersisted(o *myOptions) {
	p, ok := r.abs("mysqld-auto.cnf", r.e.DataDir)
	if !ok {
		return
	}
	b, ok := r.read(p, true)
	if !ok {
		return
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		r.note("%s is not the JSON of persisted variables", show(p))
		return
	}
	type variable struct {
		Value *string `json:"Value"`
	}
	for section, raw := range doc {
		if !strings.HasPrefix(section, "mysql_") || strings.Contains(section, "sensitive") {
			continue
		}
		var vars map[string]json.RawMessage
		if json.Unmarshal(raw, &vars) != nil {
			continue
		}
		for name, v := range vars {
			var x variable
			if !slices.ContainsFunc(mysqlSettings, func(s setting) bool { return s.name == name }) ||
				json.Unmarshal(v, &x) != nil || x.Value == nil {
				continue
			}
			o.set(name, *x.Value, p)
		}
	}
}
