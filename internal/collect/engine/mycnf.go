package engine

import (
	"path"
	"strings"
)

// Option files of MariaDB and MySQL (my.cnf), as both servers read them:
// [group] lines, "name", "name = value" and "!include FILE" /
// "!includedir DIR" (in a directory, the *.cnf files), # and ; comments;
// values may be quoted with ' or " and hold \n \t \\ \s escapes. Sources:
// https://mariadb.com/kb/en/configuring-mariadb-with-option-files/ and
// https://dev.mysql.com/doc/refman/8.4/en/option-files.html.

// cnfItem is one line of an option file that means something.
type cnfItem struct {
	kind  cnfKind
	group string // lower case
	name  string // an option's name, normalised (optionName)
	value string
	bare  bool   // an option without "=": a boolean turned on
	path  string // an include's argument
	line  int
}

type cnfKind int

const (
	cnfOption cnfKind = iota
	cnfInclude
	cnfIncludeDir
)

// parseMyCnf parses an option file; bad is the number of lines that are
// none of the forms above (the server refuses such a file).
func parseMyCnf(data string) (items []cnfItem, bad int) {
	group := ""
	for i, line := range strings.Split(data, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
			continue
		case line[0] == '[':
			end := strings.IndexByte(line, ']')
			if end < 0 {
				bad++
				continue
			}
			group = strings.ToLower(strings.TrimSpace(line[1:end]))
			continue
		case strings.HasPrefix(line, "!include"):
			// !include FILE or !includedir DIR.
			kind, p := cnfInclude, line[len("!include"):]
			if dir, ok := strings.CutPrefix(p, "dir"); ok {
				kind, p = cnfIncludeDir, dir
			}
			if p = strings.TrimSpace(p); p == "" {
				bad++
				continue
			}
			items = append(items, cnfItem{kind: kind, group: group, path: p, line: i + 1})
			continue
		}
		name, value, hasValue := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if name == "" || strings.ContainsAny(name, " \t") {
			bad++
			continue
		}
		v := ""
		if hasValue {
			v = cnfValue(strings.TrimSpace(value))
		}
		items = append(items, cnfItem{kind: cnfOption, group: group, name: name, value: v, bare: !hasValue, line: i + 1})
	}
	return items, bad
}

// cnfValue unquotes a value, or cuts an unquoted one at a # comment.
func cnfValue(v string) string {
	if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') {
		if end := strings.IndexByte(v[1:], v[0]); end >= 0 {
			return cnfUnescape(v[1 : 1+end])
		}
	}
	if i := strings.IndexByte(v, '#'); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	return cnfUnescape(v)
}

func cnfUnescape(v string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' || i+1 == len(v) {
			b.WriteByte(v[i])
			continue
		}
		i++
		switch v[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 's':
			b.WriteByte(' ')
		default:
			b.WriteByte(v[i])
		}
	}
	return b.String()
}

// optionName normalises an option as the servers do: '-' and '_' are the
// same, "loose-" only stops an unknown option from being an error, and
// "skip-", "disable-" and "enable-" set a boolean (my_getopt.c). The
// result is the name with underscores and the value the prefix implies.
func optionName(raw, value string, bare bool) (name, v string) {
	name = strings.ToLower(strings.ReplaceAll(raw, "-", "_"))
	name = strings.TrimPrefix(name, "loose_")
	switch {
	case strings.HasPrefix(name, "skip_"):
		return strings.TrimPrefix(name, "skip_"), "OFF"
	case strings.HasPrefix(name, "disable_"):
		return strings.TrimPrefix(name, "disable_"), "OFF"
	case strings.HasPrefix(name, "enable_"):
		name, value = strings.TrimPrefix(name, "enable_"), "ON"
	}
	if bare {
		value = "ON" // a bare boolean option turns it on
	}
	return name, value
}

// serverGroup reports whether a server reads options in group: MariaDB's
// mariadbd reads [mysqld], [server], [mariadb], [mariadbd],
// [client-server] and their -VERSION forms; MySQL's mysqld [mysqld],
// [server] and [mysqld-VERSION].
func serverGroup(engine, group string) bool {
	base, _, _ := strings.Cut(group, "-")
	if group == "client-server" {
		return engine == "mariadb"
	}
	switch base {
	case "mysqld", "server":
		return true
	case "mariadb", "mariadbd":
		return engine == "mariadb"
	}
	return false
}

// cnfDir is the directory an include's relative path is taken from.
func cnfDir(file string) string { return path.Dir(file) }
