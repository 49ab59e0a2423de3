package capfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// OpKind is what a file-level record recorded.
type OpKind uint8

// File-level operations. The numbers are part of the format.
const (
	OpRead          OpKind = 1  // read, pread64, readv, preadv (Flags tell which)
	OpWrite         OpKind = 2  // write, pwrite64, writev, pwritev
	OpFsync         OpKind = 3  // fsync
	OpFdatasync     OpKind = 4  // fdatasync
	OpSyncFileRange OpKind = 5  // sync_file_range: Offset, Length, Arg = its flags
	OpFadvise       OpKind = 6  // fadvise64: Offset, Length (0: to the end), Arg = advice
	OpMadvise       OpKind = 7  // madvise on a mapped file: file Offset and Length of the range, Arg = advice
	OpMmap          OpKind = 8  // mmap of a file: Offset, Length, Arg = prot, FlagShared
	OpOpen          OpKind = 9  // openat: Flags carry O_DIRECT/O_SYNC/O_DSYNC/O_APPEND; Result 0 or -errno
	OpFault         OpKind = 10 // page-cache miss of a mapped file: Offset of the page, Length its size
	opKindMax              = OpFault
)

var opNames = [...]string{"", "read", "write", "fsync", "fdatasync", "sync_file_range", "fadvise", "madvise", "mmap", "open", "fault"}

func (k OpKind) String() string {
	if k == 0 || k > opKindMax {
		return fmt.Sprintf("op(%d)", uint8(k))
	}
	return opNames[k]
}

// Flags of a file-level record. The bits are part of the format.
const (
	FlagDirect     uint32 = 1 << 0 // the file was open with O_DIRECT
	FlagSync       uint32 = 1 << 1 // O_SYNC
	FlagDsync      uint32 = 1 << 2 // O_DSYNC
	FlagAppend     uint32 = 1 << 3 // O_APPEND
	FlagVectored   uint32 = 1 << 4 // readv/writev/preadv/pwritev
	FlagPositional uint32 = 1 << 5 // pread64/pwrite64/preadv/pwritev: Offset is the call's; else the file position at entry
	FlagShared     uint32 = 1 << 6 // mmap with MAP_SHARED
	FlagMajor      uint32 = 1 << 7 // a fault that had to read the page (a page-cache miss)
	// Asynchronous submission (read, write, fsync, fdatasync,
	// sync_file_range): Start is the submission, End the completion
	// (io_uring) or the io_getevents that reaped it (Linux AIO); the thread
	// is the submitter (an SQPOLL ring's kernel thread, a thread of the
	// same process). Readers before these bits refuse such records.
	FlagAIO       uint32 = 1 << 8  // Linux AIO (io_submit)
	FlagURing     uint32 = 1 << 9  // io_uring
	FlagLinked    uint32 = 1 << 10 // io_uring IOSQE_IO_LINK or IOSQE_IO_HARDLINK: the next request of the ring waits for this one
	FlagFixedFile uint32 = 1 << 11 // io_uring registered file (resolved to the file)
	FlagFixedBuf  uint32 = 1 << 12 // io_uring READ_FIXED / WRITE_FIXED (registered buffer)
	opFlagsKnown         = FlagFixedBuf<<1 - 1
)

// Op is one file-level operation of one thread. Times are nanoseconds since
// the capture's start (Manifest.StartMonotonicNS on CLOCK_MONOTONIC).
type Op struct {
	Kind   OpKind
	Thread uint32 // index into Manifest.Threads (1-based)
	File   uint32 // index into Manifest.Files (1-based)
	Flags  uint32
	Offset uint64
	Length uint64 // bytes asked for
	// Result is what the call returned: bytes moved for read/write, 0 or a
	// negative errno otherwise (fd numbers of opens are not kept: 0).
	Result int64
	Arg    uint32 // advice, sync_file_range flags, mmap prot
	Start  uint64 // entry
	End    uint64 // exit; equal to Start for an event without duration (fault)
}

// BlockOp is what a block-level request did.
type BlockOp uint8

// Block operations (REQ_OP_* in include/linux/blk_types.h, by name: the
// kernel's numbers are not stable API). The numbers are part of the format.
const (
	BlockRead        BlockOp = 1
	BlockWrite       BlockOp = 2
	BlockFlush       BlockOp = 3 // an empty flush request
	BlockDiscard     BlockOp = 4
	BlockWriteZeroes BlockOp = 5
	BlockOther       BlockOp = 6
	blockOpMax               = BlockOther
)

