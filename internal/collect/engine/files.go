package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"syscall"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/safetext"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// files is how a process's files are read: below its root on a host
// (belowRoot), from memory in the fuzzers.
type files interface {
	ReadFile(p string) ([]byte, error)
	ReadDir(p string) ([]string, error)
	Dev(p string) (string, error)
}

// belowRoot reads paths as the process sees them, below its /proc/PID/root,
// links resolved inside that root (hostfs.ReadFileBelow).
type belowRoot string

func (r belowRoot) ReadFile(p string) ([]byte, error) { return hostfs.ReadFileBelow(string(r), p) }

func (r belowRoot) ReadDir(p string) ([]string, error) {
	ents, err := hostfs.ReadDirBelow(string(r), p)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out, nil
}

func (r belowRoot) Dev(p string) (string, error) {
	st, err := hostfs.StatBelow(string(r), p)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)), nil
}

// reader reads one process's configuration and records what it found in
// e: the files read, the settings, and notes on what it could not read.
type reader struct {
	files   files
	e       *snapshot.Engine
	cwd     string // the process's working directory, for relative paths
	reads   int
	active  []string // the include chain being read, to find loops
	dropped int      // notes over maxNotes
}

// show quotes a path or value for a note: ASCII only, cut to maxShown
// bytes, so nothing a file holds reaches a terminal as it is.
func show(s string) string {
	if len(s) > maxShown {
		n := maxShown
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return strconv.QuoteToASCII(s[:n]) + "..."
	}
	return strconv.QuoteToASCII(s)
}

func (r *reader) note(format string, a ...any) {
	if len(r.e.Notes) >= maxNotes {
		r.dropped++
		return
	}
	r.e.Notes = append(r.e.Notes, fmt.Sprintf(format, a...))
}

// abs makes p absolute (relative to dir, or the process's working
// directory when dir is empty) and clean; ok is false, with a note, when
// p is not a path slowpath records (control characters, too long).
func (r *reader) abs(p, dir string) (string, bool) {
	if p == "" {
		return "", false
	}
	if !path.IsAbs(p) {
		if dir == "" {
			dir = r.cwd
		}
		if dir == "" || !path.IsAbs(dir) {
			r.note("%s is relative and the process's working directory is unknown: not read", show(p))
			return "", false
		}
		p = path.Join(dir, p)
	}
	p = path.Clean(p)
	if safetext.Check(p, 4095, false) != nil {
		r.note("%s is not a path slowpath records (control character, invalid UTF-8 or too long): not read", show(p))
		return "", false
	}
	return p, true
}

// why says in a few words why a file could not be read.
func why(err error) string {
	switch {
	case errors.Is(err, syscall.EFBIG):
		return "over 1 MiB"
	case errors.Is(err, syscall.EINVAL):
		return "not a regular file"
	case errors.Is(err, syscall.ELOOP):
		return "too many links"
	case errors.Is(err, syscall.ENOTDIR):
		return "not a directory"
	case errors.Is(err, fs.ErrNotExist):
		return "missing"
	}
	return string(hostfs.Classify(err))
}

// read reads the configuration file p (absolute, clean) and records it in
// ConfigFiles; optional files that are missing are skipped in silence.
// Text slowpath would not parse (binary, not UTF-8) is a note.
func (r *reader) read(p string, optional bool) ([]byte, bool) {
	if slices.Contains(r.active, p) {
		r.note("%s includes itself (an include loop): not read again", show(p))
		return nil, false
	}
	if len(r.active) >= maxDepth {
		r.note("%s is included more than %d deep: not read", show(p), maxDepth)
		return nil, false
	}
	if r.reads >= maxFiles {
		r.note("%s: more than %d configuration files: not read", show(p), maxFiles)
		return nil, false
	}
	b, err := r.files.ReadFile(p)
	if err != nil {
		if optional && errors.Is(err, fs.ErrNotExist) {
			return nil, false
		}
		r.note("%s could not be read: %s", show(p), why(err))
		return nil, false
	}
	r.reads++
	r.e.ConfigFiles = append(r.e.ConfigFiles, p)
	switch {
	case bytes.IndexByte(b, 0) >= 0:
		r.note("%s is binary, not a configuration file: not parsed", show(p))
		return nil, false
	case !utf8.Valid(b):
		r.note("%s is not UTF-8 text: not parsed", show(p))
		return nil, false
	}
	return b, true
}

// enter and leave bracket the reading of an included file.
func (r *reader) enter(p string) { r.active = append(r.active, p) }
func (r *reader) leave()         { r.active = r.active[:len(r.active)-1] }

// list lists directory p (absolute, clean), sorted; a note when it cannot.
func (r *reader) list(p string, optional bool) []string {
	names, err := r.files.ReadDir(p)
	if err != nil {
		if !(optional && errors.Is(err, fs.ErrNotExist)) {
			r.note("directory %s could not be read: %s", show(p), why(err))
		}
		return nil
	}
	slices.Sort(names)
	return names
}

// dev is major:minor of the filesystem holding p, "" with a note when p
// cannot be reached.
func (r *reader) dev(p string) string {
	d, err := r.files.Dev(p)
	if err != nil {
		r.note("%s could not be reached to find its filesystem: %s", show(p), why(err))
		return ""
	}
	return d
}

// value makes a setting's value fit the snapshot: one line of text,
// bounded; anything else is recorded quoted, with a note.
func (r *reader) value(name, v string) string {
	if safetext.Check(v, 1024, false) == nil {
		return v
	}
	r.note("the value of %s is not one line of text: recorded quoted", name)
	return show(v)
}

// setting is one encryption setting an engine knows, in the order the
// snapshot lists them.
type setting struct {
	name    string
	covers  []string
	enabled func(v string) bool
}

// found is a setting's value and where it came from; later sources
// override earlier ones, as each engine reads them.
type found struct {
	value, source string
}

// emit records the settings of table found in m, in table order.
func (r *reader) emit(table []setting, m map[string]found, keyManager, cipher string) {
	for _, s := range table {
		f, ok := m[s.name]
		if !ok {
			continue
		}
		r.e.Encryption = append(r.e.Encryption, snapshot.EngineEncryption{
			Setting: s.name, Value: r.value(s.name, f.value), Enabled: s.enabled(f.value),
			Source: f.source, Covers: s.covers, KeyManager: keyManager, Cipher: r.cipher(cipher),
		})
	}
}

// cipher keeps a cipher name only when it is one short word of letters,
// digits, '-' and '_' (AES256-CBC, AES_128_CTR).
func (r *reader) cipher(c string) string {
	if c == "" || len(c) > 64 || !isWord(c) {
		return ""
	}
	return c
}

func isWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return s != ""
}

// Sources that are not files (EngineEncryption.Source).
const (
	srcCommandLine = "command line"
	srcDefault     = "default"
)
