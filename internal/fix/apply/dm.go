package apply

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Device-mapper ioctl ABI, include/uapi/linux/dm-ioctl.h
// (https://github.com/torvalds/linux/blob/master/include/uapi/linux/dm-ioctl.h).
// The collector (internal/collect/storage) reads tables with the same
// ioctls; this side also loads them, so it lives with the appliers.
const (
	dmIoctlSize      = 312 // sizeof(struct dm_ioctl)
	dmTargetSpecSize = 40  // sizeof(struct dm_target_spec)
	dmNameLen        = 128 // DM_NAME_LEN
	dmVersionMajor   = 4

	dmReadonlyFlag    = 1 << 0  // DM_READONLY_FLAG
	dmStatusTableFlag = 1 << 4  // DM_STATUS_TABLE_FLAG
	dmBufferFullFlag  = 1 << 8  // DM_BUFFER_FULL_FLAG
	dmSecureDataFlag  = 1 << 15 // DM_SECURE_DATA_FLAG: the kernel wipes its copy of the buffer

	dmIoctlVersion     = 3<<30 | dmIoctlSize<<16 | 0xfd<<8 // _IOWR(0xfd, 0, struct dm_ioctl)
	dmIoctlDevSuspend  = dmIoctlVersion | 6
	dmIoctlTableLoad   = dmIoctlVersion | 9
	dmIoctlTableClear  = dmIoctlVersion | 10
	dmIoctlTableStatus = dmIoctlVersion | 12

	offDataSize    = 12
	offDataStart   = 16
	offTargetCount = 20
	offFlags       = 28
	offName        = 48
)

// DMTables reads and replaces the parameters of single-target
// device-mapper tables by device name.
type DMTables interface {
	// Params returns the target type and parameters of name's only target.
	// The parameters of a crypt target hold its key: the caller wipes them.
	Params(name string) (typ string, params []byte, err error)
	// Replace loads params as name's table (same type, start and length)
	// and makes it live.
	Replace(name string, params []byte) error
}

// LiveDM is DMTables over /dev/mapper/control.
type LiveDM struct{ Path string }

func (d LiveDM) open() (*os.File, error) {
	p := d.Path
	if p == "" {
		p = "/dev/mapper/control"
	}
	f, err := os.OpenFile(p, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s (load dm-mod, run as root: device-mapper ioctls need CAP_SYS_ADMIN): %w", p, err)
	}
	return f, nil
}

