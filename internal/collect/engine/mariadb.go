package engine

import (
	"strings"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// MariaDB's data-at-rest encryption settings
// (https://mariadb.com/kb/en/innodb-system-variables/,
// https://mariadb.com/kb/en/server-system-variables/#encrypt_tmp_files,
// https://mariadb.com/kb/en/aria-system-variables/#aria_encrypt_tables,
// https://mariadb.com/kb/en/data-at-rest-encryption-overview/).
var mariadbSettings = []setting{
	{"innodb_encrypt_tables", []string{snapshot.CoversTables}, onOrForce},
	{"innodb_encrypt_log", []string{snapshot.CoversLogs}, myBool},
	{"innodb_encrypt_temporary_tables", []string{snapshot.CoversTemp}, myBool},
	{"encrypt_tmp_files", []string{snapshot.CoversTemp}, myBool},
	{"encrypt_tmp_disk_tables", []string{snapshot.CoversTemp}, myBool},
	{"encrypt_binlog", []string{snapshot.CoversLogs}, myBool},
	{"aria_encrypt_tables", []string{snapshot.CoversTables}, myBool},
}

// myBool is a boolean system variable as both servers read it: ON, TRUE,
// 1 (or YES) in any case.
func myBool(v string) bool {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "ON", "TRUE", "1", "YES":
		return true
	}
	return false
}

// onOrForce is innodb_encrypt_tables: an enum OFF, ON, FORCE, also given
// by its index 0, 1, 2.
func onOrForce(v string) bool {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "ON", "FORCE", "1", "2", "TRUE":
		return true
	}
	return false
}

// mariadbKeyPlugins: the key management plugins, by the kind of key
// manager (https://mariadb.com/kb/en/encryption-key-management/).
var mariadbKeyPlugins = []struct{ plugin, kind string }{
	{"file_key_management", snapshot.KeyManagerKeyfile},
	{"hashicorp_key_management", snapshot.KeyManagerVault},
	{"aws_key_management", snapshot.KeyManagerCloudKMS},
}

// myOptions is what the option files and the command line set, in the
// order the server applies them.
type myOptions struct {
	settings map[string]found
	datadir  found
	plugins  []string // plugin_load, plugin_load_add, early_plugin_load values
	options  []string // names of every option set, for plugin options
	cipher   string   // file_key_management_encryption_algorithm
}

func (o *myOptions) set(name, value, source string) {
	o.options = append(o.options, name)
	switch name {
	case "datadir":
		o.datadir = found{value, source}
	case "plugin_load", "plugin_load_add", "early_plugin_load":
		o.plugins = append(o.plugins, value)
	case "file_key_management_encryption_algorithm":
		o.cipher = value
	default:
		o.settings[name] = found{value, source}
	}
}

