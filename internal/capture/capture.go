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
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/bpf/iotrace"
	"github.com/slowpath/slowpath/internal/capture/capfile"
	"github.com/slowpath/slowpath/internal/hostfs"
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

// Run captures into outDir (new or empty) until opts.Duration passed, ctx is
// done, or opts.MaxRecords were written.
func Run(ctx context.Context, opts Options, outDir string) (*Result, error) {
	opts = opts.withDefaults()
	if err := iotrace.CheckPrivileges(); err != nil {
		return nil, fmt.Errorf("check privileges: %w", err)
	}
	if err := checkOutDir(outDir); err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	t, err := findTarget(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("capture %s: %w", opts.Mount, err)
	}
	r, err := newRun(opts, t)
	if err != nil {
		return nil, fmt.Errorf("capture %s: %w", opts.Mount, err)
	}
	defer r.closeHandles()
	// Files and mappings the processes hold before the capture: their
	// residency now is the residency at the start.
	mappers := []uint32{}
	if !opts.BlockOnly {
		mappers = r.scanProcesses(t.major, t.minor)
	}

	var ruBefore, ruReady, ruAfter unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ruBefore)
	r.startMono = monoNow()
	tr, err := iotrace.Start(iotrace.Options{Major: t.major, Minor: t.minor, PID: opts.PID, Comm: opts.Comm,
		Cgroup: opts.Cgroup, Devices: t.devs, BlockOnly: opts.BlockOnly, RingBytes: opts.RingBytes, Mappers: mappers,
		PageFaultUser: opts.pageFaultUser, Log: opts.Log})
	if err != nil {
		return nil, fmt.Errorf("capture %s: start the tracer: %w", opts.Mount, err)
	}
	defer tr.Close()
	r.req = tr.Kernel.Req
	m := t.manifest
	m.Kernel.FaultSource = capfile.FaultSourceNone
	if !opts.BlockOnly {
		m.Kernel.FaultSource = tr.FaultSource
		m.Kernel.AIO = capfile.AsyncCaptured
		m.Kernel.IOURing = uringState(r.fs, tr.Kernel.HasURing)
		if m.Kernel.IOURing != capfile.AsyncCaptured && opts.Log != nil {
			opts.Log("io_uring I/O is not captured: " + m.Kernel.IOURing)
		}
	}
	m.Started = time.Now().UTC()
	if r.w, err = capfile.Create(outDir); err != nil {
		return nil, fmt.Errorf("capture: create %s: %w", outDir, err)
	}
	finished := false
	defer func() {
		if !finished {
			r.w.Abort()
		}
	}()
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ruReady)
	if opts.Ready != nil {
		opts.Ready()
	}

	res := &Result{Manifest: m}
	if res.Events, err = r.trace(ctx, tr); err != nil {
		return nil, fmt.Errorf("capture %s: %w", opts.Mount, err)
	}
	endMono := monoNow()
	c, err := r.drain(tr, &res.Events)
	if err != nil {
		return nil, fmt.Errorf("capture %s: after the detach: %w", opts.Mount, err)
	}
	res.BPFTime, res.BPFRuns = tr.RunTime()
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ruAfter)
	res.UserCPU, res.SetupCPU = rusageCPU(&ruAfter)-rusageCPU(&ruReady), rusageCPU(&ruReady)-rusageCPU(&ruBefore)

	r.finishManifest(m, endMono, c)
	if err := r.w.Finish(m); err != nil {
		return nil, fmt.Errorf("capture: write %s: %w", outDir, err)
	}
	finished = true
	if c.Dropped > 0 && !opts.AcceptDrops {
		return res, fmt.Errorf("%d events lost, the capture in %s is incomplete: %w", c.Dropped, outDir, ErrDropped)
	}
	return res, nil
}

// withDefaults fills what the zero Options leave open.
func (o Options) withDefaults() Options {
	if o.FS.Proc == "" {
		o.FS = hostfs.Default()
	}
	if o.Mount == "" {
		o.Mount = "/"
	}
	if o.MaxRecords == 0 {
		o.MaxRecords = DefaultMaxRecords
	}
	return o
}

