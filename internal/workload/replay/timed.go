package replay

import (
	"context"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/stats"
	"github.com/slowpath/slowpath/internal/workload/timerslack"
)

// Timing is how closely a timed replay kept its schedule: how late each
// operation was issued after its captured time since the start.
type Timing struct {
	Ops       uint64
	LateP50NS int64
	LateP99NS int64
	LateMaxNS int64
}

// Outcome is what a timed replay did.
type Outcome struct {
	// Streams: per thread and operation (read, write, sync; a thread's
	// mapped-page faults are the stream NAME-mmap, op read).
	Streams []benchresult.Stream
	Timing  Timing
	Elapsed time.Duration
	// BeyondEOF counts faults not replayed: their page was past the end
	// of the file when the replay reached them (a write the capture saw
	// before them had not happened yet in the replay).
	BeyondEOF uint64
}

// Replay replays t in dir (laid out by Layout) on an absolute schedule:
// each thread has its own OS thread and issues every operation at the
// replay's start plus the operation's captured time, or at once when it is
// already late. Lateness does not accumulate as with fio's relative delays
// (docs/replay.md). Reads and writes are pread/pwrite, syncs fsync and
// fdatasync, faults a load of one byte of the page through a shared
// mapping of the file. On a cancelled ctx it stops and returns what was
// done with ctx's error.
func Replay(ctx context.Context, dir string, t *Trace) (*Outcome, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	rs := make([]*threadRun, len(t.Threads))
	for i := range t.Threads {
		rs[i] = &threadRun{th: &t.Threads[i], t: t, root: root}
	}
	// Set up (open, map, buffers) before the clock starts.
	for _, r := range rs {
		if err := r.setup(); err != nil {
			for _, r := range rs {
				r.close()
			}
			return nil, err
		}
	}
	defer func() {
		for _, r := range rs {
			r.close()
		}
	}()
	// A goroutine locked to its OS thread still needs one of GOMAXPROCS
	// Ps to run Go code: each return from clock_nanosleep waits for a P
	// when the others are busy (the block recorder, the GC), and with
	// GOMAXPROCS at the CPU count every replayed thread stalled at once,
	// by up to 1.2 s on this 2-CPU host (docs/replay.md). The service's
	// threads wait for a CPU only; so does the replay with a P for each
	// of its threads besides the ones there were.
	defer setProcs(runtime.GOMAXPROCS(0) + len(rs))()
	start := timerslack.Now()
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Go(func() { r.run(ctx, start) })
	}
	wg.Wait()
	out := &Outcome{Elapsed: time.Duration(timerslack.Now() - start)}
	var late []int64
	for _, r := range rs {
		out.Streams = append(out.Streams, r.streams()...)
		late = append(late, r.late...)
		out.BeyondEOF += r.beyondEOF
		if r.err != nil && err == nil {
			err = r.err
		}
	}
	slices.Sort(late)
	lp := percentiles(late, 50, 99)
	out.Timing = Timing{Ops: uint64(len(late)), LateP50NS: lp[0], LateP99NS: lp[1]}
	if len(late) > 0 {
		out.Timing.LateMaxNS = late[len(late)-1]
	}
	if err == nil {
		err = ctx.Err()
	}
	return out, err
}

type fileKey struct {
	file   int
	direct bool
}

type threadRun struct {
	th   *Thread
	t    *Trace
	root *os.Root
	fds  map[fileKey]*os.File
	maps map[int][]byte
	buf  []byte
	// Per op kind: latencies in ns, bytes, first issue and last completion.
	lat   [kindMax + 1][]int64
	bytes [kindMax + 1]uint64
	first [kindMax + 1]int64 // monotonic ns
	last  [kindMax + 1]int64
	late  []int64
	sink  byte
	err   error
	// beyondEOF counts faults past the end of their file at replay time.
	beyondEOF uint64
	advised   map[int][]Op // madvise calls per file, for a remapping
}

