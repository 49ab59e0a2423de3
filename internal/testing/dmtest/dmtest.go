// Package dmtest builds recorded device-mapper ioctl answers and synthetic
// sysfs/procfs trees for tests and benchmarks of the storage collector
// and of the ABI decoder in internal/dmioctl.
// It is written independently of the decoder it feeds, from the documented
// layout, so a misreading of the ABI in one does not hide in the other.
package dmtest

import (
	"encoding/binary"
	"fmt"
	"os"
)

// Layout of include/uapi/linux/dm-ioctl.h.
const (
	ioctlSize      = 312 // sizeof(struct dm_ioctl)
	targetSpecSize = 40  // sizeof(struct dm_target_spec)
	maxTypeName    = 16

	flagStatusTable   = 1 << 4
	flagActivePresent = 1 << 5
	flagSecureData    = 1 << 15
)

// Target is one table line: start and length in 512-byte sectors.
type Target struct {
	Start, Length uint64
	Type, Params  string
}

// EncodeTableStatus lays targets out as the kernel answers DM_TABLE_STATUS
// with DM_STATUS_TABLE_FLAG (drivers/md/dm-ioctl.c retrieve_status):
// struct dm_ioctl, then per target a dm_target_spec and its NUL-terminated
// parameters padded to 8 bytes; spec.next is the offset of the following
// spec from the first spec.
func EncodeTableStatus(targets []Target) []byte {
	ne := binary.NativeEndian
	var data []byte
	for i, t := range targets {
		spec := make([]byte, targetSpecSize)
		ne.PutUint64(spec[0:], t.Start)
		ne.PutUint64(spec[8:], t.Length)
		copy(spec[24:24+maxTypeName-1], t.Type)
		body := append(spec, t.Params...)
		body = append(body, 0)
		for len(body)%8 != 0 {
			body = append(body, 0)
		}
		if i+1 < len(targets) {
			ne.PutUint32(body[20:], uint32(len(data)+len(body)))
		}
		data = append(data, body...)
	}
	buf := make([]byte, ioctlSize, ioctlSize+len(data))
	buf = append(buf, data...)
	ne.PutUint32(buf[0:], 4)  // version major
	ne.PutUint32(buf[4:], 48) // version minor as on 6.x kernels
	ne.PutUint32(buf[12:], uint32(len(buf)))
	ne.PutUint32(buf[16:], ioctlSize)
	ne.PutUint32(buf[20:], uint32(len(targets)))
	ne.PutUint32(buf[28:], flagStatusTable|flagActivePresent|flagSecureData)
	return buf
}

// Control answers DM_TABLE_STATUS from recorded payloads keyed by
// "major:minor", like storage.DMControl. It keeps every buffer it hands
// out so tests can check the collector zeroed them.
type Control struct {
	Payloads map[string][]byte
	Handed   [][]byte
	Closed   bool
}

// TableStatus returns a copy of the recorded payload for major:minor.
func (c *Control) TableStatus(major, minor uint32) ([]byte, error) {
	p, ok := c.Payloads[fmt.Sprintf("%d:%d", major, minor)]
	if !ok {
		return nil, fmt.Errorf("DM_TABLE_STATUS %d:%d: %w", major, minor, os.ErrNotExist)
	}
	b := append([]byte(nil), p...)
	c.Handed = append(c.Handed, b)
	return b, nil
}

// Close marks the control closed.
func (c *Control) Close() error { c.Closed = true; return nil }

// AllZero reports whether every handed-out buffer was zeroed.
func (c *Control) AllZero() bool {
	for _, b := range c.Handed {
		for _, x := range b {
			if x != 0 {
				return false
			}
		}
	}
	return true
}

// T is shorthand for a Target.
func T(start, length uint64, typ, params string) Target {
	return Target{Start: start, Length: length, Type: typ, Params: params}
}
