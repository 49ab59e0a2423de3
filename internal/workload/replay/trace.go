// Package replay turns a slowpath capture into a workload: the captured
// files recreated at their sizes with incompressible data, the captured
// page-cache residency restored, and the captured operations replayed,
// either timed on an absolute schedule by slowpath's own replayer (timed
// mode) or as fio version 3 iologs, one per thread (as fast as possible,
// and what bench export hands to someone with fio alone). Fidelity
// compares the replay's block-level trace with the capture's.
//
// docs/replay.md says why the timed mode is not fio's: Debian's fio 3.33
// drifts from the schedule by 10-120% of its length.
package replay

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"time"
)

// Kind is what a replayed operation does.
type Kind uint8

// Operations a replay performs.
const (
	Read      Kind = iota + 1 // pread of Length bytes at Offset
	Write                     // pwrite of Length incompressible bytes at Offset
	Fsync                     // fsync
	Fdatasync                 // fdatasync
	Fault                     // a page-cache miss of a mapped file: touch the page at Offset
	Fadvise                   // posix_fadvise(Offset, Length, Advice) on the thread's descriptor
	Madvise                   // madvise(Advice) of the file range Offset+Length in the thread's mapping
	kindMax   = Madvise
)

var kindNames = [...]string{"", "read", "write", "fsync", "fdatasync", "fault", "fadvise", "madvise"}

func (k Kind) String() string {
	if k == 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("kind(%d)", uint8(k))
	}
	return kindNames[k]
}

// Trace is what a replay needs of a capture: its files and, per thread,
// the operations in the order the thread issued them.
type Trace struct {
	Files   []File
	Threads []Thread
	// End is when the capture's last replayed operation ended, since its
	// start: the end of what it saw the service do (the capture itself
	// stops later, by as long as its stop and drain took).
	End time.Duration
}

// File is one captured file under its pseudonymous name.
type File struct {
	Name string // f0001 ...: the capture's pseudonym, never a real name
	Size int64
	// Resident are the byte ranges that were in the page cache when the
	// capture started; the rest is evicted before the replay.
	Resident []Range
}

// Range is a byte range [Offset, Offset+Length).
type Range struct{ Offset, Length int64 }

// Thread is one captured thread's operations, At ascending.
type Thread struct {
	Name string // t0001 ...
	Ops  []Op
	// Engine is how the thread submitted its I/O when it was asynchronous:
	// "libaio" or "io_uring" (fio's ioengine names); "": a syscall per I/O.
	// Depth is the most of its requests it had in flight at once.
	Engine string
	Depth  int
	// LastEnd is when the thread's last replayed operation ended, since
	// the capture's start.
	LastEnd time.Duration
}

// Busy says whether th was still issuing I/O at the end of what the
// capture saw: its last operation ended within a twentieth of End (at
// least 10 ms) of End, the end of the last operation of any thread. Such
// a thread is taken as bound by time (a service's threads while it runs,
// a time-based job's), the others as bound by their work. The last thread
// to finish is therefore always busy, also in a batch where every thread
// was bound by its work (a single-threaded capture too): replay those
// with replay-afap (docs/replay.md).
func (t *Trace) Busy(th *Thread) bool {
	if t.End <= 0 || len(th.Ops) == 0 {
		return false
	}
	return th.LastEnd >= t.End-max(t.End/20, 10*time.Millisecond)
}

// Op is one operation: File indexes Trace.Files, At is the time since the
// capture's start at which the thread issued it.
type Op struct {
	Kind   Kind
	File   int
	Offset int64
	Length int64
	At     time.Duration
	// Direct: the file was open with O_DIRECT for this operation.
	Direct bool
	// Advice of a Fadvise or Madvise (POSIX_FADV_*, MADV_*).
	Advice uint32
}

// ErrInvalid is wrapped by Validate: the trace cannot be replayed as it is.
var ErrInvalid = errors.New("capture cannot be replayed")

var pseudonym = regexp.MustCompile(`^[ft][0-9]{4,9}$`)

// MaxOpLength bounds one read or write (a buffer of that size per thread).
const MaxOpLength = 64 << 20

// Validate checks what the replay relies on: names that are pseudonyms
// (they become file names in the run's directory and words in iologs),
// operations inside their files, times in order.
func (t *Trace) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
	}
	if len(t.Files) == 0 || len(t.Threads) == 0 {
		return bad("no files or no threads: capture a workload that does I/O")
	}
	seen := map[string]bool{}
	for i, f := range t.Files {
		if !pseudonym.MatchString(f.Name) || f.Name[0] != 'f' {
			return bad("file %d: name %q is not a pseudonym like f0001", i+1, f.Name)
		}
		if seen[f.Name] {
			return bad("file name %s twice", f.Name)
		}
		seen[f.Name] = true
		if f.Size < 0 {
			return bad("file %s: size %d", f.Name, f.Size)
		}
		for _, r := range f.Resident {
			if r.Offset < 0 || r.Length <= 0 || r.Offset > f.Size-r.Length {
				return bad("file %s: resident range %d+%d outside its %d bytes", f.Name, r.Offset, r.Length, f.Size)
			}
		}
	}
	for _, th := range t.Threads {
		if !pseudonym.MatchString(th.Name) || th.Name[0] != 't' || seen[th.Name] {
			return bad("thread name %q is not a pseudonym like t0001", th.Name)
		}
		seen[th.Name] = true
		var last time.Duration
		for j, o := range th.Ops {
			if o.Kind < Read || o.Kind > kindMax {
				return bad("thread %s op %d: unknown kind %d", th.Name, j, o.Kind)
			}
			if o.File < 0 || o.File >= len(t.Files) {
				return bad("thread %s op %d: file index %d of %d files", th.Name, j, o.File, len(t.Files))
			}
			if o.At < last || o.At < 0 {
				return bad("thread %s op %d: at %v before the previous %v", th.Name, j, o.At, last)
			}
			last = o.At
			if o.Kind == Fsync || o.Kind == Fdatasync {
				continue
			}
			if o.Kind == Fadvise || o.Kind == Madvise {
				// Length 0 is "to the end" for fadvise.
				if o.Offset < 0 || o.Length < 0 || o.Offset > math.MaxInt64-o.Length || !adviceOK(o) {
					return bad("thread %s op %d: %s %d of %d bytes at %d", th.Name, j, o.Kind, o.Advice, o.Length, o.Offset)
				}
				continue
			}
			// Reads past the end are short, as they were; writes may
			// extend the file (Space counts them).
			if o.Offset < 0 || o.Length <= 0 || o.Length > MaxOpLength || o.Offset > math.MaxInt64-o.Length {
				return bad("thread %s op %d: %s of %d bytes at %d (at most %d bytes at an offset below 2^63)", th.Name, j, o.Kind, o.Length, o.Offset, MaxOpLength)
			}
		}
	}
	// Advice alone is nothing to replay or to measure, and the export
	// would be an fio job file without jobs.
	if len(t.Streams()) == 0 {
		return bad("no read, write or sync in any thread: capture a workload that does I/O")
	}
	return nil
}

// Bytes is the sum of the files' sizes: what the replay lays out.
func (t *Trace) Bytes() int64 {
	var n int64
	for _, f := range t.Files {
		n += f.Size
	}
	return n
}

// Space is what the replay needs on the target at most: each file at its
// size or as far as its writes reach, whichever is larger. Validate first.
func (t *Trace) Space() uint64 {
	end := make([]int64, len(t.Files))
	for i, f := range t.Files {
		end[i] = f.Size
	}
	for _, th := range t.Threads {
		for _, o := range th.Ops {
			if o.Kind == Write {
				end[o.File] = max(end[o.File], o.Offset+o.Length)
			}
		}
	}
	var n uint64
	for _, e := range end {
		n += uint64(e)
	}
	return n
}

// Span is the time from the capture's start to the last operation.
func (t *Trace) Span() time.Duration {
	var s time.Duration
	for _, th := range t.Threads {
		if n := len(th.Ops); n > 0 {
			s = max(s, th.Ops[n-1].At)
		}
	}
	return s
}

// adviceOK admits the advice a replay passes on: what changes readahead
// and the page cache, nothing that changes memory contents (MADV_REMOVE,
// MADV_DONTFORK...).
func adviceOK(o Op) bool {
	if o.Kind == Fadvise {
		return o.Advice <= 5 // POSIX_FADV_NORMAL ... NOEREUSE (include/uapi/linux/fadvise.h)
	}
	switch o.Advice {
	case 0, 1, 2, 3, 4: // MADV_NORMAL, RANDOM, SEQUENTIAL, WILLNEED, DONTNEED (include/uapi/asm-generic/mman-common.h)
		return true
	}
	return false
}
