// Package capture runs `slowpath capture`: it loads the eBPF tracer
// (internal/bpf/iotrace) on one mount and on the block devices beneath it,
// and streams what it sees into a capture directory (internal/capture/capfile,
// docs/capture.md), in memory bounded by the number of threads, files and
// mappings, never by the number of events.
package capture

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/bpf/iotrace"
	"github.com/slowpath/slowpath/internal/capture/capfile"
	"github.com/slowpath/slowpath/internal/collect/storage"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Options say what to capture.
type Options struct {
	// Mount is the mount point whose files are captured; "": /.
	Mount string
	// Duration bounds the capture; 0: until ctx is done.
	Duration time.Duration
	// Filters: a process (all its threads), a cgroup v2 directory (and its
	// descendants), a thread name. Zero values do not filter.
	PID    uint32
	Cgroup string
	Comm   string
	// BlockOnly records block requests only (no syscalls, no faults).
	BlockOnly bool
	// MaxRecords bounds the records of both streams; 0: DefaultMaxRecords.
	MaxRecords uint64
	// AcceptDrops keeps a capture that lost events without failing.
	AcceptDrops bool
	// RingBytes is the kernel ring buffer's size; 0: 16 MiB.
	RingBytes uint32
	// Ready, when set, is called once the tracer is attached.
	Ready func()
	// Log, when set, is told what the capture did beside recording, such
	// as mounting a private tracefs.
	Log func(string)
	// SlowpathVersion goes into the manifest.
	SlowpathVersion string
	// FS are the host roots; zero: the live host.
	FS hostfs.FS

	// pageFaultUser forces the faults of kernels before 6.17 (tests).
	pageFaultUser bool
}

// DefaultMaxRecords bounds a capture to about 500 MB on disk (records
// take 20-25 bytes; see docs/capture.md).
const DefaultMaxRecords = 20_000_000

// RecordBytes is what the free-space check counts per record: records take
// 20-21 bytes on average in the captures measured (docs/capture.md), a
// file-level record at most 71; 32 leaves room for larger offsets and
// longer captures without refusing every small disk.
const RecordBytes = 32

// Errors a caller may want to tell apart.
var (
	ErrNotMountPoint = errors.New("not a mount point: give the directory a filesystem is mounted on (see findmnt)")
	ErrDropped       = errors.New("the capture lost events (the ring buffer was full): capture again with a larger --ring-size, a narrower filter, or --accept-drops to keep it as it is")
)

// Result is what a capture did, beyond its directory.
type Result struct {
	Manifest *capfile.Manifest
	// SetupCPU is this process's CPU time (user + system) to load, verify
	// and attach the programs; UserCPU its CPU time from then to the end:
	// what a running capture costs. During the
	// capture; BPFTime the kernel time in the capture's programs when
	// kernel.bpf_stats_enabled is on, else 0; BPFRuns their runs.
	UserCPU  time.Duration
	SetupCPU time.Duration
	BPFTime  time.Duration
	BPFRuns  uint64
	// Events counts what the kernel handed over (records and events that
	// are not records: munmaps, madvise of other memory).
	Events uint64
}

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
	unmatched  uint64
	limitHit   bool
}

type pendingFault struct {
	op     capfile.Op
	majFlt uint64
	tgid   uint32
	tid    uint32
}