// collectMyCnfEngine reads a MariaDB or MySQL server's options: the
// option files (--no-defaults reads none, --defaults-file only that one,
// else /etc/my.cnf and /etc/mysql/my.cnf, then --defaults-extra-file),
// then its command line, which overrides them. ~/.my.cnf is not read:
// the server's home is a client's place.
func collectMyCnfEngine(r *reader, argv []string) {
	o := &myOptions{settings: map[string]found{}}
	args := argv[min(1, len(argv)):]
	type cnfFile struct {
		path     string
		optional bool // a default location, missing on many hosts
	}
	files := []cnfFile{{"/etc/my.cnf", true}, {"/etc/mysql/my.cnf", true}}
	var extra string
	noDefaults := false
	var cmd [][2]string
	for i := 0; i < len(args); i++ {
		a := args[i]
		var name, value string
		bare := false
		switch {
		case a == "-h" && i+1 < len(args): // mysqld -h DIR is --datadir
			name, value = "datadir", args[i+1]
			i++
		case strings.HasPrefix(a, "--"):
			var has bool
			name, value, has = strings.Cut(a[2:], "=")
			bare = !has
			if bare && takesValue(name) && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				value, bare = args[i+1], false
				i++
			}
		default:
			continue
		}
		name, value = optionName(name, value, bare)
		switch name {
		case "no_defaults":
			noDefaults = true
		case "defaults_file":
			files = []cnfFile{{value, false}}
		case "defaults_extra_file":
			extra = value
		default:
			cmd = append(cmd, [2]string{name, value})
		}
	}
	if !noDefaults {
		if extra != "" {
			files = append(files, cnfFile{extra, false})
		}
		for _, f := range files {
			if p, ok := r.abs(f.path, ""); ok {
				r.readMyCnf(o, p, f.optional)
			}
		}
	}
	// The data directory is known once the command line is read; MySQL's
	// persisted variables, in it, come after the option files.
	datadir := o.datadir
	for _, kv := range cmd {
		if kv[0] == "datadir" {
			datadir = found{kv[1], srcCommandLine}
		}
	}
	if datadir.value != "" {
		if p, ok := r.abs(datadir.value, ""); ok {
			r.e.DataDir = p
		}
	} else {
		r.e.DataDir = "/var/lib/mysql" // both servers' compiled-in default on Linux packages
	}
	if f, ok := o.settings["persisted_globals_load"]; r.e.Engine == snapshot.EngineMySQL && r.e.DataDir != "" && !noDefaults && (!ok || myBool(f.value)) {
		r.readPersisted(o)
	}
	for _, kv := range cmd {
		o.set(kv[0], kv[1], srcCommandLine)
	}

	km := ""
	if r.e.Engine == snapshot.EngineMariaDB {
		km = mariadbKeyManager(o)
		cipher := ""
		if km == snapshot.KeyManagerKeyfile {
			cipher = o.cipher
		}
		r.emit(mariadbSettings, o.settings, km, cipher)
		return
	}
	km = mysqlKeyManager(r, o, argv)
	r.emit(mysqlSettings, o.settings, km, "")
}

// takesValue: options given as "--name VALUE" (without "=") that the
// collector needs.
func takesValue(raw string) bool {
	switch strings.ReplaceAll(strings.ToLower(raw), "-", "_") {
	case "datadir", "defaults_file", "defaults_extra_file", "plugin_load", "plugin_load_add", "early_plugin_load":
		return true
	}
	return false
}

// readMyCnf reads one option file and what it includes; the server reads
// an include where it stands, so its options apply in that order.
func (r *reader) readMyCnf(o *myOptions, p string, optional bool) {
	b, ok := r.read(p, optional)
	if !ok {
		return
	}
	r.enter(p)
	defer r.leave()
	items, bad := parseMyCnf(string(b))
	if bad > 0 {
		r.note("%s: %d lines are not options, groups or includes (the server refuses such a file)", show(p), bad)
	}
	for _, it := range items {
		switch it.kind {
		case cnfInclude:
			if q, ok := r.abs(it.path, cnfDir(p)); ok {
				r.readMyCnf(o, q, false)
			}
		case cnfIncludeDir:
			dir, ok := r.abs(it.path, cnfDir(p))
			if !ok {
				continue
			}
			for _, name := range r.list(dir, false) {
				if strings.HasSuffix(name, ".cnf") {
					if q, ok := r.abs(name, dir); ok {
						r.readMyCnf(o, q, false)
					}
				}
			}
		case cnfOption:
			if serverGroup(r.e.Engine, it.group) {
				name, value := optionName(it.name, it.value, it.bare)
				o.set(name, value, p)
			}
		}
	}
}

// mariadbKeyManager is the kind of the key management plugin loaded
// (plugin_load_add), or whose options are set (a plugin installed with
// INSTALL SONAME keeps no line in the files, but needs its options there).
func mariadbKeyManager(o *myOptions) string {
	for _, kp := range mariadbKeyPlugins {
		for _, p := range o.plugins {
			if strings.Contains(p, kp.plugin) {
				return kp.kind
			}
		}
	}
	for _, kp := range mariadbKeyPlugins {
		for _, n := range o.options {
			if n == kp.plugin || strings.HasPrefix(n, kp.plugin+"_") {
				return kp.kind
			}
		}
	}
	return ""
}
