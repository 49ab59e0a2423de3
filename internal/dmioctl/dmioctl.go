// Package dmioctl holds the device-mapper ioctl ABI: the layout of struct
// dm_ioctl and struct dm_target_spec, the command numbers and flags, and
// the encoding of requests and decoding of the kernel's answers. It holds
// no policy: the storage collector reads tables with it, the fix appliers
// load them.
//
// Source: include/uapi/linux/dm-ioctl.h
// (https://github.com/torvalds/linux/blob/master/include/uapi/linux/dm-ioctl.h)
// and drivers/md/dm-ioctl.c.
package dmioctl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Sizes and versions from dm-ioctl.h.
const (
	HeaderSize     = 312 // sizeof(struct dm_ioctl)
	TargetSpecSize = 40  // sizeof(struct dm_target_spec)
	NameLen        = 128 // DM_NAME_LEN, NUL included
	MaxTypeName    = 16  // DM_MAX_TYPE_NAME, NUL included
	// VersionMajor is DM_VERSION_MAJOR: only major version 4 exists and
	// the kernel rejects requests that carry another.
	VersionMajor = 4
)

// dm_ioctl.flags bits (dm-ioctl.h).
const (
	ReadonlyFlag    = 1 << 0  // DM_READONLY_FLAG
	StatusTableFlag = 1 << 4  // DM_STATUS_TABLE_FLAG: the table, not the status
	BufferFullFlag  = 1 << 8  // DM_BUFFER_FULL_FLAG: the answer did not fit
	SecureDataFlag  = 1 << 15 // DM_SECURE_DATA_FLAG: the kernel wipes its copy of the buffer
)

// Request numbers: _IOWR(DM_IOCTL=0xfd, nr, struct dm_ioctl), as
// asm-generic/ioctl.h lays them out (dir 3 in bits 30-31, size in 16-29).
const (
	cmdBase        = 3<<30 | HeaderSize<<16 | 0xfd<<8
	CmdVersion     = cmdBase      // DM_VERSION (nr 0)
	CmdDevSuspend  = cmdBase | 6  // DM_DEV_SUSPEND: suspend, or resume without DM_SUSPEND_FLAG
	CmdTableLoad   = cmdBase | 9  // DM_TABLE_LOAD
	CmdTableClear  = cmdBase | 10 // DM_TABLE_CLEAR
	CmdTableStatus = cmdBase | 12 // DM_TABLE_STATUS
)

// Offsets in struct dm_ioctl.
const (
	offVersion     = 0  // __u32 version[3]
	offDataSize    = 12 // __u32 data_size
	offDataStart   = 16 // __u32 data_start
	offTargetCount = 20 // __u32 target_count
	offFlags       = 28 // __u32 flags
	offDev         = 40 // __u64 dev
	offName        = 48 // char name[DM_NAME_LEN]
)

// Offsets in struct dm_target_spec.
const (
	offSpecStart  = 0  // __u64 sector_start
	offSpecLength = 8  // __u64 length
	offSpecNext   = 20 // __u32 next
	offSpecType   = 24 // char target_type[DM_MAX_TYPE_NAME]
)

// Request names the device of an ioctl and its input flags. A device is
// named by Name, or by Major:Minor when Name is empty.
type Request struct {
	Name         string
	Major, Minor uint32
	Flags        uint32
}

// PutHeader fills the request fields of the struct dm_ioctl at the start
// of buf: version, data_size (all of buf), data_start (right after the
// header), flags and the device. The device number is encoded as the
// kernel's huge_decode_dev expects (new_encode_dev, include/linux/kdev_t.h).
func PutHeader(buf []byte, r Request) error {
	if len(buf) < HeaderSize {
		return fmt.Errorf("dm ioctl buffer of %d bytes, shorter than struct dm_ioctl (%d)", len(buf), HeaderSize)
	}
	if len(r.Name) >= NameLen {
		return fmt.Errorf("dm name %q: longer than %d bytes", r.Name, NameLen-1)
	}
	ne := binary.NativeEndian
	ne.PutUint32(buf[offVersion:], VersionMajor)
	ne.PutUint32(buf[offDataSize:], uint32(len(buf)))
	ne.PutUint32(buf[offDataStart:], HeaderSize)
	ne.PutUint32(buf[offFlags:], r.Flags)
	dev := uint64(r.Minor&0xff) | uint64(r.Major)<<8 | uint64(r.Minor&^0xff)<<12
	ne.PutUint64(buf[offDev:], dev)
	copy(buf[offName:offName+NameLen], r.Name)
	return nil
}

