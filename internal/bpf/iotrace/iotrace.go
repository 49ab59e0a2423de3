// Package iotrace loads the eBPF program behind `slowpath capture`: syscall
// tracepoints for the file-level I/O of selected threads on one filesystem,
// tp_btf/mm_filemap_fault for faults of mapped files, and block tracepoints
// for the requests on chosen devices, all streamed through one ring buffer.
// internal/capture turns the events into a capture directory.
//
// The C source is iotrace.bpf.c; bpf_bpfel.go and bpf_bpfel.o are generated
// by bpf2go (`make generate`) and committed, so building needs no clang.
package iotrace

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/bpf/bpfload"
	"github.com/slowpath/slowpath/internal/bpf/tracefs"
)

// Event types.
const (
	TypeOp    = 1
	TypeBlock = 2
)

// FlagAddr marks a fault event whose Offset is a user address
// (exceptions:page_fault_user), not a page index of Ino.
const FlagAddr = 1 << 7

// OpMunmap is the kind of an munmap event: not a record, it ends a mapping.
// The other kinds are capfile.OpKind numbers.
const OpMunmap = 11

// Event is one event from the kernel (struct event in iotrace.bpf.c).
type Event struct {
	Start, End uint64 // CLOCK_MONOTONIC ns
	Ino        uint64
	Offset     uint64 // block: sector; fault: page index
	Length     uint64 // block: bytes
	Ret        int64  // syscall result; block: 0 or -EIO
	MajFlt     uint64 // the thread's major faults so far
	Dev        uint32 // kernel dev_t of the file; block: device id
	Tgid, Tid  uint32
	Arg        uint32 // advice, flags, prot, open flags; block: the request's op and flags
	FFlags     uint32 // the file's f_flags
	Fd         int32
	Type       uint8
	Kind       uint8
	Flags      uint8
	Engine     uint8 // EngineSync, EngineAIO, EngineURing
	AFlags     uint8 // AFLinked...: of an asynchronous request
	Opcode     uint8 // the io_uring opcode or aio iocb opcode
}

// How a file-level I/O was submitted (Event.Engine).
const (
	EngineSync  = 0 // a syscall per I/O
	EngineAIO   = 1 // Linux AIO: io_submit, reaped by io_getevents
	EngineURing = 2 // io_uring
)

// Event.AFlags.
const (
	AFLinked    = 1 // io_uring IOSQE_IO_LINK or IOSQE_IO_HARDLINK
	AFFixedFile = 2 // io_uring registered file
	AFFixedBuf  = 4 // io_uring READ_FIXED / WRITE_FIXED
	AFLenResult = 8 // the length is unknown at submission: take the result
)

const eventSize = 88

func decodeEvent(b []byte, e *Event) error {
	if len(b) < eventSize {
		return fmt.Errorf("ring buffer record of %d bytes, want %d", len(b), eventSize)
	}
	le := binary.LittleEndian
	e.Start, e.End, e.Ino = le.Uint64(b), le.Uint64(b[8:]), le.Uint64(b[16:])
	e.Offset, e.Length, e.Ret = le.Uint64(b[24:]), le.Uint64(b[32:]), int64(le.Uint64(b[40:]))
	e.MajFlt = le.Uint64(b[48:])
	e.Dev, e.Tgid, e.Tid, e.Arg = le.Uint32(b[56:]), le.Uint32(b[60:]), le.Uint32(b[64:]), le.Uint32(b[68:])
	e.FFlags, e.Fd = le.Uint32(b[72:]), int32(le.Uint32(b[76:]))
	e.Type, e.Kind, e.Flags = b[80], b[81], b[82]
	e.Engine, e.AFlags, e.Opcode = b[83], b[84], b[85]
	return nil
}

// BlockDevice is a device whose requests are recorded.
type BlockDevice struct {
	Major, Minor uint32
	ID           uint32 // written in Event.Dev
	Bio          bool   // bio-based (dm, brd, md, zram): block_bio_*; else block_rq_*
}

