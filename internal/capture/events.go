package capture

import (
	"fmt"
	"os"
	"sort"

	"github.com/prometheus/procfs"
	"github.com/slowpath/slowpath/internal/bpf/iotrace"
	"github.com/slowpath/slowpath/internal/capture/capfile"
	"github.com/slowpath/slowpath/internal/hostfs"
	"golang.org/x/sys/unix"
)

// A capture in progress (run) and how it turns each kernel event into at
// most one record: ops with their thread, file and mapping, block requests,
// faults waiting for their thread's maj_flt.

// Linux open flags (include/uapi/asm-generic/fcntl.h, x86 values as
// golang.org/x/sys/unix spells them). O_SYNC includes O_DSYNC.
const (
	oDirect = unix.O_DIRECT
	oDsync  = unix.O_DSYNC
	oSync   = unix.O_SYNC
	oAppend = unix.O_APPEND
)

func openFlags(f uint32) uint32 {
	var out uint32
	if f&oDirect != 0 {
		out |= capfile.FlagDirect
	}
	if f&oSync == oSync {
		out |= capfile.FlagSync
	} else if f&oDsync != 0 {
		out |= capfile.FlagDsync
	}
	if f&oAppend != 0 {
		out |= capfile.FlagAppend
	}
	return out
}

type fileKey struct {
	dev uint32
	ino uint64
}

type fileState struct {
	f       capfile.File
	handle  *os.File // to stat at the end; nil when it could not be opened
	maxSeen uint64   // furthest byte seen, the size when there is no handle
	late    *lateSight
}

// lateSight is a file first seen during the capture, its residency read
// at that sight (see residency.go, "Late files").
type lateSight struct {
	from, at uint64      // the window: the event that showed the file, and the mincore
	reads    [][2]uint64 // pages the traced processes read or faulted in that window
	blocks   bool        // a block read was issued in the window
}

type mapping struct {
	start, end uint64 // user addresses
	pgoff      uint64 // file offset of start
	file       fileKey
}

// run is one capture in progress.
type run struct {
	o         Options
	fs        hostfs.FS
	mountDev  uint32 // kernel dev_t
	pageSize  uint64
	startMono uint64
	w         *capfile.DirWriter
	files     map[fileKey]*fileState
	fileList  []*fileState
	// candidates are files open or mapped at the start: they get an id
	// (and their residency at the start goes in the manifest) when a
	// record names them.
	candidates map[fileKey]*fileState
	threads    map[uint32]uint32 // tid -> thread id
	threadList []capfile.Thread
	procs      map[uint32]uint32 // tgid -> process id
	maps       map[uint32][]mapping
	pending    map[uint32]*pendingFault // tid -> fault waiting for its thread's next maj_flt
	req        iotrace.ReqBits
	cgroupRel  string
	records    uint64
	faults     uint64
	aio, uring uint64 // records of asynchronous requests
	unmatched  uint64
	limitHit   bool
	// late lists the files first seen during the capture whose window
	// has not yet met a block read; lateUntil is the end of the latest
	// window.
	late        []*fileState
	lateUntil   uint64
	blockTraced bool
}

// newRun starts the state of a capture of target t.
func newRun(opts Options, t *target) (*run, error) {
	r := &run{o: opts, fs: opts.FS, mountDev: t.major<<20 | t.minor, pageSize: t.manifest.System.PageSize,
		files: map[fileKey]*fileState{}, candidates: map[fileKey]*fileState{}, threads: map[uint32]uint32{}, procs: map[uint32]uint32{},
		maps: map[uint32][]mapping{}, pending: map[uint32]*pendingFault{}, blockTraced: len(t.devs) > 0}
	if opts.Cgroup != "" {
		rel, err := cgroupRel(t.mounts, opts.Cgroup)
		if err != nil {
			return nil, fmt.Errorf("cgroup filter: %w", err)
		}
		r.cgroupRel = rel
	}
	return r, nil
}

type pendingFault struct {
	op     capfile.Op
	majFlt uint64
	tgid   uint32
	tid    uint32
}

func (r *run) closeHandles() {
	for _, f := range r.candidates {
		if f.handle != nil {
			f.handle.Close()
		}
	}
	for _, f := range r.fileList {
		if f.handle != nil {
			f.handle.Close()
		}
	}
}