// ReplyVersion returns version[0] (the major) of an answer.
func ReplyVersion(buf []byte) uint32 { return binary.NativeEndian.Uint32(buf[offVersion:]) }

// ReplyFlags returns the flags of an answer.
func ReplyFlags(buf []byte) uint32 { return binary.NativeEndian.Uint32(buf[offFlags:]) }

// Target is one dm_target_spec and its parameter string. In a decoded
// answer Params aliases the ioctl buffer.
type Target struct {
	Start, Length uint64 // 512-byte sectors
	Type          string
	Params        []byte
}

// ErrPayload marks a DM_TABLE_STATUS answer that does not follow the
// documented layout.
var ErrPayload = errors.New("malformed DM_TABLE_STATUS payload")

// DecodeTableStatus walks a DM_TABLE_STATUS answer: struct dm_ioctl, then
// target_count dm_target_spec records starting at data_start, each
// followed by its NUL-terminated parameter string. For DM_TABLE_STATUS,
// spec->next is the offset of the next spec from the first one (dm-ioctl.h
// on struct dm_target_spec; drivers/md/dm-ioctl.c retrieve_status). Every
// offset is bounds-checked.
func DecodeTableStatus(buf []byte) ([]Target, error) {
	if len(buf) < HeaderSize {
		return nil, fmt.Errorf("%w: %d bytes, shorter than struct dm_ioctl (%d)", ErrPayload, len(buf), HeaderSize)
	}
	ne := binary.NativeEndian
	if v := ReplyVersion(buf); v != VersionMajor {
		return nil, fmt.Errorf("%w: ioctl version %d, want %d", ErrPayload, v, VersionMajor)
	}
	if ReplyFlags(buf)&BufferFullFlag != 0 {
		return nil, fmt.Errorf("%w: kernel set DM_BUFFER_FULL_FLAG (table truncated)", ErrPayload)
	}
	size := uint64(ne.Uint32(buf[offDataSize:]))
	start := uint64(ne.Uint32(buf[offDataStart:]))
	count := uint64(ne.Uint32(buf[offTargetCount:]))
	if size > uint64(len(buf)) || size < HeaderSize {
		return nil, fmt.Errorf("%w: data_size %d outside buffer of %d bytes", ErrPayload, size, len(buf))
	}
	if start < HeaderSize || start > size {
		return nil, fmt.Errorf("%w: data_start %d outside [%d, %d]", ErrPayload, start, HeaderSize, size)
	}
	if count > (size-start)/TargetSpecSize {
		return nil, fmt.Errorf("%w: %d targets cannot fit in %d bytes", ErrPayload, count, size-start)
	}
	data := buf[start:size]
	out := make([]Target, 0, count)
	off := uint64(0)
	for i := uint64(0); i < count; i++ {
		if off+TargetSpecSize > uint64(len(data)) {
			return nil, fmt.Errorf("%w: target %d at offset %d overruns the data", ErrPayload, i, off)
		}
		spec := data[off : off+TargetSpecSize]
		t := Target{Start: ne.Uint64(spec[offSpecStart:]), Length: ne.Uint64(spec[offSpecLength:])}
		next := uint64(ne.Uint32(spec[offSpecNext:]))
		typ, err := cString(spec[offSpecType : offSpecType+MaxTypeName])
		if err != nil || typ == "" {
			return nil, fmt.Errorf("%w: target %d has no valid type name", ErrPayload, i)
		}
		t.Type = typ
		rest := data[off+TargetSpecSize:]
		end := -1
		for j, c := range rest {
			if c == 0 {
				end = j
				break
			}
		}
		if end < 0 {
			return nil, fmt.Errorf("%w: target %d parameters are not NUL-terminated", ErrPayload, i)
		}
		t.Params = rest[:end]
		out = append(out, t)
		if i+1 < count {
			// Offsets only move forward, so a hostile payload cannot loop.
			if next <= off || next > uint64(len(data)) {
				return nil, fmt.Errorf("%w: target %d next offset %d does not advance past %d", ErrPayload, i, next, off)
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

// EncodeTableLoad returns a DM_TABLE_LOAD request for r carrying targets:
// struct dm_ioctl, then per target a dm_target_spec and its NUL-terminated
// parameters padded to 8 bytes. For DM_TABLE_LOAD, spec->next is the
// offset of the next spec from the current one (dm-ioctl.h on struct
// dm_target_spec; drivers/md/dm-ioctl.c populate_table). The buffer holds
// the parameters (for crypt, the key): the caller wipes it.
func EncodeTableLoad(r Request, targets []Target) ([]byte, error) {
	size := HeaderSize
	for i, t := range targets {
		if t.Type == "" || len(t.Type) >= MaxTypeName {
			return nil, fmt.Errorf("target %d: type %q: want 1 to %d bytes", i, t.Type, MaxTypeName-1)
		}
		for _, c := range t.Params {
			if c == 0 {
				return nil, fmt.Errorf("target %d: parameters hold a NUL byte", i)
			}
		}
		size += specLen(t)
	}
	buf := make([]byte, size)
	if err := PutHeader(buf, r); err != nil {
		return nil, err
	}
	ne := binary.NativeEndian
	ne.PutUint32(buf[offTargetCount:], uint32(len(targets)))
	off := HeaderSize
	for _, t := range targets {
		n := specLen(t)
		spec := buf[off : off+n]
		ne.PutUint64(spec[offSpecStart:], t.Start)
		ne.PutUint64(spec[offSpecLength:], t.Length)
		ne.PutUint32(spec[offSpecNext:], uint32(n))
		copy(spec[offSpecType:offSpecType+MaxTypeName], t.Type)
		copy(spec[TargetSpecSize:], t.Params)
		off += n
	}
	return buf, nil
}

// specLen is the size of t's spec, parameters and NUL, rounded up to 8 bytes.
func specLen(t Target) int { return (TargetSpecSize + len(t.Params) + 1 + 7) &^ 7 }

// Ioctl issues the device-mapper request cmd on the control node f with
// buf as struct dm_ioctl and its data; the kernel writes its answer back
// into buf.
func Ioctl(f *os.File, cmd uintptr, buf []byte) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno unix.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall(unix.SYS_IOCTL, fd, cmd, uintptr(unsafe.Pointer(&buf[0])))
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// Buffer sizes for DM_TABLE_STATUS: the first try, doubled while the
// kernel sets DM_BUFFER_FULL_FLAG, up to a limit past which the table is
// refused.
const (
	statusBufStart = 16 << 10
	statusBufMax   = 4 << 20
)

// TableStatus issues DM_TABLE_STATUS for r on the control node f, growing
// the buffer while the kernel says it is full, and returns the whole
// answer for DecodeTableStatus. r.Flags are sent as they are: a caller
// reading tables sets StatusTableFlag, and SecureDataFlag when a table may
// hold a key. Buffers that are not returned are zeroed; the caller zeroes
// the one returned.
func TableStatus(f *os.File, r Request) ([]byte, error) {
	for size := statusBufStart; size <= statusBufMax; size *= 2 {
		buf := make([]byte, size)
		if err := PutHeader(buf, r); err != nil {
			return nil, err
		}
		if err := Ioctl(f, CmdTableStatus, buf); err != nil {
			clear(buf)
			return nil, err
		}
		if ReplyFlags(buf)&BufferFullFlag == 0 {
			return buf, nil
		}
		clear(buf)
	}
	return nil, fmt.Errorf("table larger than %d bytes", statusBufMax)
}