func dmIoctl(f *os.File, req uintptr, buf []byte) error {
	rc, err := f.SyscallConn()
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

func putHeader(buf []byte, name string, flags uint32) error {
	if len(name) == 0 || len(name) >= dmNameLen {
		return fmt.Errorf("dm name %q: want 1 to %d bytes", name, dmNameLen-1)
	}
	ne := binary.NativeEndian
	ne.PutUint32(buf[0:], dmVersionMajor)
	ne.PutUint32(buf[offDataSize:], uint32(len(buf)))
	ne.PutUint32(buf[offDataStart:], dmIoctlSize)
	ne.PutUint32(buf[offFlags:], flags)
	copy(buf[offName:offName+dmNameLen], name)
	return nil
}

type dmTarget struct {
	start, length uint64
	typ           string
	params        []byte
}

// table reads name's live table: its targets and whether the device is read-only.
func table(f *os.File, name string) ([]dmTarget, bool, []byte, error) {
	for size := 16 << 10; size <= 4<<20; size *= 2 {
		buf := make([]byte, size)
		if err := putHeader(buf, name, dmStatusTableFlag|dmSecureDataFlag); err != nil {
			return nil, false, nil, err
		}
		if err := dmIoctl(f, dmIoctlTableStatus, buf); err != nil {
			return nil, false, nil, fmt.Errorf("DM_TABLE_STATUS %s: %w", name, err)
		}
		ne := binary.NativeEndian
		flags := ne.Uint32(buf[offFlags:])
		if flags&dmBufferFullFlag != 0 {
			clear(buf)
			continue
		}
		start, end := uint64(ne.Uint32(buf[offDataStart:])), uint64(ne.Uint32(buf[offDataSize:]))
		count := ne.Uint32(buf[offTargetCount:])
		if end > uint64(len(buf)) || start < dmIoctlSize || start > end {
			clear(buf)
			return nil, false, nil, fmt.Errorf("DM_TABLE_STATUS %s: malformed answer", name)
		}
		data := buf[start:end]
		var ts []dmTarget
		off := uint64(0)
		for i := uint32(0); i < count; i++ {
			if off+dmTargetSpecSize > uint64(len(data)) {
				clear(buf)
				return nil, false, nil, fmt.Errorf("DM_TABLE_STATUS %s: target %d overruns the answer", name, i)
			}
			spec := data[off : off+dmTargetSpecSize]
			t := dmTarget{start: ne.Uint64(spec[0:]), length: ne.Uint64(spec[8:]), typ: string(bytes.TrimRight(spec[24:40], "\x00"))}
			rest := data[off+dmTargetSpecSize:]
			n := bytes.IndexByte(rest, 0)
			if n < 0 {
				clear(buf)
				return nil, false, nil, fmt.Errorf("DM_TABLE_STATUS %s: target %d not NUL-terminated", name, i)
			}
			t.params = rest[:n]
			ts = append(ts, t)
			next := uint64(ne.Uint32(spec[20:]))
			if i+1 < count && (next <= off || next > uint64(len(data))) {
				clear(buf)
				return nil, false, nil, fmt.Errorf("DM_TABLE_STATUS %s: bad next offset", name)
			}
			off = next
		}
		return ts, flags&dmReadonlyFlag != 0, buf, nil
	}
	return nil, false, nil, fmt.Errorf("DM_TABLE_STATUS %s: table larger than 4 MiB", name)
}

// Params implements DMTables.
func (d LiveDM) Params(name string) (string, []byte, error) {
	f, err := d.open()
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	ts, _, buf, err := table(f, name)
	if err != nil {
		return "", nil, err
	}
	defer clear(buf)
	if len(ts) != 1 {
		return "", nil, fmt.Errorf("%s has %d targets; slowpath changes single-target tables only", name, len(ts))
	}
	return ts[0].typ, slices.Clone(ts[0].params), nil
}

// Replace implements DMTables: DM_TABLE_LOAD into the inactive slot, then
// DM_DEV_SUSPEND without DM_SUSPEND_FLAG, which suspends the device,
// swaps the tables and resumes (drivers/md/dm-ioctl.c do_resume), as
// `dmsetup reload` + `dmsetup resume` do. A table the kernel refuses
// leaves the live one untouched; a failed swap clears the inactive one.
func (d LiveDM) Replace(name string, params []byte) error {
	f, err := d.open()
	if err != nil {
		return err
	}
	defer f.Close()
	ts, ro, old, err := table(f, name)
	if err != nil {
		return err
	}
	defer clear(old)
	if len(ts) != 1 {
		return fmt.Errorf("%s has %d targets; slowpath changes single-target tables only", name, len(ts))
	}
	t := ts[0]
	specLen := (dmTargetSpecSize + len(params) + 1 + 7) &^ 7
	buf := make([]byte, dmIoctlSize+specLen)
	defer clear(buf)
	flags := uint32(dmSecureDataFlag)
	if ro {
		flags |= dmReadonlyFlag
	}
	if err := putHeader(buf, name, flags); err != nil {
		return err
	}
	ne := binary.NativeEndian
	ne.PutUint32(buf[offTargetCount:], 1)
	spec := buf[dmIoctlSize:]
	ne.PutUint64(spec[0:], t.start)
	ne.PutUint64(spec[8:], t.length)
	ne.PutUint32(spec[20:], uint32(specLen))
	copy(spec[24:40], t.typ)
	copy(spec[dmTargetSpecSize:], params)
	if err := dmIoctl(f, dmIoctlTableLoad, buf); err != nil {
		return fmt.Errorf("DM_TABLE_LOAD %s: the kernel refused the table: %w", name, err)
	}
	res := make([]byte, dmIoctlSize)
	if err := putHeader(res, name, 0); err != nil {
		return err
	}
	if err := dmIoctl(f, dmIoctlDevSuspend, res); err != nil {
		clr := make([]byte, dmIoctlSize)
		_ = putHeader(clr, name, 0)
		_ = dmIoctl(f, dmIoctlTableClear, clr)
		return fmt.Errorf("DM_DEV_SUSPEND (resume) %s: %w", name, err)
	}
	return nil
}

// errCryptTable marks crypt parameters that do not follow the documented
// format: <cipher> <key> <iv_offset> <device> <offset> [<#opt> <opt>...]
// (Documentation/admin-guide/device-mapper/dm-crypt.rst).
var errCryptTable = errors.New("malformed crypt table")

// cryptOptions returns the optional parameters of crypt params.
func cryptOptions(params []byte) ([]string, error) {
	f := bytes.Fields(params)
	if len(f) < 5 {
		return nil, fmt.Errorf("%w: %d fields", errCryptTable, len(f))
	}
	if len(f) == 5 {
		return nil, nil
	}
	n, err := strconv.Atoi(string(f[5]))
	if err != nil || n != len(f)-6 {
		return nil, fmt.Errorf("%w: optional parameter count %q for %d parameters", errCryptTable, f[5], len(f)-6)
	}
	if n == 0 {
		return nil, nil
	}
	out := make([]string, n)
	for i := range n {
		out[i] = string(f[6+i])
	}
	return out, nil
}

// withCryptOptions returns params with its optional parameters replaced
// by opts. The key field is copied, never turned into a string.
func withCryptOptions(params []byte, opts []string) ([]byte, error) {
	f := bytes.Fields(params)
	if len(f) < 5 {
		return nil, fmt.Errorf("%w: %d fields", errCryptTable, len(f))
	}
	out := bytes.Join(f[:5], []byte(" "))
	if len(opts) > 0 {
		out = append(out, ' ')
		out = strconv.AppendInt(out, int64(len(opts)), 10)
		for _, o := range opts {
			out = append(out, ' ')
			out = append(out, o...)
		}
	}
	return out, nil
}