// Options select what is traced.
type Options struct {
	// Major and Minor are the device of the captured filesystem (st_dev).
	Major, Minor uint32
	PID          uint32 // a process; 0: any
	Comm         string // a thread name (at most 15 bytes); "": any
	// Cgroup is a cgroup v2 directory: its threads and its descendants'.
	Cgroup    string
	Devices   []BlockDevice
	BlockOnly bool // no syscall or fault events
	// RingBytes is the ring buffer's size (a power of two, at least a page);
	// 0: 16 MiB.
	RingBytes uint32
	// Mappers are processes that mapped files of the mount before the
	// capture began: their madvise and munmap calls are recorded.
	Mappers []uint32
	// PageFaultUser takes faults from exceptions:page_fault_user even where
	// mm_filemap_fault exists (tests of the older kernels' path).
	PageFaultUser bool
	// Tracefs is the tracefs mount; "": /sys/kernel/tracing, then
	// /sys/kernel/debug/tracing, then a private mount of its own (package
	// tracefs).
	Tracefs string
	// Log, when set, is told what the tracer did to the host's view, such
	// as mounting a private tracefs.
	Log func(string)
}

// Errors a caller may want to tell apart.
var (
	ErrNoBTF     = bpfload.ErrNoBTF
	ErrNoTracefs = tracefs.ErrNotMounted
)

// CheckPrivileges names the capabilities missing to load the capture:
// CAP_BPF and CAP_PERFMON (5.8+), or CAP_SYS_ADMIN which covers both.
func CheckPrivileges() error {
	return bpfload.CheckPrivileges("capture loads eBPF tracing programs and")
}

// Kernel is what the running kernel offers the capture.
type Kernel struct {
	// HasFilemapFault: filemap:mm_filemap_fault exists (Linux 6.17+).
	HasFilemapFault bool
	// HasPageFaultUser: exceptions:page_fault_user exists (x86).
	HasPageFaultUser bool
	// HasURing: a submission tracepoint whose first argument is the
	// request (URingSubmit) and io_uring_complete with the request as its
	// second exist (5.10's io_uring_submit_sqe names no request, so its
	// io_uring I/O cannot be captured; Debian's 6.1 passes it).
	HasURing bool
	// URingSubmit is that tracepoint: io_uring_submit_req (6.4+) or
	// io_uring_submit_sqe(struct io_kiocb *req, bool force_nonblock)
	// (before 6.4 where it passes the request: Debian's 6.1).
	URingSubmit string
	// RqArg and BioArg are the indexes of the request and bio arguments of
	// block_rq_issue and block_bio_queue (1 before 5.11, then 0).
	RqArg, BioArg int
	// Req is how the kernel spells a request's op and flags (cmd_flags,
	// bi_opf): REQ_OP_* in the low REQ_OP_BITS (8) and the __REQ_* bits,
	// from enum req_op (req_opf before 6.0) and enum req_flag_bits.
	Req ReqBits
}

// ReqBits are the kernel's request op numbers and flag masks.
type ReqBits struct {
	Read, Write, Flush, Discard, WriteZeroes uint32
	Sync, FUA, Preflush, Meta, Rahead        uint32 // masks; 0 if unknown
}

// reqOpMask is REQ_OP_MASK: the op is the low REQ_OP_BITS (8) bits of
// cmd_flags and bi_opf since 4.10 (include/linux/blk_types.h).
const reqOpMask = 0xff

// Op splits a request's cmd_flags into its op (one of the ReqBits op
// numbers) and flags.
func (r ReqBits) Op(opf uint32) uint32 { return opf & reqOpMask }

