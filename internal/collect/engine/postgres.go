package engine

import (
	"strings"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// PostgreSQL's configuration (https://www.postgresql.org/docs/15/config-setting.html):
// one "name = value" (the '=' optional) per line, # comments, values
// quoted with ' ('' or \' inside), include, include_if_exists and
// include_dir (its *.conf files, in name order), relative paths taken from
// the including file's directory. postgresql.auto.conf in the data
// directory is read after postgresql.conf; the command line (-c
// name=value, --name=value) overrides both. Names are case-insensitive.

// Percona pg_tde's settings (https://docs.percona.com/pg-tde/variables.html,
// https://docs.percona.com/pg-tde/setup.html): the library must be in
// shared_preload_libraries; tables are encrypted when created with the
// tde_heap access method (default_table_access_method makes it the
// default, pg_tde.enforce_encryption refuses any other), WAL when
// pg_tde.wal_encrypt is on. Loading pg_tde alone encrypts nothing the
// configuration shows: tables created USING tde_heap are in the catalogue.
const (
	pgPreload    = "shared_preload_libraries"
	pgWALEncrypt = "pg_tde.wal_encrypt"
	pgEnforce    = "pg_tde.enforce_encryption"
	pgDefaultAM  = "default_table_access_method"
)

// pgItem is one line of a configuration file.
type pgItem struct {
	name, value string
	line        int
}

// parsePostgresConf parses a configuration file; bad counts the lines
// PostgreSQL would refuse (a syntax error).
func parsePostgresConf(data string) (items []pgItem, bad int) {
	for i, line := range strings.Split(data, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == '#' {
			continue
		}
		n := 0
		for n < len(line) && pgNameByte(line[n]) {
			n++
		}
		if n == 0 {
			bad++
			continue
		}
		name := strings.ToLower(line[:n])
		rest := strings.TrimSpace(line[n:])
		rest = strings.TrimSpace(strings.TrimPrefix(rest, "="))
		value, ok := pgValue(rest)
		if !ok {
			bad++
			continue
		}
		items = append(items, pgItem{name: name, value: value, line: i + 1})
	}
	return items, bad
}

func pgNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.'
}

// pgValue reads a value: quoted, or one word; a # comment may follow.
func pgValue(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	var v string
	var rest string
	if s[0] == '\'' {
		var b strings.Builder
		i := 1
		for ; i < len(s); i++ {
			c := s[i]
			if c == '\\' && i+1 < len(s) {
				i++
				b.WriteByte(s[i])
				continue
			}
			if c == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					b.WriteByte('\'')
					i++
					continue
				}
				break
			}
			b.WriteByte(c)
		}
		if i >= len(s) {
			return "", false // unterminated
		}
		v, rest = b.String(), s[i+1:]
	} else {
		end := strings.IndexAny(s, " \t#")
		if end < 0 {
			end = len(s)
		}
		v, rest = s[:end], s[end:]
	}
	rest = strings.TrimSpace(rest)
	if rest != "" && rest[0] != '#' {
		return "", false
	}
	return v, true
}

// pgBool is a boolean as PostgreSQL reads it: on, off, true, false, yes,
// no, 1, 0, or an unambiguous prefix of one of them, in any case.
func pgBool(v string) bool {
	v = strings.ToLower(strings.TrimSpace(v))
	switch {
	case v == "1", v == "on":
		return true
	case v == "" || v == "o":
		return false
	}
	return strings.HasPrefix("true", v) || strings.HasPrefix("yes", v)
}

// pgLibraries reports whether a library list names lib ('pg_tde', or a
// path ending in it, with or without .so).
func pgLibraries(list, lib string) bool {
	for l := range strings.SplitSeq(list, ",") {
		l = strings.Trim(strings.TrimSpace(l), `"`)
		l = strings.TrimSuffix(l[strings.LastIndexByte(l, '/')+1:], ".so")
		if l == lib {
			return true
		}
	}
	return false
}

