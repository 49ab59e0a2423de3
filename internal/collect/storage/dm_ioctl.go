package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Device-mapper ioctl ABI, include/uapi/linux/dm-ioctl.h
// (https://github.com/torvalds/linux/blob/master/include/uapi/linux/dm-ioctl.h).
const (
	dmIoctlSize      = 312 // sizeof(struct dm_ioctl)
	dmTargetSpecSize = 40  // sizeof(struct dm_target_spec)
	dmMaxTypeName    = 16  // DM_MAX_TYPE_NAME
	dmVersionMajor   = 4   // only major version 4 exists; the kernel rejects others

	dmStatusTableFlag = 1 << 4  // DM_STATUS_TABLE_FLAG: the table, not the status
	dmBufferFullFlag  = 1 << 8  // DM_BUFFER_FULL_FLAG: output did not fit
	dmSecureDataFlag  = 1 << 15 // DM_SECURE_DATA_FLAG: the kernel wipes its copy

	// _IOWR(0xfd, nr, struct dm_ioctl)
	dmIoctlVersion     = 3<<30 | dmIoctlSize<<16 | 0xfd<<8 // nr 0
	dmIoctlTableStatus = 3<<30 | dmIoctlSize<<16 | 0xfd<<8 | 12

	// Offsets in struct dm_ioctl.
	offVersion     = 0  // __u32 version[3]
	offDataSize    = 12 // __u32 data_size
	offDataStart   = 16 // __u32 data_start
	offTargetCount = 20 // __u32 target_count
	offFlags       = 28 // __u32 flags
	offDev         = 40 // __u64 dev

	dmBufStart = 16 << 10 // first try; doubled on DM_BUFFER_FULL_FLAG
	dmBufMax   = 4 << 20  // a table bigger than this is refused
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
	c := &dmControlFile{f: f}
	buf := make([]byte, dmIoctlSize)
	putHeader(buf, 0, 0)
	if err := c.ioctl(dmIoctlVersion, buf); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: DM_VERSION on %s: %w", ErrDMControl, path, err)
	}
	if v := binary.NativeEndian.Uint32(buf[offVersion:]); v != dmVersionMajor {
		f.Close()
		return nil, fmt.Errorf("%w: %s speaks dm ioctl version %d, slowpath knows %d", ErrDMControl, path, v, dmVersionMajor)
	}
	return c, nil
}

func (c *dmControlFile) Close() error { return c.f.Close() }

func (c *dmControlFile) ioctl(req uintptr, buf []byte) error {
	rc, err := c.f.SyscallConn()
	if err != nil {
		return err
	}
	var errno unix.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall(unix.SYS_IOCTL, fd, req, uintptr(unsafe.Pointer(&buf[0])))
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// TableStatus asks for the active table of the device major:minor,
// growing the buffer while the kernel says it is full.
func (c *dmControlFile) TableStatus(major, minor uint32) ([]byte, error) {
	for size := dmBufStart; size <= dmBufMax; size *= 2 {
		buf := make([]byte, size)
		putHeader(buf, major, minor)
		binary.NativeEndian.PutUint32(buf[offFlags:], dmStatusTableFlag|dmSecureDataFlag)
		if err := c.ioctl(dmIoctlTableStatus, buf); err != nil {
			clear(buf)
			if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
				return nil, fmt.Errorf("DM_TABLE_STATUS %d:%d: %w (run as root: it needs CAP_SYS_ADMIN)", major, minor, err)
			}
			return nil, fmt.Errorf("DM_TABLE_STATUS %d:%d: %w", major, minor, err)
		}
		if binary.NativeEndian.Uint32(buf[offFlags:])&dmBufferFullFlag == 0 {
			return buf, nil
		}
		clear(buf)
	}
	return nil, fmt.Errorf("DM_TABLE_STATUS %d:%d: table larger than %d bytes", major, minor, dmBufMax)
}

// putHeader fills the request fields of struct dm_ioctl. The device is
// named by number (name and uuid left empty), encoded as the kernel's
// huge_decode_dev expects: new_encode_dev in include/linux/kdev_t.h.
func putHeader(buf []byte, major, minor uint32) {
	binary.NativeEndian.PutUint32(buf[offVersion:], dmVersionMajor)
	binary.NativeEndian.PutUint32(buf[offDataSize:], uint32(len(buf)))
	binary.NativeEndian.PutUint32(buf[offDataStart:], dmIoctlSize)
	dev := uint64(minor&0xff) | uint64(major)<<8 | uint64(minor&^0xff)<<12
	binary.NativeEndian.PutUint64(buf[offDev:], dev)
}