// Run captures into outDir (new or empty) until opts.Duration passed, ctx is
// done, or opts.MaxRecords were written.
func Run(ctx context.Context, opts Options, outDir string) (*Result, error) {
	if opts.FS.Proc == "" {
		opts.FS = hostfs.Default()
	}
	if opts.Mount == "" {
		opts.Mount = "/"
	}
	if opts.MaxRecords == 0 {
		opts.MaxRecords = DefaultMaxRecords
	}
	if err := iotrace.CheckPrivileges(); err != nil {
		return nil, err
	}
	if err := checkOutDir(outDir); err != nil {
		return nil, err
	}
	mountAbs, err := filepath.Abs(opts.Mount)
	if err != nil {
		return nil, err
	}
	// The storage path as doctor models it.
	snap := &snapshot.Snapshot{}
	storage.Collect(ctx, opts.FS, snap)
	mnt := findMount(snap, mountAbs)
	if mnt == nil {
		return nil, fmt.Errorf("%s: %w", opts.Mount, ErrNotMountPoint)
	}
	var major, minor uint32
	if _, err := fmt.Sscanf(mnt.MajorMinor, "%d:%d", &major, &minor); err != nil {
		return nil, fmt.Errorf("mount %s: device %q: %w", opts.Mount, mnt.MajorMinor, err)
	}
	m := &capfile.Manifest{
		SlowpathVersion: opts.SlowpathVersion,
		Status:          capfile.StatusComplete,
		Filters: capfile.Filters{PID: opts.PID, Comm: opts.Comm, MountDevice: mnt.MajorMinor,
			FSType: mnt.FSType, BlockOnly: opts.BlockOnly},
		Limits: capfile.Limits{DurationNS: uint64(opts.Duration), MaxRecords: opts.MaxRecords},
	}
	if opts.Cgroup != "" {
		var st unix.Stat_t
		if err := unix.Stat(opts.Cgroup, &st); err != nil {
			return nil, fmt.Errorf("cgroup %s: %w", opts.Cgroup, err)
		}
		m.Filters.CgroupID = st.Ino
	}
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	m.Kernel.Release = unix.ByteSliceToString(uts.Release[:])
	model := storagemodel.Build(snap)
	var devs []iotrace.BlockDevice
	if model != nil {
		for i := range model.Paths {
			if model.Paths[i].MountPoint == mnt.MountPoint {
				m.Path = capfile.RedactPath(model.Paths[i])
				m.Devices, devs = devicesOf(opts.FS, &model.Paths[i])
				break
			}
		}
	}
	m.System = readSystem(opts.FS)

	r := &run{o: opts, fs: opts.FS, mountDev: major<<20 | minor, pageSize: m.System.PageSize,
		files: map[fileKey]*fileState{}, candidates: map[fileKey]*fileState{}, threads: map[uint32]uint32{}, procs: map[uint32]uint32{},
		maps: map[uint32][]mapping{}, pending: map[uint32]*pendingFault{}}
	defer r.closeHandles()
	if opts.Cgroup != "" {
		if r.cgroupRel, err = cgroupRel(opts.FS, opts.Cgroup); err != nil {
			return nil, err
		}
	}

	// Files and mappings the processes hold before the capture: their
	// residency now is the residency at the start.
	mappers := []uint32{}
	if !opts.BlockOnly {
		mappers = r.scanProcesses(major, minor)
	}

	var ruBefore unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ruBefore)
	r.startMono = monoNow()
	tr, err := iotrace.Start(iotrace.Options{Major: major, Minor: minor, PID: opts.PID, Comm: opts.Comm,
		Cgroup: opts.Cgroup, Devices: devs, BlockOnly: opts.BlockOnly, RingBytes: opts.RingBytes, Mappers: mappers,
		PageFaultUser: opts.pageFaultUser, Log: opts.Log})
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	r.req = tr.Kernel.Req
	m.Kernel.FaultSource = capfile.FaultSourceNone
	if !opts.BlockOnly {
		m.Kernel.FaultSource = tr.FaultSource
	}
	started := time.Now().UTC()
	if r.w, err = capfile.Create(outDir); err != nil {
		return nil, err
	}
	finished := false
	defer func() {
		if !finished {
			r.w.Abort()
		}
	}()
	var ruReady unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ruReady)
	if opts.Ready != nil {
		opts.Ready()
	}

	var deadline time.Time
	if opts.Duration > 0 {
		deadline = time.Now().Add(opts.Duration)
	}
	var events uint64
	var ev iotrace.Event
	stopped := false
	// The clock and ctx are looked at every 100 ms (the reader's deadline
	// when the ring is empty) or every 4096 events, not per event: at
	// hundreds of thousands of events a second that is most of the cost.
	tick := func() time.Time {
		wait := time.Now().Add(100 * time.Millisecond)
		if !deadline.IsZero() && deadline.Before(wait) {
			wait = deadline
		}
		return wait
	}
	wait := tick()
	tr.SetDeadline(wait)
	for n := 0; !stopped; n++ {
		err := tr.Next(&ev)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			n = -1
		case err != nil:
			return nil, fmt.Errorf("read ring buffer: %w", err)
		default:
			events++
			if err := r.handle(&ev); err != nil {
				return nil, err
			}
		}
		if r.limitHit {
			break
		}
		if n < 0 || n%4096 == 4095 {
			now := time.Now()
			if ctx.Err() != nil || (!deadline.IsZero() && !now.Before(deadline)) {
				stopped = true
			}
			if !now.Before(wait) {
				wait = tick()
				tr.SetDeadline(wait)
			}
		}
	}
	endMono := monoNow()
	tr.Detach()
	// What the kernel handed over before the detach.
	for !r.limitHit {
		err := tr.Read(&ev, time.Now().Add(50*time.Millisecond))
		if err != nil {
			break
		}
		events++
		if err := r.handle(&ev); err != nil {
			return nil, err
		}
	}
	inflight, err := tr.InflightBlocks()
	if err != nil {
		return nil, err
	}
	for i := range inflight {
		if r.limitHit {
			break
		}
		r.unmatched++
		if err := r.block(&inflight[i]); err != nil {
			return nil, err
		}
	}
	r.flushFaults()
	c, err := tr.Counters()
	if err != nil {
		return nil, err
	}
	bpfTime, bpfRuns := tr.RunTime()
	var ruAfter unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ruAfter)

	m.Started = started
	m.StartMonotonicNS = r.startMono
	m.DurationNS = endMono - r.startMono
	if r.limitHit {
		m.Status = capfile.StatusRecordLimit
	}
	m.Events.Dropped = c.Dropped
	m.Events.Unmatched = r.unmatched
	m.Events.Faults = r.faults
	m.Threads = r.threadList
	m.Files = r.finishFiles()
	if err := r.w.Finish(m); err != nil {
		return nil, err
	}
	finished = true
	res := &Result{Manifest: m, Events: events, BPFTime: bpfTime, BPFRuns: bpfRuns,
		UserCPU: rusageCPU(&ruAfter) - rusageCPU(&ruReady), SetupCPU: rusageCPU(&ruReady) - rusageCPU(&ruBefore)}
	if c.Dropped > 0 && !opts.AcceptDrops {
		return res, fmt.Errorf("%d events lost, the capture in %s is incomplete: %w", c.Dropped, outDir, ErrDropped)
	}
	return res, nil
}

