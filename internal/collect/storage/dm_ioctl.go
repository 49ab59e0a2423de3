package storage

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/dmioctl"
)

// DMControl returns raw DM_TABLE_STATUS answers. The live implementation
// issues the ioctl on /dev/mapper/control; tests return recorded payloads.
// The caller decodes the buffer and then zeroes it, because a crypt
// target's table holds its key.
type DMControl interface {
	TableStatus(major, minor uint32) ([]byte, error)
	Close() error
}

// ErrDMControl wraps failures to reach the device-mapper control node.
var ErrDMControl = errors.New("device-mapper control node unavailable")

// dmControlFile is /dev/mapper/control.
type dmControlFile struct {
	f *os.File
}

// OpenDMControl opens the control node at path and checks the ioctl
// interface version. A missing node (kernel without dm-mod, or /dev not
// populated) is an error that hostfs.Classify calls "missing".
func OpenDMControl(path string) (DMControl, error) {
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: open %s (load dm-mod (modprobe dm-mod), or run as root: device-mapper ioctls need CAP_SYS_ADMIN): %w", ErrDMControl, path, err)
	}
	buf := make([]byte, dmioctl.HeaderSize)
	if err := dmioctl.PutHeader(buf, dmioctl.Request{}); err != nil {
		f.Close()
		return nil, err
	}
	if err := dmioctl.Ioctl(f, dmioctl.CmdVersion, buf); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: DM_VERSION on %s: %w", ErrDMControl, path, err)
	}
	if v := dmioctl.ReplyVersion(buf); v != dmioctl.VersionMajor {
		f.Close()
		return nil, fmt.Errorf("%w: %s speaks dm ioctl version %d, slowpath knows %d", ErrDMControl, path, v, dmioctl.VersionMajor)
	}
	return &dmControlFile{f: f}, nil
}

func (c *dmControlFile) Close() error { return c.f.Close() }

// TableStatus asks for the active table of the device major:minor. The
// kernel wipes its copy (DM_SECURE_DATA_FLAG) because a crypt table holds
// the key.
func (c *dmControlFile) TableStatus(major, minor uint32) ([]byte, error) {
	buf, err := dmioctl.TableStatus(c.f, dmioctl.Request{Major: major, Minor: minor, Flags: dmioctl.StatusTableFlag | dmioctl.SecureDataFlag})
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return nil, fmt.Errorf("DM_TABLE_STATUS %d:%d: %w (run as root: it needs CAP_SYS_ADMIN)", major, minor, err)
	}
	if err != nil {
		return nil, fmt.Errorf("DM_TABLE_STATUS %d:%d: %w", major, minor, err)
	}
	return buf, nil
}
