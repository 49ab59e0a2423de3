package vm

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// cpioEntry is one member of an initramfs archive.
type cpioEntry struct {
	Mode uint32 // type and permission bits, e.g. cpioDir|0o755
	Data []byte // file content, or the target of a symlink
}

// File type bits of the newc header (see cpio(5) / include/linux/stat.h).
const (
	cpioDir     = 0o040000
	cpioFile    = 0o100000
	cpioSymlink = 0o120000
)

// writeCPIO writes entries in the "newc" format the kernel unpacks
// (Documentation/driver-api/early-userspace/buffer-format.rst). Parent
// directories come before their children because names sort that way.
// Archives written like this can be concatenated: the kernel unpacks each in
// turn, later members replacing earlier ones.
func writeCPIO(w io.Writer, entries map[string]cpioEntry) error {
	names := make([]string, 0, len(entries))
	for n := range entries {
		if strings.HasPrefix(n, "/") || n == "" {
			return fmt.Errorf("cpio: name %q must be relative", n)
		}
		names = append(names, n)
	}
	sort.Strings(names)
	ino := uint32(1)
	for _, n := range names {
		e := entries[n]
		if err := writeCPIOMember(w, ino, n, e.Mode, e.Data); err != nil {
			return err
		}
		ino++
	}
	return writeCPIOMember(w, 0, "TRAILER!!!", 0, nil)
}

func writeCPIOMember(w io.Writer, ino uint32, name string, mode uint32, data []byte) error {
	nlink := 1
	if mode&0o170000 == cpioDir {
		nlink = 2
	}
	// magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor, devminor,
	// rdevmajor, rdevminor, namesize, check
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
	buf := make([]byte, 0, len(hdr)+len(name)+8)
	buf = append(buf, hdr...)
	buf = append(buf, name...)
	buf = append(buf, 0)
	buf = pad4(buf)
	if _, err := w.Write(buf); err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	_, err := w.Write(make([]byte, (4-len(data)%4)%4))
	return err
}

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}