func reqBits(spec *btf.Spec) (ReqBits, error) {
	var r ReqBits
	enum := func(names ...string) (*btf.Enum, error) {
		for _, n := range names {
			var e *btf.Enum
			if spec.TypeByName(n, &e) == nil {
				return e, nil
			}
		}
		return nil, fmt.Errorf("enum %s not in the kernel's BTF", names[0])
	}
	ops, err := enum("req_op", "req_opf")
	if err != nil {
		return r, err
	}
	opv := map[string]*uint32{"REQ_OP_READ": &r.Read, "REQ_OP_WRITE": &r.Write, "REQ_OP_FLUSH": &r.Flush,
		"REQ_OP_DISCARD": &r.Discard, "REQ_OP_WRITE_ZEROES": &r.WriteZeroes}
	found := 0
	for _, v := range ops.Values {
		if p := opv[v.Name]; p != nil {
			*p = uint32(v.Value)
			found++
		}
	}
	if found != len(opv) {
		return r, fmt.Errorf("enum %s lacks some of REQ_OP_READ, WRITE, FLUSH, DISCARD, WRITE_ZEROES", ops.Name)
	}
	bits, err := enum("req_flag_bits")
	if err != nil {
		return r, err
	}
	fv := map[string]*uint32{"__REQ_SYNC": &r.Sync, "__REQ_FUA": &r.FUA, "__REQ_PREFLUSH": &r.Preflush,
		"__REQ_META": &r.Meta, "__REQ_RAHEAD": &r.Rahead}
	for _, v := range bits.Values {
		if p := fv[v.Name]; p != nil && v.Value < 32 {
			*p = 1 << v.Value
		}
	}
	return r, nil
}

// ProbeKernel reads the kernel's BTF for the tracepoints' prototypes.
func ProbeKernel() (Kernel, error) {
	spec, err := bpfload.KernelSpec()
	if err != nil {
		return Kernel{}, err
	}
	return probeSpec(spec)
}

func probeSpec(spec *btf.Spec) (Kernel, error) {
	var k Kernel
	var td *btf.Typedef
	k.HasFilemapFault = spec.TypeByName("btf_trace_mm_filemap_fault", &td) == nil
	k.HasPageFaultUser = spec.TypeByName("btf_trace_page_fault_user", &td) == nil
	k.URingSubmit = uringSubmit(spec)
	k.HasURing = k.URingSubmit != ""
	var err error
	if k.RqArg, err = argOfStruct(spec, "block_rq_issue", "request"); err != nil {
		return k, err
	}
	if k.BioArg, err = argOfStruct(spec, "block_bio_queue", "bio"); err != nil {
		return k, err
	}
	if k.Req, err = reqBits(spec); err != nil {
		return k, err
	}
	// The completions read their argument at a fixed index: check it.
	if i, err := argOfStruct(spec, "block_rq_complete", "request"); err != nil || i != 0 {
		return k, fmt.Errorf("block_rq_complete: struct request * is not its first argument (%v): update slowpath for this kernel", err)
	}
	if i, err := argOfStruct(spec, "block_bio_complete", "bio"); err != nil || i != 1 {
		return k, fmt.Errorf("block_bio_complete: struct bio * is not its second argument (%v): update slowpath for this kernel", err)
	}
	return k, nil
}

// uringSubmit checks the io_uring tracepoints' prototypes the programs
// read and names the submission one: io_uring_submit_req(struct io_kiocb
// *req) (6.4+) or io_uring_submit_sqe(struct io_kiocb *req, bool)
// (before: Debian's 6.1), and io_uring_complete(ctx, req, ...) (6.1: void *req then
// user_data, res...; 6.4+: struct io_kiocb *req, struct io_uring_cqe
// *cqe). "": none fits (5.10: io_uring_submit_sqe(ctx, opcode, ...)).
func uringSubmit(spec *btf.Spec) string {
	params := func(tp string) []btf.FuncParam {
		var td *btf.Typedef
		if spec.TypeByName("btf_trace_"+tp, &td) != nil {
			return nil
		}
		ptr, ok := td.Type.(*btf.Pointer)
		if !ok {
			return nil
		}
		proto, ok := ptr.Target.(*btf.FuncProto)
		if !ok {
			return nil
		}
		return proto.Params
	}
	if comp := params("io_uring_complete"); len(comp) < 3 {
		return ""
	} else if _, ok := comp[2].Type.(*btf.Pointer); !ok {
		return ""
	}
	for _, tp := range []string{"io_uring_submit_req", "io_uring_submit_sqe"} {
		sub := params(tp)
		if len(sub) < 2 {
			continue
		}
		if p, ok := sub[1].Type.(*btf.Pointer); ok {
			if s, ok := p.Target.(*btf.Struct); ok && s.Name == "io_kiocb" {
				return tp
			}
		}
	}
	return ""
}