// trace reads events until the deadline passed, ctx is done or the record
// limit is hit, and returns how many it read. The clock and ctx are looked
// at every 100 ms (the reader's deadline when the ring is empty) or every
// 4096 events, not per event: at hundreds of thousands of events a second
// that is most of the cost.
func (r *run) trace(ctx context.Context, tr *iotrace.Tracer) (uint64, error) {
	var deadline time.Time
	if r.o.Duration > 0 {
		deadline = time.Now().Add(r.o.Duration)
	}
	tick := func() time.Time {
		wait := time.Now().Add(100 * time.Millisecond)
		if !deadline.IsZero() && deadline.Before(wait) {
			wait = deadline
		}
		return wait
	}
	var events uint64
	var ev iotrace.Event
	wait := tick()
	tr.SetDeadline(wait)
	for n, stopped := 0, false; !stopped; n++ {
		err := tr.Next(&ev)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			n = -1
		case err != nil:
			return events, fmt.Errorf("read ring buffer: %w", err)
		default:
			events++
			if err := r.handle(&ev); err != nil {
				return events, fmt.Errorf("event %d: %w", events, err)
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
	return events, nil
}

// drain detaches the tracer and records what the kernel handed over before
// the detach, the block requests still in flight (unmatched) and the
// faults still waiting; it adds the events read to *events and returns the
// tracer's counters.
func (r *run) drain(tr *iotrace.Tracer, events *uint64) (iotrace.Counters, error) {
	tr.Detach()
	var ev iotrace.Event
	for !r.limitHit {
		if err := tr.Read(&ev, time.Now().Add(50*time.Millisecond)); err != nil {
			break
		}
		*events++
		if err := r.handle(&ev); err != nil {
			return iotrace.Counters{}, fmt.Errorf("event %d: %w", *events, err)
		}
	}
	inflight, err := tr.InflightBlocks()
	if err != nil {
		return iotrace.Counters{}, fmt.Errorf("read the requests in flight: %w", err)
	}
	for i := range inflight {
		if r.limitHit {
			break
		}
		r.unmatched++
		if err := r.block(&inflight[i]); err != nil {
			return iotrace.Counters{}, fmt.Errorf("request in flight: %w", err)
		}
	}
	r.flushFaults()
	c, err := tr.Counters()
	if err != nil {
		return iotrace.Counters{}, fmt.Errorf("read the tracer's counters: %w", err)
	}
	return c, nil
}

// finishManifest fills what the run learnt: timing, status, event
// counts, threads and files.
func (r *run) finishManifest(m *capfile.Manifest, endMono uint64, c iotrace.Counters) {
	m.StartMonotonicNS = r.startMono
	m.DurationNS = endMono - r.startMono
	if r.limitHit {
		m.Status = capfile.StatusRecordLimit
	}
	m.Events.Dropped = c.Dropped
	m.Events.Unmatched = r.unmatched
	m.Events.AIO, m.Events.IOURing = r.aio, r.uring
	m.Events.RecursionMisses = c.RecursionMisses
	missed := capfile.Missed{Splice: c.Splice, SpliceBytes: c.SpliceBytes, Sendfile: c.Sendfile, SendfileBytes: c.SendfileBytes,
		CopyFileRange: c.CopyFileRange, CopyFileRangeBytes: c.CopyFileRangeBytes, IOURingOther: c.URingOther, AIOOther: c.AIOOther}
	if missed != (capfile.Missed{}) {
		m.Events.Missed = &missed
	}
	m.Events.Faults = r.faults
	m.Threads = r.threadList
	m.Files = r.finishFiles()
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

// MountOf returns the mount point of the filesystem holding dir: the
// highest directory above it on the same device (bind mounts of a
// subdirectory are seen as their own mount point).
func MountOf(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("mount of %s: %w", dir, err)
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", fmt.Errorf("mount of %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(abs, &st); err != nil {
		return "", fmt.Errorf("mount of %s: stat %s: %w", dir, abs, err)
	}
	for abs != "/" {
		parent := filepath.Dir(abs)
		var pst unix.Stat_t
		if err := unix.Stat(parent, &pst); err != nil {
			return "", fmt.Errorf("mount of %s: stat %s: %w", dir, parent, err)
		}
		if pst.Dev != st.Dev {
			return abs, nil
		}
		abs = parent
	}
	return "/", nil
}
