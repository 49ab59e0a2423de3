package storage

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// mountInfoPath names the mount table to read. On this process's own
// /proc it is self/mountinfo: the mount namespace slowpath runs in. Under
// any other proc root "self" still resolves to this process (the link is
// answered by the procfs instance for the reader), so a DaemonSet reading
// the host's /proc at /host/proc would get the container's mounts: there
// PID 1's table (the host's init, or what a saved tree holds) is read when
// present, as node_exporter's filesystem collector does
// (collector/filesystem_linux.go, GetProcMounts(1), self as the fallback).
func mountInfoPath(fs hostfs.FS) string {
	self := fs.ProcPath("self", "mountinfo")
	if fs.OwnProc() {
		return self
	}
	if p := fs.ProcPath("1", "mountinfo"); fileExists(p) {
		return p
	}
	return self
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// readMountInfo reads the mount table mountInfoPath names.
func readMountInfo(fs hostfs.FS) ([]snapshot.Mount, []error, error) {
	return ReadMountInfo(mountInfoPath(fs))
}

// MountTable returns the mounts of the table the storage collector reads
// (mountInfoPath): the mount namespace slowpath runs in, or the host's
// under a foreign proc root. Lines that do not parse are left out; the
// error is a failure to read the file.
func MountTable(fs hostfs.FS) ([]snapshot.Mount, error) {
	mounts, _, err := readMountInfo(fs)
	return mounts, err
}

// ReadMountInfo reads a mountinfo file (/proc/PID/mountinfo under a proc
// root) with slowpath's one mountinfo parser: every good line as a
// snapshot.Mount, each bad line as an error beside them, and a failure to
// read the file as the error. Errors name the path.
// Format: proc_pid_mountinfo(5) and fs/proc_namespace.c show_mountinfo().
//
// procfs has a parser (procfs.GetMounts), but it turns option strings into
// maps (losing their order and text), keeps the octal escapes in paths
// (a mount point with a space stays "\040") and rejects the whole file for
// one bad line. A snapshot wants the kernel's text and partial data, so
// this reader keeps every good line and reports the bad ones; the rest of
// slowpath (experiment, capture, lab crypt) reads mount tables through it
// too, so a path with a space means the same everywhere.
func ReadMountInfo(p string) ([]snapshot.Mount, []error, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", p, err)
	}
	defer f.Close()
	mounts, lineErrs, err := parseMountInfo(f)
	if err != nil {
		return mounts, lineErrs, fmt.Errorf("read %s: %w", p, err)
	}
	return mounts, lineErrs, nil
}

// errMountInfoLine marks a malformed mountinfo line.
var errMountInfoLine = errors.New("malformed mountinfo line")

// parseMountInfo parses mountinfo text. Bad lines are returned as errors
// alongside the good mounts; the final error is a read failure.
func parseMountInfo(r io.Reader) ([]snapshot.Mount, []error, error) {
	var (
		mounts []snapshot.Mount
		errs   []error
	)
	sc := bufio.NewScanner(r)
	// Mount options of overlay or NFS mounts can be long; 1 MiB per line is
	// far beyond any seen in practice yet bounded.
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		m, err := parseMountInfoLine(line)
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", n, err))
			continue
		}
		mounts = append(mounts, m)
	}
	return mounts, errs, sc.Err()
}

// parseMountInfoLine parses one line:
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//	(1)(2)(3)   (4)   (5)      (6)      (7)   (8) (9)   (10)         (11)
func parseMountInfoLine(line string) (snapshot.Mount, error) {
	var m snapshot.Mount
	f := strings.Fields(line)
	sep := -1
	// The separator is the first lone "-" after the six fixed fields;
	// optional fields (7) never are "-".
	for i := 6; i < len(f); i++ {
		if f[i] == "-" {
			sep = i
			break
		}
	}
	if len(f) < 6 || sep < 0 {
		return m, fmt.Errorf("%w: no \" - \" separator after 6 fields: %q", errMountInfoLine, line)
	}
	if len(f)-sep-1 < 2 {
		return m, fmt.Errorf("%w: fewer than 2 fields after separator: %q", errMountInfoLine, line)
	}
	var err error
	if m.MountID, err = strconv.Atoi(f[0]); err != nil {
		return m, fmt.Errorf("%w: mount ID %q", errMountInfoLine, f[0])
	}
	if m.ParentID, err = strconv.Atoi(f[1]); err != nil {
		return m, fmt.Errorf("%w: parent ID %q", errMountInfoLine, f[1])
	}
	if !validMajorMinor(f[2]) {
		return m, fmt.Errorf("%w: major:minor %q", errMountInfoLine, f[2])
	}
	m.MajorMinor = f[2]
	m.Root = unescapeMount(f[3])
	m.MountPoint = unescapeMount(f[4])
	m.Options = f[5]
	m.FSType = f[sep+1]
	m.Source = unescapeMount(f[sep+2])
	if len(f) > sep+3 {
		m.SuperOpts = f[sep+3]
	}
	return m, nil
}

// validMajorMinor accepts "MAJOR:MINOR" with decimal numbers.
func validMajorMinor(s string) bool {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return false
	}
	_, err1 := strconv.ParseUint(a, 10, 32)
	_, err2 := strconv.ParseUint(b, 10, 32)
	return err1 == nil && err2 == nil
}

// unescapeMount undoes the kernel's octal escapes of space, tab, newline
// and backslash (fs/proc_namespace.c mangle(), " \t\n\\").
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			v := (s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0')
			b.WriteByte(v)
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }
