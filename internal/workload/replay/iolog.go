package replay

import (
	"bytes"
	"fmt"
	"strconv"

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
		for _, o := range th.Ops {
			if o.Kind == Fadvise || o.Kind == Madvise {
				continue // no iolog action: the job's fadvise_hint=0 leaves the kernel's default
			}
			if o.Direct {
				direct = append(direct, o)
			} else {
				buffered = append(buffered, o)
			}
		}
		if len(buffered) > 0 {
			out = append(out, Stream{Name: th.Name, Thread: i, Ops: buffered})
		}
		if len(direct) > 0 {
			out = append(out, Stream{Name: th.Name + "-direct", Thread: i, Direct: true, Ops: direct})
		}
	}
	return out
}

// Iolog renders s as an fio version 3 iolog (HOWTO "Trace file format
// v3"). Timestamps are microseconds, not the milliseconds the HOWTO
// suggests: fio writes them with utime_since_now and sleeps them with
// usec_sleep (iolog.c log_io_u, iolog_delay). Each is one more than the
// operation's time: fio takes no delay while the previous timestamp is 0
// (iolog.c delay_since_ttime), so the add at 1 µs makes the first
// operation wait for its own time too.
func (t *Trace) Iolog(s Stream) []byte {
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
	case AFAP:
		global = append(global, fio.Option{Key: "replay_no_stall", Value: "1"})
	case FioTimed:
	default:
		return nil, fmt.Errorf("replay mode %q has no fio job file (timed replays run in slowpath)", mode)
	}
	f := fio.File{Global: global}
	for _, s := range streams {
		f.Jobs = append(f.Jobs, fio.Section{Name: s.Name, Options: []fio.Option{{Key: "read_iolog", Value: s.IologName()},
			{Key: "direct", Value: strconv.Itoa(map[bool]int{true: 1}[s.Direct])}}})
	}
	return f.Render()
}