// collectPostgres reads the postmaster's settings: -D or the config_file
// given, postgresql.conf and postgresql.auto.conf, then its command line.
func collectPostgres(r *reader, argv []string) {
	m := map[string]found{}
	var cmd [][2]string
	dataDir, configFile := "", ""
	cmdDataDir := false // -c data_directory: the file's does not override it
	args := argv[min(1, len(argv)):]
	for i := 0; i < len(args); i++ {
		a := args[i]
		var kv string
		switch {
		case a == "-D" && i+1 < len(args):
			dataDir = args[i+1]
			i++
			continue
		case strings.HasPrefix(a, "-D") && len(a) > 2:
			dataDir = a[2:]
			continue
		case a == "-c" && i+1 < len(args):
			kv = args[i+1]
			i++
		case strings.HasPrefix(a, "-c") && len(a) > 2:
			kv = a[2:]
		case strings.HasPrefix(a, "--") && strings.Contains(a, "="):
			kv = a[2:]
		default:
			continue
		}
		name, value, _ := strings.Cut(kv, "=")
		// Command-line names take '-' for '_' (postgres --help).
		name = strings.ToLower(strings.ReplaceAll(name, "-", "_"))
		switch name {
		case "config_file":
			configFile = value
		case "data_directory":
			dataDir, cmdDataDir = value, true
		default:
			cmd = append(cmd, [2]string{name, value})
		}
	}
	if configFile == "" {
		if dataDir == "" {
			r.note("the data directory is not on the command line (PGDATA in the environment is not read): configuration not read")
			return
		}
		configFile = dataDir + "/postgresql.conf"
	}
	if p, ok := r.abs(configFile, ""); ok {
		r.readPostgresConf(m, p, false)
	}
	// With -D naming the configuration's directory, data_directory in
	// the file names the data (postgres(1), -D).
	if f, ok := m["data_directory"]; ok && !cmdDataDir {
		dataDir = f.value
	}
	if dataDir != "" {
		if p, ok := r.abs(dataDir, ""); ok {
			r.e.DataDir = p
			r.readPostgresConf(m, p+"/postgresql.auto.conf", true)
		}
	}
	for _, kv := range cmd {
		m[kv[0]] = found{kv[1], srcCommandLine}
	}

	loaded := false
	if f, ok := m[pgPreload]; ok && pgLibraries(f.value, "pg_tde") {
		loaded = true
		r.e.Encryption = append(r.e.Encryption, snapshot.EngineEncryption{
			Setting: pgPreload, Value: r.value(pgPreload, f.value), Source: f.source})
		r.note("pg_tde is loaded: tables created USING tde_heap are encrypted, which the configuration does not show")
	}
	add := func(name string, covers string, on bool) {
		f := m[name]
		if on && !loaded {
			r.note("%s is set but pg_tde is not in shared_preload_libraries: it has no effect", name)
			on = false
		}
		r.e.Encryption = append(r.e.Encryption, snapshot.EngineEncryption{
			Setting: name, Value: r.value(name, f.value), Enabled: on, Source: f.source, Covers: []string{covers}})
	}
	if f, ok := m[pgDefaultAM]; ok && strings.HasPrefix(strings.ToLower(f.value), "tde_heap") {
		add(pgDefaultAM, snapshot.CoversTables, true)
	}
	if f, ok := m[pgEnforce]; ok {
		add(pgEnforce, snapshot.CoversTables, pgBool(f.value))
	}
	if f, ok := m[pgWALEncrypt]; ok {
		add(pgWALEncrypt, snapshot.CoversLogs, pgBool(f.value))
	}
}

// readPostgresConf reads one file and its includes, in order.
func (r *reader) readPostgresConf(m map[string]found, p string, optional bool) {
	b, ok := r.read(p, optional)
	if !ok {
		return
	}
	r.enter(p)
	defer r.leave()
	items, bad := parsePostgresConf(string(b))
	if bad > 0 {
		r.note("%s: %d lines PostgreSQL would refuse (syntax)", show(p), bad)
	}
	for _, it := range items {
		switch it.name {
		case "include", "include_if_exists":
			if q, ok := r.abs(it.value, cnfDir(p)); ok {
				r.readPostgresConf(m, q, it.name == "include_if_exists")
			}
		case "include_dir":
			dir, ok := r.abs(it.value, cnfDir(p))
			if !ok {
				continue
			}
			for _, name := range r.list(dir, false) {
				// Files whose names start with '.' are ignored.
				if strings.HasSuffix(name, ".conf") && !strings.HasPrefix(name, ".") {
					if q, ok := r.abs(name, dir); ok {
						r.readPostgresConf(m, q, false)
					}
				}
			}
		default:
			m[it.name] = found{it.value, p}
		}
	}
}
