package hostfs

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// maxRootFile bounds ReadRootFile: the configuration files it serves
// (os-release, tuned profiles) are a few KiB.
const maxRootFile = 1 << 20

// maxOpenRetries bounds openBelow's retries of an openat2 that a
// concurrent rename or mount made answer EAGAIN.
const maxOpenRetries = 64

// openBelow opens rel below the directory root with links resolved inside
// it (openat2 RESOLVE_IN_ROOT), as chroot would: on a host whose root is
// mounted at /host, /host/etc/os-release is often a link to
// /usr/lib/os-release, which must mean /host/usr/lib/os-release, never
// slowpath's own. Magic links below root (/proc/self/root) are refused;
// root itself may be one (/proc/PID/root): opening it is ordinary
// resolution, only the walk below it is confined.
func openBelow(root, rel string, flags int) (*os.File, error) {
	full := filepath.Join(root, rel)
	rfd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(rfd)
	name := filepath.Clean("/" + rel)[1:]
	if name == "" {
		name = "."
	}
	how := &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(rfd, name, how)
	// EAGAIN: a rename or mount anywhere on the system raced a ".." of
	// the walk, and the kernel could not show it stayed inside root
	// (openat2(2): the caller may retry). 3% of the walks of a link that
	// climbs with ".." met it beside a loop of renames.
	for try := 0; err == unix.EAGAIN && try < maxOpenRetries; try++ {
		fd, err = unix.Openat2(rfd, name, how)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: full, Err: err}
	}
	return os.NewFile(uintptr(fd), full), nil
}

// ReadRootFile reads a file of the root filesystem, rel being its path
// below the root (etc/os-release), links resolved inside the root and
// only a regular file opened for reading, as ReadFileBelow does for any
// root. Files over 1 MiB are an error.
func (f FS) ReadRootFile(rel string) ([]byte, error) { return ReadFileBelow(f.Root, rel) }

// readBounded reads a regular file whole, at most maxRootFile bytes, and
// closes it.
func readBounded(file *os.File) ([]byte, error) {
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
func (f FS) ReadRootDir(rel string) ([]os.DirEntry, error) { return ReadDirBelow(f.Root, rel) }

// ReadFileBelow reads the file at path p as seen from the directory root
// (another process's root, /proc/PID/root), links resolved inside root, as
// ReadRootFile does for the root filesystem: a container's configuration
// is read from the container, and no link in it leads out. Files over
// 1 MiB are an error wrapping EFBIG; anything but a regular file, EINVAL.
//
// The file is first opened with O_PATH and opened for reading only when
// it is a regular file, through /proc/self/fd (the same inode, no race):
// opening a device has effects of its own (/dev/watchdog arms the
// watchdog), and a configuration file is data someone else wrote.
func ReadFileBelow(root, p string) ([]byte, error) {
	pf, err := openBelow(root, p, unix.O_PATH)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(pf.Fd()), &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: pf.Name(), Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, &fs.PathError{Op: "read", Path: pf.Name(), Err: unix.EINVAL}
	}
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(int(pf.Fd())), unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: pf.Name(), Err: err}
	}
	return readBounded(os.NewFile(uintptr(fd), pf.Name()))
}

// ReadDirBelow lists the directory p below root, resolved as ReadFileBelow.
func ReadDirBelow(root, p string) ([]os.DirEntry, error) {
	dir, err := openBelow(root, p, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return dir.ReadDir(-1)
}

// StatBelow stats p below root, resolved as ReadFileBelow, without opening
// it for reading (O_PATH): a data directory's filesystem is its st_dev.
func StatBelow(root, p string) (*unix.Stat_t, error) {
	file, err := openBelow(root, p, unix.O_PATH)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(file.Fd()), &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: file.Name(), Err: err}
	}
	return &st, nil
}