// argOfStruct finds the argument of tracepoint tp that points to struct
// name, from the BTF typedef btf_trace_<tp> (after its void *__data).
func argOfStruct(spec *btf.Spec, tp, name string) (int, error) {
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_"+tp, &td); err != nil {
		return 0, fmt.Errorf("tracepoint block:%s not in the kernel's BTF: %w", tp, err)
	}
	ptr, ok := td.Type.(*btf.Pointer)
	if !ok {
		return 0, fmt.Errorf("btf_trace_%s is not a function pointer", tp)
	}
	proto, ok := ptr.Target.(*btf.FuncProto)
	if !ok || len(proto.Params) < 2 {
		return 0, fmt.Errorf("btf_trace_%s has an unexpected prototype", tp)
	}
	for i, p := range proto.Params[1:] {
		if pp, ok := p.Type.(*btf.Pointer); ok {
			if s, ok := pp.Target.(*btf.Struct); ok && s.Name == name {
				if i > 1 {
					return 0, fmt.Errorf("block:%s has struct %s * as argument %d: update slowpath for this kernel", tp, name, i)
				}
				return i, nil
			}
		}
	}
	return 0, fmt.Errorf("block:%s has no struct %s * argument", tp, name)
}

// syscalls traced, with the number of arguments each enter handler reads.
var syscalls = []struct {
	name string
	args int
}{
	{"read", 3}, {"write", 3}, {"pread64", 4}, {"pwrite64", 4},
	{"readv", 3}, {"writev", 3}, {"preadv", 4}, {"pwritev", 4},
	{"fsync", 1}, {"fdatasync", 1}, {"sync_file_range", 4}, {"fadvise64", 4},
	{"madvise", 3}, {"munmap", 2}, {"mmap", 6}, {"openat", 3},
	{"io_submit", 3}, {"io_getevents", 4}, {"io_pgetevents", 4},
	// Counted, not recorded (entry only).
	{"splice", 5}, {"sendfile64", 4}, {"copy_file_range", 5},
}

// argBase reads the syscall tracepoints' format files and returns the
// offset of the first argument, after checking that every argument each
// handler reads is 8 bytes at base + 8*i, and every exit's ret at base
// (include/trace/syscall.h, kernel/trace/trace_syscalls.c).
func argBase(tracefs string) (uint32, error) {
	base := -1
	for _, sc := range syscalls {
		for _, dir := range []string{"sys_enter_", "sys_exit_"} {
			p := filepath.Join(tracefs, "events", "syscalls", dir+sc.name, "format")
			fields, err := readFormat(p)
			if err != nil {
				return 0, err
			}
			// Fields after __syscall_nr are the arguments (or ret).
			var args []formatField
			for i, f := range fields {
				if f.name == "__syscall_nr" {
					args = fields[i+1:]
				}
			}
			want := sc.args
			if dir == "sys_exit_" {
				want = 1
			}
			if len(args) < want {
				return 0, fmt.Errorf("%s: %d arguments, the capture reads %d", p, len(args), want)
			}
			if base < 0 {
				base = args[0].offset
			}
			for i := range want {
				if args[i].offset != base+8*i || args[i].size != 8 {
					return 0, fmt.Errorf("%s: field %s at offset %d size %d, expected %d size 8: update slowpath for this kernel", p, args[i].name, args[i].offset, args[i].size, base+8*i)
				}
			}
		}
	}
	return uint32(base), nil
}