func rusageCPU(ru *unix.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func monoNow() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

func checkOutDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	if len(ents) != 0 {
		return fmt.Errorf("%s: %w", dir, capfile.ErrNotEmpty)
	}
	return nil
}

// findMount returns the mount whose mount point is dir; the last one
// mounted there wins, as it hides the others.
func findMount(s *snapshot.Snapshot, dir string) *snapshot.Mount {
	if s.Storage == nil {
		return nil
	}
	var found *snapshot.Mount
	for i := range s.Storage.Mounts {
		if s.Storage.Mounts[i].MountPoint == dir {
			found = &s.Storage.Mounts[i]
		}
	}
	return found
}

// devicesOf lists the block devices of a path whose requests are
// recorded: every layer with a device except partitions (their requests
// are the disk's). A device without blk-mq (no /sys/block/NAME/mq) is
// bio-based.
func devicesOf(fs hostfs.FS, p *storagemodel.Path) ([]capfile.Device, []iotrace.BlockDevice) {
	var out []capfile.Device
	var tr []iotrace.BlockDevice
	seen := map[string]bool{}
	for _, l := range p.Layers {
		if l.Device == "" || l.MajorMinor == "" || l.Kind == storagemodel.LayerPartition || seen[l.MajorMinor] {
			continue
		}
		var major, minor uint32
		if _, err := fmt.Sscanf(l.MajorMinor, "%d:%d", &major, &minor); err != nil {
			continue
		}
		seen[l.MajorMinor] = true
		id := uint32(len(out) + 1)
		_, err := os.Stat(fs.SysPath("block", l.Device, "mq"))
		bio := err != nil
		d := capfile.Device{ID: id, Name: l.Device, MajorMinor: l.MajorMinor, Kind: l.Kind, Source: capfile.BlockSourceRq}
		if bio {
			d.Source = capfile.BlockSourceBio
		}
		if v, err := hostfs.ReadValue(fs.SysPath("block", l.Device, "queue", "read_ahead_kb")); err == nil {
			var kb uint64
			if _, err := fmt.Sscanf(v, "%d", &kb); err == nil {
				d.ReadaheadKB = &kb
			}
		}
		out = append(out, d)
		tr = append(tr, iotrace.BlockDevice{Major: major, Minor: minor, ID: id, Bio: bio})
	}
	return out, tr
}