var blockOpNames = [...]string{"", "read", "write", "flush", "discard", "write_zeroes", "other"}

func (o BlockOp) String() string {
	if o == 0 || o > blockOpMax {
		return fmt.Sprintf("blockop(%d)", uint8(o))
	}
	return blockOpNames[o]
}

// Flags of a block record. The bits are part of the format.
const (
	BlockFlagSync      uint32 = 1 << 0 // REQ_SYNC
	BlockFlagFUA       uint32 = 1 << 1 // REQ_FUA
	BlockFlagPreflush  uint32 = 1 << 2 // REQ_PREFLUSH
	BlockFlagMeta      uint32 = 1 << 3 // REQ_META
	BlockFlagReadahead uint32 = 1 << 4 // REQ_RAHEAD
	// BlockFlagNoComplete: the completion was not seen before the capture
	// ended; Latency is 0.
	BlockFlagNoComplete uint32 = 1 << 5
	blockFlagsKnown            = BlockFlagNoComplete<<1 - 1
)

// Block is one block-level request on one device of the captured path.
type Block struct {
	Device  uint32 // index into Manifest.Devices (1-based)
	Op      BlockOp
	Flags   uint32
	Sector  uint64 // 512-byte sectors, as the kernel counts them
	Bytes   uint32
	Error   int32  // 0 or a negative errno (blk_status_to_errno)
	Issue   uint64 // ns since the capture's start
	Latency uint64 // ns from issue (or bio queue) to completion
}

// Record encoding: each field as a varint (unsigned, or zig-zag for signed
// ones), so a record costs its information: ~20 bytes for a 4 KiB pread at
// a random offset, instead of 56 fixed.

var (
	errVarint = errors.New("bad varint")
)

type dec struct {
	b   []byte
	err error
}

func (d *dec) u() uint64 { return varint(d, binary.Uvarint) }

func (d *dec) s() int64 { return varint(d, binary.Varint) }

// varint takes one varint off d with read (binary.Uvarint or Varint); 0
// once d has failed.
func varint[T uint64 | int64](d *dec, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.b)
	if n <= 0 {
		d.err = errVarint
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) u32(field string) uint32 {
	v := d.u()
	if v > math.MaxUint32 && d.err == nil {
		d.err = fmt.Errorf("%s %d out of range", field, v)
	}
	return uint32(v)
}

func appendOp(b []byte, o *Op) []byte {
	b = append(b, byte(o.Kind))
	b = binary.AppendUvarint(b, uint64(o.Thread))
	b = binary.AppendUvarint(b, uint64(o.File))
	b = binary.AppendUvarint(b, uint64(o.Flags))
	b = binary.AppendUvarint(b, o.Offset)
	b = binary.AppendUvarint(b, o.Length)
	b = binary.AppendVarint(b, o.Result)
	b = binary.AppendUvarint(b, uint64(o.Arg))
	b = binary.AppendUvarint(b, o.Start)
	b = binary.AppendUvarint(b, o.End-o.Start)
	return b
}