// thread returns the pseudonym of thread tid of process tgid.
func (r *run) thread(tgid, tid uint32) uint32 {
	if id, ok := r.threads[tid]; ok {
		return id
	}
	p, ok := r.procs[tgid]
	if !ok {
		p = uint32(len(r.procs) + 1)
		r.procs[tgid] = p
	}
	id := uint32(len(r.threadList) + 1)
	r.threads[tid] = id
	r.threadList = append(r.threadList, capfile.Thread{ID: id, Process: p})
	return id
}

// file returns the state of file (dev, ino), registering it on first
// sight: open is a way to open it (a /proc fd or map_files link), or nil;
// at is when the event that names it started.
func (r *run) file(dev uint32, ino uint64, at uint64, open func() *os.File) *fileState {
	k := fileKey{dev, ino}
	if f, ok := r.files[k]; ok {
		return f
	}
	id := uint32(len(r.fileList) + 1)
	f := r.candidates[k]
	if f != nil {
		delete(r.candidates, k)
		f.f.ID, f.f.Name = id, capfile.FileName(id)
	} else {
		f = r.examine(ino, open, false)
		f.f.ID, f.f.Name = id, capfile.FileName(id)
		if f.late != nil {
			f.late.from = min(at, f.late.at)
			r.late = append(r.late, f)
			r.lateUntil = max(r.lateUntil, f.late.at)
		}
	}
	r.files[k] = f
	r.fileList = append(r.fileList, f)
	return f
}

// candidate registers a file open or mapped at the start.
func (r *run) candidate(ino uint64, open func() *os.File) {
	k := fileKey{r.mountDev, ino}
	if r.candidates[k] != nil {
		return
	}
	r.candidates[k] = r.examine(ino, open, true)
}

// examine opens a file through open to stat it and read its residency: at
// the start, or at its first sight during the capture.
func (r *run) examine(ino uint64, open func() *os.File, atStart bool) *fileState {
	f := &fileState{f: capfile.File{ResidencyUnknown: true}}
	if open != nil {
		if h := open(); h != nil {
			var st unix.Stat_t
			if unix.Fstat(int(h.Fd()), &st) == nil && st.Ino == ino {
				f.handle = h
				f.f.SizeStartBytes = uint64(st.Size)
				f.f.Resident, f.f.ResidentPages, f.f.ResidentApprox, f.f.ResidencyUnknown = residency(h, uint64(st.Size), r.pageSize)
				if !atStart && !f.f.ResidencyUnknown {
					f.late = &lateSight{at: r.rel(monoNow())}
					f.f.ResidencyAtNS = max(f.late.at, 1)
				}
			} else {
				h.Close()
			}
		}
	}
	return f
}

func (r *run) finishFiles() []capfile.File {
	out := make([]capfile.File, len(r.fileList))
	for i, f := range r.fileList {
		r.settleLate(f)
		f.f.SizeBytes = f.maxSeen
		if f.handle != nil {
			var st unix.Stat_t
			if unix.Fstat(int(f.handle.Fd()), &st) == nil {
				f.f.SizeBytes = uint64(st.Size)
			}
		}
		out[i] = f.f
	}
	return out
}

func (r *run) openFd(tgid uint32, fd int32) func() *os.File {
	if fd < 0 {
		return nil
	}
	return func() *os.File {
		h, err := os.Open(r.fs.ProcPath(fmt.Sprint(tgid), "fd", fmt.Sprint(fd)))
		if err != nil {
			return nil
		}
		return h
	}
}

func (r *run) rel(t uint64) uint64 {
	if t < r.startMono {
		return 0
	}
	return t - r.startMono
}

func (r *run) write(o capfile.Op) error {
	if r.records >= r.o.MaxRecords {
		r.limitHit = true
		return nil
	}
	r.records++
	if o.Kind == capfile.OpFault {
		r.faults++
	}
	switch f := r.fileList[o.File-1]; {
	case o.Kind == capfile.OpRead && o.Result > 0:
		r.readInWindow(f, o.Start, o.Offset, uint64(o.Result), false)
	case o.Kind == capfile.OpFault && o.Flags&capfile.FlagMajor != 0:
		r.readInWindow(f, o.Start, o.Offset, o.Length, true)
	}
	if err := r.w.Ops.Write(o); err != nil {
		return fmt.Errorf("write an op record: %w", err)
	}
	return nil
}