var sysctlNames = []string{"vm.dirty_ratio", "vm.dirty_background_ratio", "vm.dirty_bytes", "vm.dirty_background_bytes",
	"vm.dirty_expire_centisecs", "vm.dirty_writeback_centisecs", "vm.page-cluster"}

func readSystem(fs hostfs.FS) capfile.System {
	s := capfile.System{PageSize: uint64(os.Getpagesize()), Sysctls: map[string]string{}}
	for _, n := range sysctlNames {
		if v, err := hostfs.ReadValue(fs.ProcPath(append([]string{"sys"}, strings.Split(n, ".")...)...)); err == nil {
			s.Sysctls[n] = v
		}
	}
	data, err := os.ReadFile(fs.ProcPath("meminfo"))
	if err != nil {
		return s
	}
	for _, line := range strings.Split(string(data), "\n") {
		var key string
		var kb uint64
		if n, _ := fmt.Sscanf(line, "%s %d kB", &key, &kb); n != 2 {
			continue
		}
		switch key {
		case "MemTotal:":
			s.MemTotalBytes = kb << 10
		case "MemAvailable:":
			s.MemAvailableBytes = kb << 10
		case "Cached:":
			s.CachedBytes = kb << 10
		case "Dirty:":
			s.DirtyBytes = kb << 10
		}
	}
	return s
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
// sight: open is a way to open it (a /proc fd or map_files link), or nil.
func (r *run) file(dev uint32, ino uint64, open func() *os.File) *fileState {
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

// examine opens a file through open to stat it (and at the start, to read
// its residency).
func (r *run) examine(ino uint64, open func() *os.File, atStart bool) *fileState {
	f := &fileState{f: capfile.File{ResidencyUnknown: true}}
	if open != nil {
		if h := open(); h != nil {
			var st unix.Stat_t
			if unix.Fstat(int(h.Fd()), &st) == nil && st.Ino == ino {
				f.handle = h
				f.f.SizeStartBytes = uint64(st.Size)
				if atStart {
					f.f.Resident, f.f.ResidentPages, f.f.ResidentApprox, f.f.ResidencyUnknown = residency(h, uint64(st.Size), r.pageSize)
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
	return r.w.Ops.Write(o)
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
		f = r.file(e.Dev, e.Ino, nil)
	} else {
		f = r.file(e.Dev, e.Ino, r.openFd(e.Tgid, e.Fd))
	}
	o := capfile.Op{Kind: capfile.OpKind(e.Kind), Thread: tid, File: f.f.ID, Flags: uint32(e.Flags), Offset: e.Offset,
		Length: e.Length, Result: e.Ret, Start: start, End: end}
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

func (r *run) majFlt(tgid, tid uint32) (uint64, bool) {
	data, err := os.ReadFile(r.fs.ProcPath(fmt.Sprint(tgid), "task", fmt.Sprint(tid), "stat"))
	if err != nil {
		return 0, false
	}
	// The name in parentheses may hold spaces: count fields after it.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(string(data[i+1:]))
	// state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
	if len(fields) < 10 {
		return 0, false
	}
	var n uint64
	if _, err := fmt.Sscanf(fields[9], "%d", &n); err != nil {
		return 0, false
	}
	return n, true
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
		f := r.file(m.file.dev, m.file.ino, nil)
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
	r.records++
	return r.w.Block.Write(b)
}

// scanProcesses registers the files on the mount that the selected
// processes hold open or mapped now, with their residency at the start, and
// returns the processes that map such files.
func (r *run) scanProcesses(major, minor uint32) []uint32 {
	ents, err := os.ReadDir(r.fs.Proc)
	if err != nil {
		return nil
	}
	var mappers []uint32
	for _, ent := range ents {
		var pid uint32
		if _, err := fmt.Sscanf(ent.Name(), "%d", &pid); err != nil || fmt.Sprint(pid) != ent.Name() {
			continue
		}
		if r.o.PID != 0 && pid != r.o.PID {
			continue
		}
		if r.o.Cgroup != "" && !r.inCgroup(ent.Name()) {
			continue
		}
		if r.o.Comm != "" {
			c, err := hostfs.ReadValue(r.fs.ProcPath(ent.Name(), "comm"))
			if err != nil || c != r.o.Comm {
				continue
			}
		}
		r.scanFds(pid)
		if r.scanMaps(pid, major, minor) {
			mappers = append(mappers, pid)
		}
	}
	return mappers
}

// inCgroup says whether process pid is in the filter's cgroup or below it.
func (r *run) inCgroup(pid string) bool {
	data, err := os.ReadFile(r.fs.ProcPath(pid, "cgroup"))
	if err != nil || r.cgroupRel == "" {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p == r.cgroupRel || strings.HasPrefix(p, strings.TrimSuffix(r.cgroupRel, "/")+"/")
		}
	}
	return false
}

// cgroupRel returns dir relative to the cgroup2 mount holding it, as
// /proc/PID/cgroup's "0::/path" spells it (the mount is /sys/fs/cgroup, or
// /sys/fs/cgroup/unified on a hybrid host).
func cgroupRel(fs hostfs.FS, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(fs.ProcPath("self", "mounts"))
	if err != nil {
		return "", err
	}
	best := ""
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[2] != "cgroup2" {
			continue
		}
		if (abs == f[1] || strings.HasPrefix(abs, strings.TrimSuffix(f[1], "/")+"/")) && len(f[1]) > len(best) {
			best = f[1]
		}
	}
	if best == "" {
		return "", fmt.Errorf("cgroup %s is not in a cgroup v2 hierarchy (no cgroup2 mount holds it)", dir)
	}
	return "/" + strings.TrimPrefix(strings.TrimPrefix(abs, best), "/"), nil
}

func (r *run) scanFds(pid uint32) {
	dir := r.fs.ProcPath(fmt.Sprint(pid), "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, ent := range ents {
		var st unix.Stat_t
		p := filepath.Join(dir, ent.Name())
		if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		if unix.Major(st.Dev)<<20|unix.Minor(st.Dev) != r.mountDev {
			continue
		}
		r.candidate(st.Ino, func() *os.File {
			h, err := os.Open(p)
			if err != nil {
				return nil
			}
			return h
		})
	}
}

// scanMaps reads /proc/PID/maps for mappings of files on the device and
// registers them; true when there was one.
func (r *run) scanMaps(pid, major, minor uint32) bool {
	data, err := os.ReadFile(r.fs.ProcPath(fmt.Sprint(pid), "maps"))
	if err != nil {
		return false
	}
	want := fmt.Sprintf("%02x:%02x", major, minor)
	found := false
	for _, line := range strings.Split(string(data), "\n") {
		// start-end perms offset dev inode [path]: the path is not read.
		fields := strings.Fields(line)
		if len(fields) < 5 || fields[3] != want {
			continue
		}
		var start, end, off, ino uint64
		if _, err := fmt.Sscanf(fields[0], "%x-%x", &start, &end); err != nil {
			continue
		}
		if _, err := fmt.Sscanf(fields[2], "%x", &off); err != nil {
			continue
		}
		if _, err := fmt.Sscanf(fields[4], "%d", &ino); err != nil || ino == 0 {
			continue
		}
		link := r.fs.ProcPath(fmt.Sprint(pid), "map_files", fields[0])
		r.candidate(ino, func() *os.File {
			h, err := os.Open(link)
			if err != nil {
				return nil
			}
			return h
		})
		r.maps[pid] = append(r.maps[pid], mapping{start: start, end: end, pgoff: off, file: fileKey{r.mountDev, ino}})
		found = true
	}
	return found
}

// residency maps the file and asks mincore which pages are in the page
// cache; mapping without touching reads nothing.
func residency(h *os.File, size, page uint64) (runs [][2]uint64, pages uint64, approx, unknown bool) {
	const chunk = 1 << 30
	for off := uint64(0); off < size; off += chunk {
		n := min(chunk, size-off)
		b, err := unix.Mmap(int(h.Fd()), int64(off), int(n), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return nil, 0, false, true
		}
		vec := make([]byte, (n+page-1)/page)
		err = mincore(b, vec)
		unix.Munmap(b)
		if err != nil {
			return nil, 0, false, true
		}
		first := off / page
		for i, v := range vec {
			if v&1 == 0 {
				continue
			}
			pg := first + uint64(i)
			pages++
			if k := len(runs); k > 0 && runs[k-1][0]+runs[k-1][1] == pg {
				runs[k-1][1]++
			} else {
				runs = append(runs, [2]uint64{pg, 1})
			}
		}
		runtime.KeepAlive(b)
	}
	runs, approx = coarsen(runs, capfile.MaxResidencyRuns)
	pages = 0
	for _, r := range runs {
		pages += r[1]
	}
	return runs, pages, approx, false
}

// mincore(2): golang.org/x/sys/unix has no wrapper.
func mincore(b, vec []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	if e != 0 {
		return e
	}
	return nil
}

// coarsen fills the smallest gaps between runs until at most max remain.
func coarsen(runs [][2]uint64, limit int) ([][2]uint64, bool) {
	if len(runs) <= limit {
		return runs, false
	}
	for gap := uint64(1); len(runs) > limit; gap *= 2 {
		out := runs[:1]
		for _, r := range runs[1:] {
			last := &out[len(out)-1]
			if r[0]-(last[0]+last[1]) <= gap {
				last[1] = r[0] + r[1] - last[0]
			} else {
				out = append(out, r)
			}
		}
		runs = out
	}
	return runs, true
}

// MountOf returns the mount point of the filesystem holding dir: the
// highest directory above it on the same device (bind mounts of a
// subdirectory are seen as their own mount point).
func MountOf(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	abs, err = filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	var st unix.Stat_t
	if err := unix.Stat(abs, &st); err != nil {
		return "", err
	}
	for abs != "/" {
		parent := filepath.Dir(abs)
		var pst unix.Stat_t
		if err := unix.Stat(parent, &pst); err != nil {
			return "", err
		}
		if pst.Dev != st.Dev {
			return abs, nil
		}
		abs = parent
	}
	return "/", nil
}
