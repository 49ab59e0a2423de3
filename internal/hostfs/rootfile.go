package hostfs

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// maxRootFile bounds ReadRootFile: the configuration files it serves
// (os-release, tuned profiles) are a few KiB.
const maxRootFile = 1 << 20

// openInRoot opens rel below the root filesystem with symbolic links
// resolved inside the root (openat2 RESOLVE_IN_ROOT), as chroot would: on
// a host whose root is mounted at /host, /host/etc/os-release is often a
// link to /usr/lib/os-release, which must mean /host/usr/lib/os-release,
// never slowpath's own. Magic links (/proc/self/root) are refused.
func (f FS) openInRoot(rel string, flags int) (*os.File, error) {
	full := f.RootPath(rel)
	root, err := unix.Open(f.Root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: f.Root, Err: err}
	}
	defer unix.Close(root)
	fd, err := unix.Openat2(root, filepath.Clean("/" + rel)[1:], &unix.OpenHow{
		Flags:   uint64(flags | unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOCTTY),
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: full, Err: err}
	}
	return os.NewFile(uintptr(fd), full), nil
}

// ReadRootFile reads a file of the root filesystem, rel being its path
// below the root (etc/os-release), links resolved inside the root
// (openInRoot). Files over 1 MiB are an error.
func (f FS) ReadRootFile(rel string) ([]byte, error) {
	file, err := f.openInRoot(rel, 0)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: file.Name(), Err: unix.EINVAL}
	}
	b, err := io.ReadAll(io.LimitReader(file, maxRootFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxRootFile {
		return nil, &fs.PathError{Op: "read", Path: file.Name(), Err: unix.EFBIG}
	}
	return b, nil
}

// ReadRootDir lists a directory of the root filesystem, resolved inside
// the root as ReadRootFile does.
func (f FS) ReadRootDir(rel string) ([]os.DirEntry, error) {
	dir, err := f.openInRoot(rel, unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return dir.ReadDir(-1)
}