// handle turns one kernel event into at most one record.
func (r *run) handle(e *iotrace.Event) error {
	if e.Type == iotrace.TypeBlock {
		return r.block(e)
	}
	if e.Type != iotrace.TypeOp {
		return fmt.Errorf("kernel event of unknown type %d", e.Type)
	}
	// The thread's maj_flt now tells whether its last fault was major.
	if p := r.pending[e.Tid]; p != nil {
		if e.MajFlt > p.majFlt {
			p.op.Flags |= capfile.FlagMajor
		}
		delete(r.pending, e.Tid)
		if err := r.write(p.op); err != nil {
			return err
		}
	}
	start, end := r.rel(e.Start), r.rel(e.End)
	if end < start {
		end = start
	}
	switch e.Kind {
	case iotrace.OpMunmap:
		r.unmap(e.Tgid, e.Offset, e.Length)
		return nil
	case uint8(capfile.OpMadvise):
		return r.madvise(e, start, end)
	}
	if e.Kind == uint8(capfile.OpFault) && e.Flags&iotrace.FlagAddr != 0 {
		// A user address: keep it when it falls in a mapping of a
		// captured file, as the page of that file.
		m, ok := r.mappingAt(e.Tgid, e.Offset)
		if !ok {
			return nil
		}
		e.Dev, e.Ino = m.file.dev, m.file.ino
		e.Offset = (m.pgoff + (e.Offset - m.start)) / r.pageSize
		e.Flags &^= iotrace.FlagAddr
	}
	tid := r.thread(e.Tgid, e.Tid)
	var f *fileState
	if e.Kind == uint8(capfile.OpFault) {
		f = r.file(e.Dev, e.Ino, start, nil)
	} else {
		f = r.file(e.Dev, e.Ino, start, r.openFd(e.Tgid, e.Fd))
	}
	o := capfile.Op{Kind: capfile.OpKind(e.Kind), Thread: tid, File: f.f.ID, Flags: uint32(e.Flags), Offset: e.Offset,
		Length: e.Length, Result: e.Ret, Start: start, End: end}
	switch e.Engine {
	case iotrace.EngineAIO:
		o.Flags |= capfile.FlagAIO
		r.aio++
	case iotrace.EngineURing:
		o.Flags |= capfile.FlagURing
		r.uring++
		for _, b := range []struct {
			a    uint8
			flag uint32
		}{{iotrace.AFLinked, capfile.FlagLinked}, {iotrace.AFFixedFile, capfile.FlagFixedFile}, {iotrace.AFFixedBuf, capfile.FlagFixedBuf}} {
			if e.AFlags&b.a != 0 {
				o.Flags |= b.flag
			}
		}
	}
	if e.AFlags&iotrace.AFLenResult != 0 && o.Result > 0 {
		// Vectored or provided-buffer requests: the length asked is not
		// known at submission.
		o.Length = max(o.Length, uint64(o.Result))
	}
	switch o.Kind {
	case capfile.OpRead, capfile.OpWrite:
		o.Flags |= openFlags(e.FFlags)
		if o.Result > 0 && uint64(o.Result) > o.Length {
			// A vectored call with more iovecs than the kernel side read.
			o.Length = uint64(o.Result)
		}
		if o.Result > 0 {
			f.maxSeen = max(f.maxSeen, o.Offset+uint64(o.Result))
		}
	case capfile.OpOpen:
		o.Flags |= openFlags(e.FFlags)
		o.Result = min(o.Result, 0)
	case capfile.OpSyncFileRange, capfile.OpFadvise:
		o.Arg = e.Arg
		o.Result = min(o.Result, 0)
	case capfile.OpFsync, capfile.OpFdatasync:
		o.Result = min(o.Result, 0)
	case capfile.OpMmap:
		o.Arg = e.Arg
		if e.Ret < 0 {
			o.Result = e.Ret
		} else {
			o.Result = 0
			r.maps[e.Tgid] = append(r.maps[e.Tgid], mapping{start: uint64(e.Ret), end: uint64(e.Ret) + e.Length, pgoff: e.Offset, file: fileKey{e.Dev, e.Ino}})
		}
	case capfile.OpFault:
		o.Offset = e.Offset * r.pageSize
		o.Length = r.pageSize
		f.maxSeen = max(f.maxSeen, o.Offset+o.Length)
		r.pending[e.Tid] = &pendingFault{op: o, majFlt: e.MajFlt, tgid: e.Tgid, tid: e.Tid}
		return nil
	default:
		return fmt.Errorf("kernel event of unknown op %d", e.Kind)
	}
	return r.write(o)
}