type formatField struct {
	name         string
	offset, size int
}

// readFormat parses a tracefs format file's field lines:
// "field:unsigned int fd;	offset:16;	size:8;	signed:0;".
func readFormat(p string) ([]formatField, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("read tracepoint format: %w", err)
	}
	defer f.Close()
	var out []formatField
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "field:") {
			continue
		}
		var ff formatField
		for _, part := range strings.Split(line, ";") {
			part = strings.TrimSpace(part)
			k, v, ok := strings.Cut(part, ":")
			if !ok {
				continue
			}
			switch k {
			case "field":
				words := strings.Fields(v)
				if len(words) == 0 {
					return nil, fmt.Errorf("%s: field without a name: %q", p, line)
				}
				ff.name = strings.TrimLeft(words[len(words)-1], "*")
			case "offset":
				ff.offset, err = strconv.Atoi(v)
			case "size":
				ff.size, err = strconv.Atoi(v)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %w", p, line, err)
			}
		}
		out = append(out, ff)
	}
	return out, sc.Err()
}

// Tracer is the loaded and attached capture. Close detaches it.
type Tracer struct {
	coll   *ebpf.Collection
	links  []link.Link
	rd     *ringbuf.Reader
	rec    ringbuf.Record
	Kernel Kernel
	// FaultSource is the tracepoint faults come from: mm_filemap_fault,
	// page_fault_user or none.
	FaultSource string
}

func kdev(major, minor uint32) uint32 { return major<<20 | minor }

// Start loads and attaches the programs Options ask for.
func Start(o Options) (*Tracer, error) {
	if err := CheckPrivileges(); err != nil {
		return nil, err
	}
	k, err := ProbeKernel()
	if err != nil {
		return nil, err
	}
	if o.BlockOnly {
		return start(o, k, 16)
	}
	// The syscall tracepoints are found and attached through tracefs:
	// everything from reading their formats to attaching runs inside Do.
	var t *Tracer
	err = tracefs.Do(o.Tracefs, o.Log, func(dir string) error {
		base, err := argBase(dir)
		if err != nil {
			return err
		}
		t, err = start(o, k, base)
		return err
	})
	return t, err
}

