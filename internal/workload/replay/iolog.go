package replay

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/slowpath/slowpath/internal/workload/fio"
)

// Mode is how a replay keeps time.
type Mode string

// Modes of a replay.
const (
	// Timed issues each operation at its captured time since the start
	// (same offered load: latency is the answer), with slowpath's own
	// replayer (Replayer).
	Timed Mode = "timed"
	// AFAP issues each thread's operations back to back, as fast as
	// possible (throughput is the answer), with fio (replay_no_stall).
	AFAP Mode = "afap"
	// Span is AFAP for as long as the service was busy: a thread that was
	// still issuing I/O when the capture ended (Trace.Busy) repeats its
	// operations, from the first, for as long as it was busy in the
	// capture; the others run once. A busy thread is bound by time, as a
	// service's threads (and fio's time-based jobs) are, so on a faster
	// configuration it does more, and the mix of I/Os follows the replay's
	// speed as the service's would: an AFAP replay ends a busy thread
	// after the capture's count, which a faster configuration reaches
	// early (docs/replay.md).
	Span Mode = "span"
	// FioTimed is fio's own timed replay: bench export's second job file,
	// for a vendor with fio alone (docs/replay.md measures its drift).
	FioTimed Mode = "fio-timed"
)

// Stream is one fio job of a replay: one thread's operations of one
// class. fio sets O_DIRECT per job, so a thread that used both buffered
// and direct files is two jobs.
type Stream struct {
	Name   string // t0001, t0001-direct
	Thread int    // index into Trace.Threads
	Direct bool
	Ops    []Op
	// Engine and Depth: the thread's asynchronous engine and queue depth
	// (Thread.Engine, Thread.Depth), replayed as fio's ioengine and iodepth.
	Engine string
	Depth  int
	// Fadvise is fio's fadvise_hint for the stream ("random",
	// "sequential"): the thread's last POSIX_FADV_RANDOM or
	// POSIX_FADV_SEQUENTIAL; "": the kernel's default readahead.
	Fadvise string
	// Repeat and Runtime: a span replay's busy thread repeats its
	// operations Repeat times, cut at Runtime (0: once, to the end).
	Repeat  int
	Runtime time.Duration
}

// IologName is the stream's iolog file name, next to the job file.
func (s Stream) IologName() string { return s.Name + ".iolog" }

// Streams splits t's threads into fio jobs. Faults are replayed by fio as
// preads of the page: fio 3.33's mmap engine cannot replay an iolog (it
// maps io_size bytes, which is 0 for a file an iolog adds: EINVAL,
// engines/mmap.c fio_mmapio_prep_full), so only the timed replayer maps
// files.
func (t *Trace) Streams() []Stream {
	var out []Stream
	for i, th := range t.Threads {
		var buffered, direct []Op
		hint := ""
		for _, o := range th.Ops {
			if o.Kind == Fadvise && o.Advice <= 2 {
				// POSIX_FADV_NORMAL 0, RANDOM 1, SEQUENTIAL 2
				// (include/uapi/linux/fadvise.h) set the open file's
				// readahead whatever the range (mm/fadvise.c): fio's own
				// jobs advise so by default (fadvise_hint=1), and the
				// readahead they turn off would otherwise be most of a
				// buffered replay's block requests.
				hint = map[uint32]string{1: "random", 2: "sequential"}[o.Advice]
			}
			if o.Kind == Fadvise || o.Kind == Madvise {
				continue // no iolog action
			}
			if o.Direct {
				direct = append(direct, o)
			} else {
				buffered = append(buffered, o)
			}
		}
		// fio refuses an iolog with no read or write ("failed
		// initializing iolog", EINVAL, fio 3.33 iolog.c read_iolog2): a
		// half with only syncs (fdatasync of files InnoDB opened
		// O_DIRECT, issued by a thread whose I/O the other half holds)
		// joins the other, and a thread with syncs alone has nothing fio
		// can replay.
		switch bio, dio := hasIO(buffered), hasIO(direct); {
		case !bio && !dio:
			continue
		case !bio:
			direct, buffered = mergeAt(direct, buffered), nil
		case !dio:
			buffered, direct = mergeAt(buffered, direct), nil
		}
		if len(buffered) > 0 {
			out = append(out, Stream{Name: th.Name, Thread: i, Ops: buffered, Engine: th.Engine, Depth: th.Depth, Fadvise: hint})
		}
		if len(direct) > 0 {
			out = append(out, Stream{Name: th.Name + "-direct", Thread: i, Direct: true, Ops: direct, Engine: th.Engine, Depth: th.Depth})
		}
	}
	return out
}

// Span replays repeat a busy thread's operations at most maxRepeat times
// and into at most maxSpanOps lines of iolog (about 10 MB, written next to
// the replay's files): a replay more than that much faster than the
// capture ends the thread early.
const (
	maxRepeat  = 16
	maxSpanOps = 1 << 18
)