// RawTarget is one dm_target_spec from a DM_TABLE_STATUS answer, before
// redaction. Params aliases the ioctl buffer.
type rawTarget struct {
	start, length uint64
	typ           string
	params        []byte
}

// errDMPayload marks a DM_TABLE_STATUS answer that does not follow the
// documented layout.
var errDMPayload = errors.New("malformed DM_TABLE_STATUS payload")

// decodeTableStatus walks a DM_TABLE_STATUS answer: struct dm_ioctl, then
// target_count dm_target_spec records starting at data_start, each
// followed by its NUL-terminated parameter string. For DM_TABLE_STATUS,
// spec->next is the offset of the next spec from the first one
// (drivers/md/dm-ioctl.c retrieve_status). Every offset is bounds-checked.
func decodeTableStatus(buf []byte) ([]rawTarget, error) {
	if len(buf) < dmIoctlSize {
		return nil, fmt.Errorf("%w: %d bytes, shorter than struct dm_ioctl (%d)", errDMPayload, len(buf), dmIoctlSize)
	}
	ne := binary.NativeEndian
	if v := ne.Uint32(buf[offVersion:]); v != dmVersionMajor {
		return nil, fmt.Errorf("%w: ioctl version %d, want %d", errDMPayload, v, dmVersionMajor)
	}
	flags := ne.Uint32(buf[offFlags:])
	if flags&dmBufferFullFlag != 0 {
		return nil, fmt.Errorf("%w: kernel set DM_BUFFER_FULL_FLAG (table truncated)", errDMPayload)
	}
	size := uint64(ne.Uint32(buf[offDataSize:]))
	start := uint64(ne.Uint32(buf[offDataStart:]))
	count := uint64(ne.Uint32(buf[offTargetCount:]))
	if size > uint64(len(buf)) || size < dmIoctlSize {
		return nil, fmt.Errorf("%w: data_size %d outside buffer of %d bytes", errDMPayload, size, len(buf))
	}
	if start < dmIoctlSize || start > size {
		return nil, fmt.Errorf("%w: data_start %d outside [%d, %d]", errDMPayload, start, dmIoctlSize, size)
	}
	if count > (size-start)/dmTargetSpecSize {
		return nil, fmt.Errorf("%w: %d targets cannot fit in %d bytes", errDMPayload, count, size-start)
	}
	data := buf[start:size]
	out := make([]rawTarget, 0, count)
	off := uint64(0)
	for i := uint64(0); i < count; i++ {
		if off+dmTargetSpecSize > uint64(len(data)) {
			return nil, fmt.Errorf("%w: target %d at offset %d overruns the data", errDMPayload, i, off)
		}
		spec := data[off : off+dmTargetSpecSize]
		t := rawTarget{start: ne.Uint64(spec[0:]), length: ne.Uint64(spec[8:])}
		next := uint64(ne.Uint32(spec[20:]))
		typ, err := cString(spec[24 : 24+dmMaxTypeName])
		if err != nil || typ == "" {
			return nil, fmt.Errorf("%w: target %d has no valid type name", errDMPayload, i)
		}
		t.typ = typ
		rest := data[off+dmTargetSpecSize:]
		end := -1
		for j, c := range rest {
			if c == 0 {
				end = j
				break
			}
		}
		if end < 0 {
			return nil, fmt.Errorf("%w: target %d parameters are not NUL-terminated", errDMPayload, i)
		}
		t.params = rest[:end]
		out = append(out, t)
		if i+1 < count {
			// Offsets only move forward, so a hostile payload cannot loop.
			if next <= off || next > uint64(len(data)) {
				return nil, fmt.Errorf("%w: target %d next offset %d does not advance past %d", errDMPayload, i, next, off)
			}
			off = next
		}
	}
	return out, nil
}

// cString returns the NUL-terminated printable string in b.
func cString(b []byte) (string, error) {
	n := 0
	for n < len(b) && b[n] != 0 {
		if b[n] < 0x21 || b[n] > 0x7e {
			return "", fmt.Errorf("non-printable byte %#x", b[n])
		}
		n++
	}
	if n == len(b) {
		return "", errors.New("not NUL-terminated")
	}
	return string(b[:n]), nil
}
