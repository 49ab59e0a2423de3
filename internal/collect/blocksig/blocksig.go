// Package blocksig tells whether a block device holds data worth keeping:
// a filesystem, a partition table, LUKS, LVM, md RAID or swap. Magic
// numbers and offsets are the ones util-linux libblkid probes
// (libblkid/src/superblocks/*.c, libblkid/src/partitions/*.c).
package blocksig

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

type magic struct {
	name   string
	offset int64
	bytes  []byte
}

// ProbeSize is how much of the device Probe reads.
const ProbeSize = 68 * 1024

var magics = []magic{
	{"ext2/3/4 filesystem", 0x438, []byte{0x53, 0xef}}, // s_magic 0xEF53, superblock at 1024 + 0x38
	{"xfs filesystem", 0, []byte("XFSB")},
	{"btrfs filesystem", 0x10040, []byte("_BHRfS_M")},
	{"LUKS header", 0, []byte("LUKS\xba\xbe")},
	{"LVM2 physical volume", 0x218, []byte("LVM2 001")},
	{"iso9660 filesystem", 0x8001, []byte("CD001")},
	{"swap", 4096 - 10, []byte("SWAPSPACE2")},
	{"swap", 4096 - 10, []byte("SWAP-SPACE")},
	{"GPT partition table", 512, []byte("EFI PART")},
	{"vfat filesystem", 0x52, []byte("FAT32   ")},
	{"vfat filesystem", 0x36, []byte("FAT1")},
	{"squashfs filesystem", 0, []byte("hsqs")},
	{"f2fs filesystem", 0x400, []byte{0x10, 0x20, 0xf5, 0xf2}},
}

// mdMagic is the md superblock magic (0xa92b4efc, little-endian), at 0
// (v1.1), 4096 (v1.2); v0.90/v1.0 sit at the end of the device and are
// found through the kernel's holders instead.
const mdMagic = 0xa92b4efc

// Probe returns the first signature found in r, or "" when none is.
func Probe(r io.ReaderAt) (string, error) {
	buf := make([]byte, ProbeSize)
	n, err := r.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	buf = buf[:n]
	for _, m := range magics {
		end := m.offset + int64(len(m.bytes))
		if end <= int64(len(buf)) && bytes.Equal(buf[m.offset:end], m.bytes) {
			return m.name, nil
		}
	}
	for _, off := range []int{0, 4096} {
		if off+4 <= len(buf) && binary.LittleEndian.Uint32(buf[off:]) == mdMagic {
			return "md RAID member", nil
		}
	}
	// An MBR: the boot signature and at least one partition entry with a type.
	if len(buf) >= 512 && buf[510] == 0x55 && buf[511] == 0xaa {
		for i := 0; i < 4; i++ {
			if buf[446+16*i+4] != 0 {
				return "MBR partition table", nil
			}
		}
	}
	return "", nil
}

// ProbeDevice opens path read-only and probes it.
func ProbeDevice(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sig, err := Probe(f)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return sig, nil
}