// flushFaults writes the faults still waiting for their thread's next
// event, reading its maj_flt from /proc (field 12 of stat).
func (r *run) flushFaults() {
	tids := make([]uint32, 0, len(r.pending))
	for t := range r.pending {
		tids = append(tids, t)
	}
	sort.Slice(tids, func(i, j int) bool { return tids[i] < tids[j] })
	for _, t := range tids {
		p := r.pending[t]
		if n, ok := r.majFlt(p.tgid, p.tid); ok && n > p.majFlt {
			p.op.Flags |= capfile.FlagMajor
		}
		_ = r.write(p.op)
	}
	r.pending = map[uint32]*pendingFault{}
}

// majFlt reads thread tid's count of major faults (field 12 of
// /proc/TGID/task/TID/stat, procfs.ProcStat.MajFlt).
func (r *run) majFlt(tgid, tid uint32) (uint64, bool) {
	pfs, err := procfs.NewFS(r.fs.Proc)
	if err != nil {
		return 0, false
	}
	t, err := pfs.Thread(int(tgid), int(tid))
	if err != nil {
		return 0, false
	}
	st, err := t.Stat()
	if err != nil {
		return 0, false
	}
	return uint64(st.MajFlt), true
}

func (r *run) unmap(tgid uint32, addr, length uint64) {
	end := addr + length
	var keep []mapping
	for _, m := range r.maps[tgid] {
		if m.end <= addr || m.start >= end {
			keep = append(keep, m)
			continue
		}
		if m.start < addr {
			keep = append(keep, mapping{start: m.start, end: addr, pgoff: m.pgoff, file: m.file})
		}
		if m.end > end {
			keep = append(keep, mapping{start: end, end: m.end, pgoff: m.pgoff + (end - m.start), file: m.file})
		}
	}
	r.maps[tgid] = keep
}

func (r *run) mappingAt(tgid uint32, addr uint64) (mapping, bool) {
	for _, m := range r.maps[tgid] {
		if addr >= m.start && addr < m.end {
			return m, true
		}
	}
	return mapping{}, false
}

// madvise records the part of [addr, addr+len) that maps a captured file.
func (r *run) madvise(e *iotrace.Event, start, end uint64) error {
	for _, m := range r.maps[e.Tgid] {
		lo, hi := max(m.start, e.Offset), min(m.end, e.Offset+e.Length)
		if lo >= hi {
			continue
		}
		f := r.file(m.file.dev, m.file.ino, start, nil)
		return r.write(capfile.Op{Kind: capfile.OpMadvise, Thread: r.thread(e.Tgid, e.Tid), File: f.f.ID, Offset: m.pgoff + (lo - m.start),
			Length: hi - lo, Arg: e.Arg, Result: min(e.Ret, 0), Start: start, End: end})
	}
	return nil
}

func (r *run) block(e *iotrace.Event) error {
	if r.records >= r.o.MaxRecords {
		r.limitHit = true
		return nil
	}
	q := r.req
	b := capfile.Block{Device: e.Dev, Sector: e.Offset, Bytes: uint32(e.Length), Issue: r.rel(e.Start), Error: int32(e.Ret)}
	switch op := q.Op(e.Arg); op {
	case q.Read:
		b.Op = capfile.BlockRead
	case q.Write:
		b.Op = capfile.BlockWrite
	case q.Flush:
		b.Op = capfile.BlockFlush
	case q.Discard:
		b.Op = capfile.BlockDiscard
	case q.WriteZeroes:
		b.Op = capfile.BlockWriteZeroes
	default:
		b.Op = capfile.BlockOther
	}
	for _, f := range []struct{ mask, flag uint32 }{{q.Sync, capfile.BlockFlagSync}, {q.FUA, capfile.BlockFlagFUA},
		{q.Preflush, capfile.BlockFlagPreflush}, {q.Meta, capfile.BlockFlagMeta}, {q.Rahead, capfile.BlockFlagReadahead}} {
		if f.mask != 0 && e.Arg&f.mask != 0 {
			b.Flags |= f.flag
		}
	}
	if b.Bytes == 0 {
		// A data-less request (an empty flush) has no sector: the kernel
		// leaves it at -1 (blk_rq_pos of a flush request).
		b.Sector = 0
	}
	if e.End == 0 {
		b.Flags |= capfile.BlockFlagNoComplete
	} else if e.End > e.Start {
		b.Latency = e.End - e.Start
	}
	if b.Op == capfile.BlockRead {
		r.blockReadAt(b.Issue)
	}
	r.records++
	if err := r.w.Block.Write(b); err != nil {
		return fmt.Errorf("write a block record: %w", err)
	}
	return nil
}