func (r *threadRun) setup() error {
	r.fds = map[fileKey]*os.File{}
	r.maps = map[int][]byte{}
	var bufLen int64
	for _, o := range r.th.Ops {
		f := r.t.Files[o.File]
		k := fileKey{o.File, o.Direct}
		if o.Kind == Fault || o.Kind == Madvise {
			// Mapped when first touched, at the file's size then: a
			// file the replay itself writes may still be empty now.
			continue
		}
		if o.Kind == Read || o.Kind == Write {
			bufLen = max(bufLen, o.Length)
		}
		if _, ok := r.fds[k]; ok {
			continue
		}
		flag := os.O_RDWR
		if o.Direct {
			flag |= syscall.O_DIRECT
		}
		fh, err := r.root.OpenFile(f.Name, flag, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", f.Name, err)
		}
		r.fds[k] = fh
	}
	if bufLen > 0 {
		// Page-aligned for O_DIRECT; incompressible for writes.
		n := (int(bufLen) + 4095) &^ 4095
		b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return fmt.Errorf("buffer of %d bytes: %w", n, err)
		}
		_, _ = rand.NewChaCha8([32]byte{byte(len(r.th.Name))}).Read(b)
		r.buf = b
	}
	r.late = make([]int64, 0, len(r.th.Ops))
	return nil
}

func (r *threadRun) close() {
	for _, f := range r.fds {
		f.Close()
	}
	for _, m := range r.maps {
		_ = unix.Munmap(m)
	}
	if r.buf != nil {
		_ = unix.Munmap(r.buf)
	}
	r.fds, r.maps, r.buf = nil, nil, nil
}

// setProcs sets GOMAXPROCS to n and returns what undoes it: the runtime's
// default again when it was the default (so it keeps following the CPU
// limit), else the value there was.
func setProcs(n int) func() {
	_, set := os.LookupEnv("GOMAXPROCS")
	prev := runtime.GOMAXPROCS(n)
	return func() {
		if set {
			runtime.GOMAXPROCS(prev)
			return
		}
		runtime.SetDefaultGOMAXPROCS()
	}
}

// sleepUntil sleeps the calling OS thread until the monotonic time at
// (ns), in steps of at most 50 ms so that a cancel is seen. Go's timers
// wake at a millisecond's resolution at best (runtime netpoll rounds a
// shorter wait up to 1 ms); timerslack.SleepUntil is an hrtimer with this
// thread's timer slack (set to 1 ns in run).
func sleepUntil(ctx context.Context, at int64) bool {
	for {
		if ctx.Err() != nil {
			return false
		}
		now := timerslack.Now()
		if now >= at {
			return true
		}
		timerslack.SleepUntil(min(at, now+int64(50*time.Millisecond)))
	}
}

func (r *threadRun) run(ctx context.Context, start int64) {
	// One OS thread per captured thread, as the service had; the sleeps
	// block only this thread and end on time.
	defer timerslack.Lock()()
	for _, o := range r.th.Ops {
		at := start + int64(o.At)
		if !sleepUntil(ctx, at) {
			return
		}
		issue := timerslack.Now()
		if err := r.do(o); err != nil {
			r.err = fmt.Errorf("thread %s: %s of %s at %d: %w", r.th.Name, o.Kind, r.t.Files[o.File].Name, o.Offset, err)
			return
		}
		done := timerslack.Now()
		r.late = append(r.late, issue-at)
		r.lat[o.Kind] = append(r.lat[o.Kind], done-issue)
		if r.first[o.Kind] == 0 {
			r.first[o.Kind] = issue
		}
		r.last[o.Kind] = done
	}
}

func (r *threadRun) do(o Op) error {
	switch o.Kind {
	case Fault:
		m, err := r.mapping(o.File, o.Offset)
		if err != nil || m == nil {
			return err
		}
		r.sink += m[o.Offset]
		r.bytes[Fault] += uint64(min(o.Length, int64(len(m))-o.Offset))
		return nil
	case Madvise:
		m, err := r.mapping(o.File, o.Offset)
		if err != nil || m == nil {
			return err
		}
		// Page-aligned, within the mapping.
		lo := o.Offset &^ 4095
		hi := min(o.Offset+o.Length, int64(len(m)))
		if o.Length == 0 || hi <= lo {
			return nil
		}
		if r.advised == nil {
			r.advised = map[int][]Op{}
		}
		r.advised[o.File] = append(r.advised[o.File], o)
		return unix.Madvise(m[lo:hi], int(o.Advice))
	case Fadvise:
		return unix.Fadvise(int(r.fds[fileKey{o.File, o.Direct}].Fd()), o.Offset, o.Length, int(o.Advice))
	case Fsync:
		return r.fds[fileKey{o.File, o.Direct}].Sync()
	case Fdatasync:
		return unix.Fdatasync(int(r.fds[fileKey{o.File, o.Direct}].Fd()))
	}
	f := r.fds[fileKey{o.File, o.Direct}]
	b := r.buf[:o.Length]
	var n int
	var err error
	if o.Kind == Read {
		n, err = unix.Pread(int(f.Fd()), b, o.Offset)
	} else {
		n, err = unix.Pwrite(int(f.Fd()), b, o.Offset)
	}
	r.bytes[o.Kind] += uint64(max(n, 0))
	return err
}

