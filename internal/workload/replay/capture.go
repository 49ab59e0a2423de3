package replay

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/capture/capfile"
)

// Source is a capture read for replay.
type Source struct {
	Trace    *Trace
	Manifest *capfile.Manifest
	// Blocks summarises the capture's own block trace of the device
	// nearest its filesystem: what Fidelity compares the replay with.
	Blocks benchresult.BlockTrace
	// Skipped counts captured operations the replay does not perform.
	Skipped map[string]uint64
}

// Load reads the capture in dir, both its streams to their verified ends:
// a truncated or tampered capture is capfile's named error
// (capfile.ErrTruncated, ErrCorrupt, ErrNotCapture, ErrVersion).
//
// Each thread's reads, writes, fsyncs, fdatasyncs and page faults become
// its operations, ordered by start time (records arrive roughly by end
// time). Not replayed, and counted in Skipped: calls that failed,
// sync_file_range (no fio iolog action), mmap calls (the replay maps a
// file at its first fault), and faults that were not page-cache misses. Advice that changes readahead or the page cache is replayed
// (fadvise, madvise); other advice is skipped. Files are laid out at
// their size when first seen.
func Load(dir string) (*Source, error) {
	c, err := capfile.Open(dir)
	if err != nil {
		return nil, err
	}
	m := c.Manifest
	t := &Trace{}
	for _, f := range m.Files {
		// A file created during the capture starts empty: its writes
		// make it.
		rf := File{Name: f.Name, Size: int64(f.SizeStartBytes)}
		page := int64(m.System.PageSize)
		if page == 0 {
			page = 4096
		}
		for _, r := range f.Resident {
			off, n := int64(r[0])*page, int64(r[1])*page
			// The last page of a file is partial.
			n = min(n, rf.Size-off)
			if n > 0 {
				rf.Resident = append(rf.Resident, Range{Offset: off, Length: n})
			}
		}
		t.Files = append(t.Files, rf)
	}
	t.Threads = make([]Thread, len(m.Threads))
	for i, th := range m.Threads {
		t.Threads[i].Name = fmt.Sprintf("t%04d", th.ID)
	}
	skipped := map[string]uint64{}
	// Asynchronous requests per thread, as [start, end] to find the
	// depth each thread kept.
	spans := map[int][][2]uint64{}
	// The furthest byte each file's reads returned: the start size of a
	// file the capture could not examine (its process closed it before
	// the capture opened it through /proc/PID/fd) is at least that.
	readTo := make([]int64, len(t.Files))
	err = c.EachOp(func(o capfile.Op) error {
		if o.Kind == capfile.OpRead && o.Result > 0 && o.File > 0 && int(o.File) <= len(readTo) {
			readTo[o.File-1] = max(readTo[o.File-1], int64(o.Offset)+o.Result)
		}
		if o.Flags&(capfile.FlagAIO|capfile.FlagURing) != 0 && o.Result >= 0 && o.Thread > 0 && int(o.Thread) <= len(t.Threads) {
			th := &t.Threads[o.Thread-1]
			if o.Flags&capfile.FlagURing != 0 {
				th.Engine = "io_uring"
			} else if th.Engine == "" {
				th.Engine = "libaio"
			}
			spans[int(o.Thread)-1] = append(spans[int(o.Thread)-1], [2]uint64{o.Start, o.End})
		}
		op := Op{File: int(o.File) - 1, Offset: int64(o.Offset), Length: int64(o.Length), At: time.Duration(o.Start), Direct: o.Flags&capfile.FlagDirect != 0}
		switch {
		case o.Result < 0:
			skipped["failed"]++
			return nil
		case o.Kind == capfile.OpRead:
			op.Kind = Read
		case o.Kind == capfile.OpWrite:
			op.Kind = Write
		case o.Kind == capfile.OpFsync:
			op.Kind = Fsync
		case o.Kind == capfile.OpFdatasync:
			op.Kind = Fdatasync
		case o.Kind == capfile.OpFault && o.Flags&capfile.FlagMajor != 0:
			op.Kind = Fault
		case o.Kind == capfile.OpFadvise || o.Kind == capfile.OpMadvise:
			op.Kind, op.Advice = Fadvise, o.Arg
			if o.Kind == capfile.OpMadvise {
				op.Kind = Madvise
			}
			if !adviceOK(op) {
				skipped[o.Kind.String()]++
				return nil
			}
		case o.Kind == capfile.OpOpen:
			return nil // its flags are on the operations
		default:
			skipped[o.Kind.String()]++
			return nil
		}
		if op.Kind == Read || op.Kind == Write {
			if o.Length == 0 {
				skipped[o.Kind.String()+"-empty"]++
				return nil
			}
		}
		if op.Kind == Fault && op.Length == 0 {
			op.Length = int64(max(m.System.PageSize, 4096))
		}
		th := &t.Threads[o.Thread-1]
		th.Ops = append(th.Ops, op)
		th.LastEnd = max(th.LastEnd, time.Duration(o.End))
		return nil
	})
	for i, sp := range spans {
		t.Threads[i].Depth = maxInFlight(sp)
	}
	for i, f := range m.Files {
		if f.ResidencyUnknown && f.SizeStartBytes == 0 && readTo[i] > 0 {
			// Unknown, not empty: lay out what the reads found, so they
			// read data rather than end at EOF.
			t.Files[i].Size = readTo[i]
		}
	}
	if err != nil {
		return nil, err
	}
	// Threads that issued nothing replayable are left out.
	t.Threads = slices.DeleteFunc(t.Threads, func(th Thread) bool { return len(th.Ops) == 0 })
	for _, th := range t.Threads {
		t.End = max(t.End, th.LastEnd)
	}
	for i := range t.Threads {
		slices.SortStableFunc(t.Threads[i].Ops, func(a, b Op) int { return int(a.At - b.At) })
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	dev, devName := fsDevice(m)
	var blocks []capfile.Block
	err = c.EachBlock(func(b capfile.Block) error {
		if b.Device == dev {
			blocks = append(blocks, b)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Source{Trace: t, Manifest: m, Blocks: SummarizeBlocks(devName, blocks), Skipped: skipped}, nil
}

// fsDevice is the captured device nearest the filesystem: the mount's
// device when the capture traced it, else the first.
func fsDevice(m *capfile.Manifest) (uint32, string) {
	for _, d := range m.Devices {
		if d.MajorMinor == m.Filters.MountDevice {
			return d.ID, d.Name
		}
	}
	if len(m.Devices) > 0 {
		return m.Devices[0].ID, m.Devices[0].Name
	}
	return 0, ""
}

// maxInFlight is the most intervals [start, end] that overlap at once.
func maxInFlight(spans [][2]uint64) int {
	type edge struct {
		at    uint64
		delta int
	}
	edges := make([]edge, 0, 2*len(spans))
	for _, s := range spans {
		edges = append(edges, edge{s[0], 1}, edge{s[1], -1})
	}
	// Ends before starts at the same instant: back to back is not overlap.
	sort.Slice(edges, func(a, b int) bool {
		if edges[a].at != edges[b].at {
			return edges[a].at < edges[b].at
		}
		return edges[a].delta < edges[b].delta
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}