// validateOp checks what a record means on its own (the manifest's tables
// are checked by Capture).
func validateOp(o *Op) error {
	if o.Kind == 0 || o.Kind > opKindMax {
		return fmt.Errorf("unknown op %d", uint8(o.Kind))
	}
	if o.Flags&^opFlagsKnown != 0 {
		return fmt.Errorf("%s: unknown flags %#x", o.Kind, o.Flags&^opFlagsKnown)
	}
	if async := o.Flags & (FlagAIO | FlagURing); async != 0 {
		if async == FlagAIO|FlagURing {
			return fmt.Errorf("%s: both Linux AIO and io_uring", o.Kind)
		}
		switch o.Kind {
		case OpRead, OpWrite, OpFsync, OpFdatasync, OpSyncFileRange:
		default:
			return fmt.Errorf("%s: not an asynchronous operation", o.Kind)
		}
	}
	if o.Flags&(FlagLinked|FlagFixedFile|FlagFixedBuf) != 0 && o.Flags&FlagURing == 0 {
		return fmt.Errorf("%s: io_uring flags %#x without io_uring", o.Kind, o.Flags&(FlagLinked|FlagFixedFile|FlagFixedBuf))
	}
	if o.Thread == 0 {
		return fmt.Errorf("%s: thread 0", o.Kind)
	}
	if o.File == 0 {
		return fmt.Errorf("%s: file 0", o.Kind)
	}
	if o.End < o.Start {
		return fmt.Errorf("%s: ends at %d before it starts at %d", o.Kind, o.End, o.Start)
	}
	if o.Offset > math.MaxInt64 || o.Length > math.MaxInt64 || o.Offset+o.Length > math.MaxInt64 {
		return fmt.Errorf("%s: offset %d + length %d beyond a file's largest offset", o.Kind, o.Offset, o.Length)
	}
	if o.Result > 0 && uint64(o.Result) > o.Length && (o.Kind == OpRead || o.Kind == OpWrite) {
		return fmt.Errorf("%s: moved %d bytes of %d asked", o.Kind, o.Result, o.Length)
	}
	return nil
}

func decodeOp(d *dec) (Op, error) {
	if len(d.b) == 0 {
		return Op{}, errVarint
	}
	o := Op{Kind: OpKind(d.b[0])}
	d.b = d.b[1:]
	o.Thread = d.u32("thread")
	o.File = d.u32("file")
	o.Flags = d.u32("flags")
	o.Offset = d.u()
	o.Length = d.u()
	o.Result = d.s()
	o.Arg = d.u32("arg")
	o.Start = d.u()
	dur := d.u()
	if d.err != nil {
		return Op{}, d.err
	}
	if o.Start+dur < o.Start {
		return Op{}, fmt.Errorf("%s: end beyond 2^64 ns", o.Kind)
	}
	o.End = o.Start + dur
	return o, validateOp(&o)
}

func appendBlock(b []byte, r *Block) []byte {
	b = binary.AppendUvarint(b, uint64(r.Device))
	b = append(b, byte(r.Op))
	b = binary.AppendUvarint(b, uint64(r.Flags))
	b = binary.AppendUvarint(b, r.Sector)
	b = binary.AppendUvarint(b, uint64(r.Bytes))
	b = binary.AppendVarint(b, int64(r.Error))
	b = binary.AppendUvarint(b, r.Issue)
	b = binary.AppendUvarint(b, r.Latency)
	return b
}

func validateBlock(r *Block) error {
	if r.Device == 0 {
		return errors.New("device 0")
	}
	if r.Op == 0 || r.Op > blockOpMax {
		return fmt.Errorf("unknown block op %d", uint8(r.Op))
	}
	if r.Flags&^blockFlagsKnown != 0 {
		return fmt.Errorf("%s: unknown block flags %#x", r.Op, r.Flags&^blockFlagsKnown)
	}
	if r.Flags&BlockFlagNoComplete != 0 && r.Latency != 0 {
		return fmt.Errorf("%s: latency %d of a request not seen completing", r.Op, r.Latency)
	}
	if r.Error > 0 {
		return fmt.Errorf("%s: positive error %d", r.Op, r.Error)
	}
	// A sector is a 512-byte unit of a device no larger than 2^63 bytes.
	if r.Sector > math.MaxInt64>>9 {
		return fmt.Errorf("%s: sector %d beyond any device", r.Op, r.Sector)
	}
	if r.Issue+r.Latency < r.Issue {
		return fmt.Errorf("%s: completion beyond 2^64 ns", r.Op)
	}
	return nil
}

func decodeBlock(d *dec) (Block, error) {
	var r Block
	r.Device = d.u32("device")
	if d.err == nil {
		if len(d.b) == 0 {
			return Block{}, errVarint
		}
		r.Op = BlockOp(d.b[0])
		d.b = d.b[1:]
	}
	r.Flags = d.u32("flags")
	r.Sector = d.u()
	r.Bytes = d.u32("bytes")
	e := d.s()
	r.Issue = d.u()
	r.Latency = d.u()
	if d.err != nil {
		return Block{}, d.err
	}
	if e > 0 || e < math.MinInt32 {
		return Block{}, fmt.Errorf("%s: error %d out of range", r.Op, e)
	}
	r.Error = int32(e)
	return r, validateBlock(&r)
}