// start loads and attaches with the syscall arguments at base.
func start(o Options, k Kernel, base uint32) (*Tracer, error) {
	if err := bpfload.RemoveMemlock(); err != nil {
		return nil, err
	}
	spec, err := loadBpf()
	if err != nil {
		return nil, err
	}
	var comm [16]byte
	if len(o.Comm) > 15 {
		return nil, fmt.Errorf("comm %q is longer than the kernel's 15 bytes", o.Comm)
	}
	copy(comm[:], o.Comm)
	consts := map[string]any{
		bpfVarTargetDev:    kdev(o.Major, o.Minor),
		bpfVarFilterTgid:   o.PID,
		bpfVarSelfTgid:     uint32(os.Getpid()),
		bpfVarFilterComm:   b2u8(o.Comm != ""),
		bpfVarComm:         comm,
		bpfVarFilterCgroup: b2u8(o.Cgroup != ""),
		bpfVarArgBase:      base,
	}
	ring := o.RingBytes
	if ring == 0 {
		ring = 16 << 20
	}
	if ring < uint32(os.Getpagesize()) || ring&(ring-1) != 0 {
		return nil, fmt.Errorf("ring buffer size %d is not a power of two of at least a page", ring)
	}
	consts[bpfVarWakeBytes] = uint64(ring / 4)
	if err := bpfload.SetConstants(spec, consts); err != nil {
		return nil, err
	}
	spec.Maps[bpfMapEvents].MaxEntries = ring

	// Keep only the programs this capture needs.
	var rq, bio bool
	for _, d := range o.Devices {
		rq, bio = rq || !d.Bio, bio || d.Bio
	}
	keep := map[string]bool{}
	if !o.BlockOnly {
		for _, sc := range syscalls {
			keep["enter_"+sc.name], keep["exit_"+sc.name] = true, true
		}
		keep[bpfProgOnFilemapFault] = k.HasFilemapFault && !o.PageFaultUser
		keep[bpfProgOnPageFaultUser] = k.HasPageFaultUser && (!k.HasFilemapFault || o.PageFaultUser)
		keep[bpfProgOnUringSubmit], keep[bpfProgOnUringComplete] = k.HasURing, k.HasURing
	}
	keep[bpfProgOnRqIssue], keep[bpfProgOnRqIssueQ], keep[bpfProgOnRqComplete] = rq && k.RqArg == 0, rq && k.RqArg == 1, rq
	keep[bpfProgOnBioQueue], keep[bpfProgOnBioQueueQ], keep[bpfProgOnBioComplete] = bio && k.BioArg == 0, bio && k.BioArg == 1, bio
	for name := range spec.Programs {
		if !keep[name] {
			delete(spec.Programs, name)
		}
	}
	if p := spec.Programs[bpfProgOnUringSubmit]; p != nil {
		p.AttachTo = k.URingSubmit
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, bpfload.LoadError("capture program", err)
	}
	t := &Tracer{coll: coll, Kernel: k, FaultSource: "none"}
	switch {
	case coll.Programs[bpfProgOnFilemapFault] != nil:
		t.FaultSource = "mm_filemap_fault"
	case coll.Programs[bpfProgOnPageFaultUser] != nil:
		t.FaultSource = "page_fault_user"
	}
	fail := func(err error) (*Tracer, error) {
		t.Close()
		return nil, err
	}
	if o.Cgroup != "" {
		fd, err := unix.Open(o.Cgroup, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return fail(fmt.Errorf("open cgroup %s: %w", o.Cgroup, err))
		}
		err = coll.Maps[bpfMapCgroups].Update(uint32(0), uint32(fd), ebpf.UpdateAny)
		unix.Close(fd)
		if err != nil {
			return fail(fmt.Errorf("cgroup %s: %w (a cgroup v2 directory is needed)", o.Cgroup, err))
		}
	}
	for _, d := range o.Devices {
		if err := coll.Maps[bpfMapDevices].Update(kdev(d.Major, d.Minor), d.ID, ebpf.UpdateAny); err != nil {
			return fail(fmt.Errorf("device %d:%d: %w", d.Major, d.Minor, err))
		}
	}
	for _, p := range o.Mappers {
		if err := t.AddMapper(p); err != nil {
			return fail(err)
		}
	}
	if t.rd, err = ringbuf.NewReader(coll.Maps[bpfMapEvents]); err != nil {
		return fail(err)
	}
	// Completions before issues would be unmatched: attach the block
	// programs first, then faults, then exits before enters, so an enter
	// is never attached without its exit.
	for name, prog := range coll.Programs {
		if !strings.HasPrefix(name, "on_") {
			continue
		}
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			return fail(fmt.Errorf("attach %s: %w", name, err))
		}
		t.links = append(t.links, l)
	}
	for _, dir := range []string{"exit_", "enter_"} {
		for _, sc := range syscalls {
			prog := coll.Programs[dir+sc.name]
			if prog == nil {
				continue
			}
			tp := strings.Replace(dir, "_", "", 1)
			l, err := link.Tracepoint("syscalls", "sys_"+tp+"_"+sc.name, prog, nil)
			if err != nil {
				return fail(fmt.Errorf("attach syscalls:sys_%s_%s: %w", tp, sc.name, err))
			}
			t.links = append(t.links, l)
		}
	}
	return t, nil
}

func b2u8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// AddMapper records madvise and munmap of process tgid from now on.
func (t *Tracer) AddMapper(tgid uint32) error {
	return t.coll.Maps[bpfMapMappers].Update(tgid, uint32(1), ebpf.UpdateAny)
}

