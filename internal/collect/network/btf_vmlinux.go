package network

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// BTF header, include/uapi/linux/btf.h (struct btf_header) and
// Documentation/bpf/btf.rst ("2. BTF Type and String Encoding"): magic
// 0xeB9F, version, flags, hdr_len, then type_off/type_len and
// str_off/str_len, offsets counted from the end of the header. The string
// section is NUL-separated names and starts with the empty string.
const (
	btfMagic      = 0xeB9F
	btfHeaderSize = 24
	// btfChunk is one read. sysfs hands a binary attribute out one page
	// per read(2) (kernfs_file_read_iter caps at PAGE_SIZE), so the
	// chunk size bounds only the allocation, not the syscall count.
	btfChunk = 64 << 10
)

var errBTFHeader = errors.New("not a BTF blob")

// btfHasName reports whether the string section of the BTF blob at path
// holds name. Only the header and the string section up to the first
// match are read: on a kernel with drop reasons skb_drop_reason sits in
// the first fraction of the strings (316 KiB into 2.3 MiB on 6.18), and
// the 3 MiB of type records are never read. A name of a type or member
// is in the string section whenever a type uses it.
func btfHasName(path, name string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var h [btfHeaderSize]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return false, fmt.Errorf("%s: %w: header: %w", path, errBTFHeader, err)
	}
	var bo binary.ByteOrder = binary.LittleEndian
	switch {
	case binary.LittleEndian.Uint16(h[0:]) == btfMagic:
	case binary.BigEndian.Uint16(h[0:]) == btfMagic:
		bo = binary.BigEndian
	default:
		return false, fmt.Errorf("%s: %w: magic %#04x", path, errBTFHeader, binary.LittleEndian.Uint16(h[0:]))
	}
	hdrLen := int64(bo.Uint32(h[4:]))
	strOff, strLen := int64(bo.Uint32(h[16:])), int64(bo.Uint32(h[20:]))
	if hdrLen < btfHeaderSize {
		return false, fmt.Errorf("%s: %w: hdr_len %d", path, errBTFHeader, hdrLen)
	}
	needle := []byte("\x00" + name + "\x00")
	sec := io.NewSectionReader(f, hdrLen+strOff, strLen)
	buf := make([]byte, btfChunk)
	keep := 0 // bytes carried over, so a name across two chunks is found
	var total int64
	for {
		n, err := io.ReadFull(sec, buf[keep:])
		total += int64(n)
		if bytes.Contains(buf[:keep+n], needle) {
			return true, nil
		}
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			if total < strLen {
				return false, fmt.Errorf("%s: %w: string section cut short (%d of %d bytes)", path, errBTFHeader, total, strLen)
			}
			return false, nil
		case err != nil:
			return false, fmt.Errorf("read %s: %w", path, err)
		}
		// Keep the tail that could start a match; it is shorter than needle.
		keep = copy(buf, buf[keep+n-(len(needle)-1):keep+n])
	}
}