// StreamsFor are the fio jobs of a replay in mode: Streams, and for a span
// replay the repetition of every busy thread's streams.
func (t *Trace) StreamsFor(mode Mode) []Stream {
	ss := t.Streams()
	if mode != Span {
		return ss
	}
	for i := range ss {
		th := &t.Threads[ss[i].Thread]
		// Busy from the stream's own first operation to the end; a stream
		// that starts at the end has no span to fill (and fio no runtime
		// to stop it by) and runs once.
		span := t.End - ss[i].Ops[0].At
		if !t.Busy(th) || span <= 0 {
			continue
		}
		ss[i].Runtime = span
		ss[i].Repeat = max(1, min(maxRepeat, maxSpanOps/len(ss[i].Ops)))
	}
	return ss
}

// Iolog renders s as an fio version 3 iolog (HOWTO "Trace file format
// v3"). Timestamps are microseconds, not the milliseconds the HOWTO
// suggests: fio writes them with utime_since_now and sleeps them with
// usec_sleep (iolog.c log_io_u, iolog_delay). Each is one more than the
// operation's time: fio takes no delay while the previous timestamp is 0
// (iolog.c delay_since_ttime), so the add at 1 µs makes the first
// operation wait for its own time too.
func (t *Trace) Iolog(s Stream) []byte {
	if s.Repeat > 1 {
		// The repetitions follow each other: each starts one busy span
		// after the last (fio's timestamps must not go back; a span
		// replay runs with replay_no_stall, so they only order).
		var ops []Op
		for r := range s.Repeat {
			for _, o := range s.Ops {
				o.At += time.Duration(r) * max(s.Runtime, time.Microsecond)
				ops = append(ops, o)
			}
		}
		s.Ops, s.Repeat = ops, 1
	}
	var b bytes.Buffer
	b.WriteString("fio version 3 iolog\n")
	used := map[int]bool{}
	var files []int
	for _, o := range s.Ops {
		if !used[o.File] {
			used[o.File] = true
			files = append(files, o.File)
		}
	}
	for _, f := range files {
		fmt.Fprintf(&b, "1 %s add\n", t.Files[f].Name)
	}
	for _, f := range files {
		fmt.Fprintf(&b, "1 %s open\n", t.Files[f].Name)
	}
	var last int64 = 1
	for _, o := range s.Ops {
		last = 1 + o.At.Microseconds()
		name := t.Files[o.File].Name
		switch o.Kind {
		case Read, Fault:
			fmt.Fprintf(&b, "%d %s read %d %d\n", last, name, o.Offset, o.Length)
		case Write:
			fmt.Fprintf(&b, "%d %s write %d %d\n", last, name, o.Offset, o.Length)
		case Fsync:
			fmt.Fprintf(&b, "%d %s sync 0 0\n", last, name)
		case Fdatasync:
			fmt.Fprintf(&b, "%d %s datasync 0 0\n", last, name)
		}
	}
	for _, f := range files {
		fmt.Fprintf(&b, "%d %s close\n", last, t.Files[f].Name)
	}
	return b.Bytes()
}

// JobFile is the fio job file replaying streams, run in the directory
// holding the files and the iologs (relative names only: fio 3.33
// crashes on read_iolog with directory= and thread, so neither is used).
// invalidate=0 keeps the residency Layout restored; fadvise_hint=0 leaves
// readahead to the kernel as the service had it.
func JobFile(streams []Stream, mode Mode) ([]byte, error) {
	global := []fio.Option{{Key: "ioengine", Value: "psync"}, {Key: "invalidate", Value: "0"}, {Key: "fadvise_hint", Value: "0"},
		{Key: "iodepth", Value: "1"}}
	switch mode {
	case AFAP, Span:
		global = append(global, fio.Option{Key: "replay_no_stall", Value: "1"})
	case FioTimed:
	default:
		return nil, fmt.Errorf("replay mode %q has no fio job file (timed replays run in slowpath)", mode)
	}
	f := fio.File{Global: global}
	for _, s := range streams {
		opts := []fio.Option{{Key: "read_iolog", Value: s.IologName()}, {Key: "direct", Value: strconv.Itoa(map[bool]int{true: 1}[s.Direct])}}
		if s.Fadvise != "" {
			opts = append(opts, fio.Option{Key: "fadvise_hint", Value: s.Fadvise})
		}
		if s.Engine != "" {
			// The captured engine and queue depth: a thread that kept 32
			// requests in flight is replayed with 32 in flight.
			opts = append(opts, fio.Option{Key: "ioengine", Value: s.Engine}, fio.Option{Key: "iodepth", Value: strconv.Itoa(max(s.Depth, 1))})
		}
		if s.Runtime > 0 {
			// Read gradually: a repeated iolog read whole before the job
			// starts would put its parsing in the CPU per I/O of the few
			// operations the runtime lets through.
			opts = append(opts, fio.Option{Key: "runtime", Value: strconv.FormatInt(max(s.Runtime.Microseconds(), 1), 10) + "us"},
				fio.Option{Key: "read_iolog_chunked", Value: "1"})
		}
		f.Jobs = append(f.Jobs, fio.Section{Name: s.Name, Options: opts})
	}
	return f.Render()
}

func hasIO(ops []Op) bool {
	return slices.ContainsFunc(ops, func(o Op) bool { return o.Kind == Read || o.Kind == Write || o.Kind == Fault })
}

// mergeAt merges b into a, both in time order, keeping time order.
func mergeAt(a, b []Op) []Op {
	out := append(slices.Clip(a), b...)
	slices.SortStableFunc(out, func(x, y Op) int { return cmp.Compare(x.At, y.At) })
	return out
}