// Read waits for the next event until deadline, and returns
// os.ErrDeadlineExceeded when none came.
func (t *Tracer) Read(e *Event, deadline time.Time) error {
	t.rd.SetDeadline(deadline)
	if err := t.rd.ReadInto(&t.rec); err != nil {
		return err
	}
	return decodeEvent(t.rec.RawSample, e)
}

// SetDeadline sets when Next gives up waiting for an event.
func (t *Tracer) SetDeadline(d time.Time) { t.rd.SetDeadline(d) }

// Next returns the next event, waiting at most until the deadline set
// with SetDeadline (then os.ErrDeadlineExceeded).
func (t *Tracer) Next(e *Event) error {
	if err := t.rd.ReadInto(&t.rec); err != nil {
		return err
	}
	return decodeEvent(t.rec.RawSample, e)
}

// Detach stops new events; what is in the ring buffer can still be read.
func (t *Tracer) Detach() {
	for _, l := range t.links {
		l.Close()
	}
	t.links = nil
}

// Counters are the program's own counts, summed over CPUs.
type Counters struct {
	Dropped, Unmatched, Events uint64
	// I/O of captured threads on files of the mount that no record
	// describes: calls, and bytes asked.
	Splice, SpliceBytes               uint64
	Sendfile, SendfileBytes           uint64
	CopyFileRange, CopyFileRangeBytes uint64
	// URingOther: io_uring requests of other opcodes on a file of the
	// mount; AIOOther: iocbs of other opcodes, or beyond the 64 read per
	// io_submit.
	URingOther, AIOOther uint64
	// RecursionMisses: runs of the programs the kernel skipped because
	// the same program was already running on that CPU (an interrupt's
	// block completion during another's; Linux 5.12+, else 0): each is
	// an event lost without a trace in the ring buffer.
	RecursionMisses uint64
}

// Counters reads the counters.
func (t *Tracer) Counters() (Counters, error) {
	var c Counters
	for i, dst := range []*uint64{&c.Dropped, &c.Unmatched, &c.Events, &c.Splice, &c.SpliceBytes,
		&c.Sendfile, &c.SendfileBytes, &c.CopyFileRange, &c.CopyFileRangeBytes, &c.URingOther, &c.AIOOther} {
		var per []uint64
		if err := t.coll.Maps[bpfMapCounters].Lookup(uint32(i), &per); err != nil {
			return c, fmt.Errorf("read counters: %w", err)
		}
		for _, v := range per {
			*dst += v
		}
	}
	for _, p := range t.coll.Programs {
		if st, err := p.Stats(); err == nil {
			c.RecursionMisses += st.RecursionMisses
		}
	}
	return c, nil
}

// InflightBlocks returns the requests issued and not seen completing, as
// block events with End 0.
func (t *Tracer) InflightBlocks() ([]Event, error) {
	var out []Event
	var key uint64
	var v bpfBlkStart
	it := t.coll.Maps[bpfMapBlkInflight].Iterate()
	for it.Next(&key, &v) {
		out = append(out, Event{Type: TypeBlock, Start: v.Issue, Offset: v.Sector, Length: uint64(v.Bytes), Arg: v.Opf, Dev: v.Dev})
	}
	return out, it.Err()
}

// RunTime is the kernel time spent in the capture's programs, when
// kernel.bpf_stats_enabled is on (0 otherwise), and how many times they
// ran.
func (t *Tracer) RunTime() (time.Duration, uint64) {
	var d time.Duration
	var n uint64
	for _, p := range t.coll.Programs {
		st, err := p.Stats()
		if err != nil {
			continue
		}
		d += st.Runtime
		n += st.RunCount
	}
	return d, n
}

// Close detaches and frees everything.
func (t *Tracer) Close() {
	t.Detach()
	if t.rd != nil {
		t.rd.Close()
	}
	t.coll.Close()
}