// mapping returns the thread's shared mapping of file, mapped (again) at
// the file's current size when off is beyond the mapping so far; nil when
// off is beyond the end of the file (touching it would be SIGBUS).
func (r *threadRun) mapping(file int, off int64) ([]byte, error) {
	if m := r.maps[file]; off < int64(len(m)) {
		return m, nil
	}
	name := r.t.Files[file].Name
	fh, err := r.root.Open(name)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if off >= st.Size() {
		r.beyondEOF++
		return nil, nil
	}
	if m := r.maps[file]; m != nil {
		_ = unix.Munmap(m)
		delete(r.maps, file)
	}
	m, err := unix.Mmap(int(fh.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", name, err)
	}
	r.maps[file] = m
	// The advice given to the old mapping holds for the new one.
	for _, a := range r.advised[file] {
		if hi := min(a.Offset+a.Length, int64(len(m))); hi > a.Offset&^4095 {
			_ = unix.Madvise(m[a.Offset&^4095:hi], int(a.Advice))
		}
	}
	return m, nil
}

func (r *threadRun) streams() []benchresult.Stream {
	var out []benchresult.Stream
	for _, g := range []struct {
		kinds  []Kind
		suffix string
		op     string
	}{{[]Kind{Read}, "", "read"}, {[]Kind{Write}, "", "write"}, {[]Kind{Fsync, Fdatasync}, "", "sync"}, {[]Kind{Fault}, "-mmap", "read"}} {
		var l []int64
		var bytes uint64
		var first, last int64
		for _, k := range g.kinds {
			if len(r.lat[k]) == 0 {
				continue
			}
			l = append(l, r.lat[k]...)
			bytes += r.bytes[k]
			if first == 0 || r.first[k] < first {
				first = r.first[k]
			}
			last = max(last, r.last[k])
		}
		if len(l) == 0 {
			continue
		}
		rt := time.Duration(last - first)
		s := benchresult.Stream{Name: r.th.Name + g.suffix, Op: g.op, Jobs: 1, Ops: uint64(len(l)), Bytes: bytes, RuntimeNS: int64(rt), Latency: latencyOf(l)}
		if rt > 0 {
			s.OpsPerSec = float64(len(l)) / rt.Seconds()
			s.BytesPerSec = float64(bytes) / rt.Seconds()
		}
		out = append(out, s)
	}
	return out
}

// latencyOf summarises exact latencies (ns) with fio's percentiles.
func latencyOf(l []int64) *benchresult.Latency {
	l = slices.Clone(l)
	slices.Sort(l)
	var sum float64
	for _, v := range l {
		sum += float64(v)
	}
	out := &benchresult.Latency{Count: uint64(len(l)), MinNS: l[0], MaxNS: l[len(l)-1], MeanNS: sum / float64(len(l))}
	ps := []float64{1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99}
	for i, v := range percentiles(l, ps...) {
		out.Percentiles = append(out.Percentiles, benchresult.Percentile{P: ps[i], ValueNS: v})
	}
	// The histogram in fio's scheme (at most 1/64 relative error), so
	// runs merge with each other as fio's do.
	h := &benchresult.Histogram{}
	for _, v := range l {
		b := binOf(v)
		if n := len(h.Bins); n > 0 && h.Bins[n-1].ValueNS == b {
			h.Bins[n-1].Count++
		} else {
			h.Bins = append(h.Bins, benchresult.Bin{ValueNS: b, Count: 1})
		}
	}
	out.Histogram = h
	return out
}

// binOf keeps v's 7 most significant bits: a bin at most 1/64 below v.
func binOf(v int64) int64 {
	if v < 128 {
		return max(v, 0)
	}
	shift := bits.Len64(uint64(v)) - 7
	return v >> shift << shift
}

// percentiles are stats' quantiles p/100 of exact samples (ns), in the
// order asked; 0 for none.
func percentiles(samples []int64, ps ...float64) []int64 {
	v := make([]float64, len(samples))
	for i, x := range samples {
		v[i] = float64(x)
	}
	h := stats.Exact(v)
	out := make([]int64, len(ps))
	for i, p := range ps {
		if q, err := h.Quantile(p / 100); err == nil {
			out[i] = int64(q)
		}
	}
	return out
}
