package storage

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// fscryptFSTypes are the filesystems that implement
// FS_IOC_GET_ENCRYPTION_POLICY_EX (Documentation/filesystems/fscrypt.rst,
// "Getting an encryption policy"). Others are not asked: opening a mount
// point of a network or FUSE filesystem can block.
var fscryptFSTypes = map[string]bool{"ext4": true, "f2fs": true, "ubifs": true}

// FscryptProber returns the fscrypt policy of a directory. It is an
// interface so tests can answer for fixture mounts.
type FscryptProber interface {
	// Policy returns the policy of dir; the error is unix.ENODATA when dir
	// is not encrypted, and EOPNOTSUPP or ENOTTY when the filesystem
	// cannot have a policy.
	Policy(dir string, wantDev uint64) (*snapshot.Fscrypt, error)
}

// errCovered reports a mount point hidden by a later mount on the same path.
var errCovered = errors.New("mount point is covered by another mount; its root cannot be opened")

// ioctlFscrypt asks the kernel with FS_IOC_GET_ENCRYPTION_POLICY_EX.
type ioctlFscrypt struct{}

// fscryptPolicyArg is struct fscrypt_get_policy_ex_arg
// (include/uapi/linux/fscrypt.h): a size followed by a union of the v1
// policy (12 bytes) and the v2 policy (24 bytes).
type fscryptPolicyArg struct {
	Size   uint64
	Policy [24]byte
}

func (ioctlFscrypt) Policy(dir string, wantDev uint64) (*snapshot.Fscrypt, error) {
	// Only directories and regular files (containers bind-mount single
	// files such as /etc/hosts) are opened: opening a device node or FIFO
	// can have side effects. O_NONBLOCK|O_NOFOLLOW: never wait on or
	// follow what sits at a mount point.
	var lst unix.Stat_t
	if err := unix.Lstat(dir, &lst); err != nil {
		return nil, &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	switch lst.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		flags |= unix.O_DIRECTORY
	case unix.S_IFREG:
	default:
		return nil, &os.PathError{Op: "open", Path: dir, Err: unix.ENOTTY}
	}
	fd, err := unix.Open(dir, flags, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	if st.Dev != wantDev {
		return nil, fmt.Errorf("%s: %w", dir, errCovered)
	}
	arg := fscryptPolicyArg{Size: 24}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.FS_IOC_GET_ENCRYPTION_POLICY_EX, uintptr(unsafe.Pointer(&arg)))
	if errno != 0 {
		return nil, &os.PathError{Op: "FS_IOC_GET_ENCRYPTION_POLICY_EX", Path: dir, Err: errno}
	}
	return decodeFscryptPolicy(arg.Size, arg.Policy[:])
}

// decodeFscryptPolicy reads the version and the two mode bytes, which sit
// at the same offsets in v1 and v2 policies. The key descriptor or
// identifier names a key; it is not key material, but nothing needs it.
func decodeFscryptPolicy(size uint64, p []byte) (*snapshot.Fscrypt, error) {
	if size < 4 || size > uint64(len(p)) {
		return nil, fmt.Errorf("fscrypt policy size %d out of range", size)
	}
	f := &snapshot.Fscrypt{ContentsMode: fscryptModeName(p[1]), FilenamesMode: fscryptModeName(p[2])}
	switch p[0] {
	case unix.FSCRYPT_POLICY_V1:
		f.Version = 1
	case unix.FSCRYPT_POLICY_V2:
		f.Version = 2
	default:
		return nil, fmt.Errorf("unknown fscrypt policy version %d", p[0])
	}
	return f, nil
}

// fscryptModeName names FSCRYPT_MODE_* as fscrypt.rst does.
func fscryptModeName(m byte) string {
	switch m {
	case unix.FSCRYPT_MODE_AES_256_XTS:
		return "AES-256-XTS"
	case unix.FSCRYPT_MODE_AES_256_CTS:
		return "AES-256-CTS"
	case unix.FSCRYPT_MODE_AES_128_CBC:
		return "AES-128-CBC"
	case unix.FSCRYPT_MODE_AES_128_CTS:
		return "AES-128-CTS"
	case unix.FSCRYPT_MODE_SM4_XTS:
		return "SM4-XTS"
	case unix.FSCRYPT_MODE_SM4_CTS:
		return "SM4-CTS"
	case unix.FSCRYPT_MODE_ADIANTUM:
		return "Adiantum"
	case unix.FSCRYPT_MODE_AES_256_HCTR2:
		return "AES-256-HCTR2"
	default:
		return fmt.Sprintf("mode-%d", m)
	}
}

// collectFscrypt fills the fscrypt fields of each mount whose filesystem
// supports it. "Not encrypted" and "unsupported" are answers, not errors.
func collectFscrypt(fs hostfs.FS, p FscryptProber, mounts []snapshot.Mount, s *snapshot.Snapshot) {
	for i := range mounts {
		m := &mounts[i]
		if !fscryptFSTypes[m.FSType] {
			continue
		}
		dev, ok := parseDev(m.MajorMinor)
		if !ok {
			continue
		}
		dir := fs.RootPath(m.MountPoint)
		pol, err := p.Policy(dir, dev)
		switch {
		case err == nil:
			m.Fscrypt, m.FscryptStatus = pol, snapshot.FscryptEncrypted
		case errors.Is(err, unix.ENODATA):
			m.FscryptStatus = snapshot.FscryptNotEncrypted
		case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOTTY):
			// ext4 without the encrypt feature answers EOPNOTSUPP.
			m.FscryptStatus = snapshot.FscryptUnsupported
		default:
			s.AddError("storage.fscrypt", dir, err)
		}
	}
}

// fscryptCandidates counts the mounts collectFscrypt would ask about.
func fscryptCandidates(mounts []snapshot.Mount) int {
	n := 0
	for _, m := range mounts {
		if fscryptFSTypes[m.FSType] {
			n++
		}
	}
	return n
}

// parseDev turns "MAJOR:MINOR" into a dev_t as stat(2) reports it.
func parseDev(mm string) (uint64, bool) {
	var maj, min uint32
	if _, err := fmt.Sscanf(mm, "%d:%d", &maj, &min); err != nil {
		return 0, false
	}
	return unix.Mkdev(maj, min), true
}
