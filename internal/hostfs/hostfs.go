// Package hostfs holds what every reader of the host shares: the
// filesystem roots it reads (FS: /proc, /sys and /, injected as
// prometheus/procfs internal/fs does, so a reader runs against a fixture
// tree as well as the live host), ReadValue for one-value kernel files,
// Classify, the one place that turns an errno into a Kind (snapshot stores
// one per collection error), and which sources only the live host has
// (live.go). Its users are the collectors and every other package that
// reads the host (agent, capture, experiment, fix/apply, cipherlimit);
// commands get an FS from cli/clienv. The labs (internal/lab) build and
// read their own devices and namespaces and name /proc and /sys
// themselves.
package hostfs

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// FS is a set of host roots. The zero value is not useful; use Default or New.
type FS struct {
	Proc string // usually /proc
	Sys  string // usually /sys
	Root string // usually /; used for /dev, /etc and backing files
	// Live allows the live-only sources (live.go): the roots are this
	// host's. Set by Default, cleared by New, decided by WithLiveSources.
	Live    bool
	notLive string // why not, for the manifest
}

// Default returns the live host roots.
func Default() FS { return FS{Proc: "/proc", Sys: "/sys", Root: "/", Live: true} }

// New roots all three trees under one directory, as fixture trees do:
// dir/proc, dir/sys and dir itself. Live-only sources are off.
func New(dir string) FS {
	return FS{Proc: filepath.Join(dir, "proc"), Sys: filepath.Join(dir, "sys"), Root: dir}
}

// ProcPath joins elements under the proc root.
func (f FS) ProcPath(elem ...string) string {
	return filepath.Join(append([]string{f.Proc}, elem...)...)
}

// SysPath joins elements under the sys root.
func (f FS) SysPath(elem ...string) string { return filepath.Join(append([]string{f.Sys}, elem...)...) }

// RootPath joins elements under the root filesystem.
func (f FS) RootPath(elem ...string) string {
	return filepath.Join(append([]string{f.Root}, elem...)...)
}

// ReadValue reads a one-value kernel file (a sysfs attribute or a sysctl)
// without its trailing newline. Errors are *fs.PathError naming the path,
// as os.ReadFile's, so callers record them as they are.
//
// It makes three syscalls, open, read and close: os.ReadFile adds an
// fstat, a read that returns 0 and an epoll registration attempt, and
// doctor reads a few hundred such files, where the syscalls are most of
// the cost. A sysfs attribute is printed whole into one page
// (Documentation/filesystems/sysfs.rst, "Reading/Writing Attribute Data"),
// so a short first read is the whole value; a full buffer reads on.
func ReadValue(path string) (string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var buf [512]byte
	var out []byte
	for {
		n, err := unix.Read(fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if out == nil && n < len(buf) {
			return strings.TrimSpace(string(buf[:n])), nil
		}
		out = append(out, buf[:n]...)
		if n == 0 {
			return strings.TrimSpace(string(out)), nil
		}
	}
}

// Kind classifies an error from reading the host, so that expected absences
// are reported as facts rather than failures. It is the one place where
// errno values are interpreted; callers never compare error strings.
type Kind string

const (
	KindMissing     Kind = "missing"     // ENOENT: the kernel or host does not have it
	KindPermission  Kind = "permission"  // EACCES, EPERM: run as root or grant a capability
	KindUnsupported Kind = "unsupported" // EOPNOTSUPP, ENOTTY, EINVAL from an ioctl or attribute
	KindError       Kind = "error"       // anything else, including malformed content
	KindSkipped     Kind = "skipped"     // ErrNotLive: not read on purpose (a live-only source, foreign roots)
)

// Classify returns the Kind of err. A nil error has no kind.
func Classify(err error) Kind {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrNotLive):
		return KindSkipped
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENODEV), errors.Is(err, syscall.ENXIO):
		return KindMissing
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return KindPermission
	case errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.ENOTTY), errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.ENOSYS):
		return KindUnsupported
	default:
		return KindError
	}
}
