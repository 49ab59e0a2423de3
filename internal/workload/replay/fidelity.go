package replay

import (
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/capture/capfile"
)

// SummarizeBlocks summarises one device's block requests.
func SummarizeBlocks(device string, blocks []capfile.Block) benchresult.BlockTrace {
	s := benchresult.BlockTrace{Device: device, Sizes: []benchresult.SizeBucket{}}
	if len(blocks) == 0 {
		return s
	}
	sizes := map[uint64]uint64{}
	var lat []int64
	first, last := uint64(math.MaxUint64), uint64(0)
	for _, b := range blocks {
		s.IOs++
		first = min(first, b.Issue)
		last = max(last, b.Issue+b.Latency)
		switch b.Op {
		case capfile.BlockRead:
			s.ReadIOs++
			s.ReadBytes += uint64(b.Bytes)
		case capfile.BlockWrite:
			s.WriteIOs++
			s.WriteBytes += uint64(b.Bytes)
		case capfile.BlockFlush:
			s.FlushIOs++
			continue
		default:
			s.OtherIOs++
			continue
		}
		s.Bytes += uint64(b.Bytes)
		sizes[bucket(uint64(b.Bytes))]++
		if b.Flags&capfile.BlockFlagNoComplete == 0 {
			lat = append(lat, int64(b.Latency))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(sizes)) {
		s.Sizes = append(s.Sizes, benchresult.SizeBucket{MaxBytes: k, Count: sizes[k]})
	}
	s.DurationNS = int64(last - first)
	if s.DurationNS > 0 {
		sec := float64(s.DurationNS) / 1e9
		s.IOPS = float64(s.IOs) / sec
		s.BytesPerSec = float64(s.Bytes) / sec
	}
	p := percentiles(lat, 50, 99)
	s.P50NS, s.P99NS = p[0], p[1]
	return s
}

// bucket is the power of two at or above n (0 for 0).
func bucket(n uint64) uint64 {
	if n <= 1 {
		return n
	}
	return 1 << bits.Len64(n-1)
}

// Difference is one figure of a replay's block trace against its
// capture's.
type Difference struct {
	Name            string
	Capture, Replay float64
	Unit            string
	// Relative is (replay - capture) / capture; NaN when the capture's is 0.
	Relative float64
}

// Differences lists the figures Fidelity compares: counts, bytes, the
// read share of requests, each size bucket's share, request rate,
// bandwidth and the latency p50 and p99.
func Differences(c, r benchresult.BlockTrace) []Difference {
	var out []Difference
	add := func(name string, cv, rv float64, unit string) {
		rel := math.NaN()
		if cv != 0 {
			rel = (rv - cv) / cv
		}
		out = append(out, Difference{Name: name, Capture: cv, Replay: rv, Unit: unit, Relative: rel})
	}
	share := func(n, of uint64) float64 {
		if of == 0 {
			return 0
		}
		return float64(n) / float64(of)
	}
	add("ios", float64(c.IOs), float64(r.IOs), benchresult.UnitCount)
	add("bytes", float64(c.Bytes), float64(r.Bytes), benchresult.UnitBytes)
	add("read_share", share(c.ReadIOs, c.ReadIOs+c.WriteIOs), share(r.ReadIOs, r.ReadIOs+r.WriteIOs), benchresult.UnitFraction)
	cs, rs := sizeShares(c), sizeShares(r)
	all := maps.Clone(cs)
	maps.Copy(all, rs)
	for _, k := range slices.Sorted(maps.Keys(all)) {
		add(fmt.Sprintf("size_share_le_%d", k), cs[k], rs[k], benchresult.UnitFraction)
	}
	add("iops", c.IOPS, r.IOPS, benchresult.UnitIOPS)
	add("bytes_per_sec", c.BytesPerSec, r.BytesPerSec, benchresult.UnitBytesPerSec)
	add("p50", float64(c.P50NS), float64(r.P50NS), benchresult.UnitNanoseconds)
	add("p99", float64(c.P99NS), float64(r.P99NS), benchresult.UnitNanoseconds)
	return out
}

func sizeShares(t benchresult.BlockTrace) map[uint64]float64 {
	var n uint64
	for _, b := range t.Sizes {
		n += b.Count
	}
	out := map[uint64]float64{}
	for _, b := range t.Sizes {
		out[b.MaxBytes] = float64(b.Count) / float64(n)
	}
	return out
}

// MissedNote says which part of the capture's block bytes no file-level
// record explains: the I/O its threads did on captured files through
// calls it counts but cannot record (splice, sendfile, copy_file_range,
// other io_uring or aio opcodes), which the replay does not perform. ""
// when the capture missed nothing. One line (a result's problems are
// single-line text).
func MissedNote(m *capfile.Manifest, capture benchresult.BlockTrace) string {
	ms := m.Events.Missed
	if ms.Calls() == 0 {
		return ""
	}
	var parts []string
	for _, p := range []struct {
		n    uint64
		what string
	}{{ms.Splice, "splice"}, {ms.Sendfile, "sendfile"}, {ms.CopyFileRange, "copy_file_range"},
		{ms.IOURingOther, "io_uring requests of other opcodes"}, {ms.AIOOther, "aio iocbs of other opcodes or beyond 64 per io_submit"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	bytes := ms.SpliceBytes + ms.SendfileBytes + ms.CopyFileRangeBytes
	share := "no block bytes captured"
	if capture.Bytes > 0 {
		share = fmt.Sprintf("%.1f%% of the capture's %d block bytes on %s", 100*float64(min(bytes, capture.Bytes))/float64(capture.Bytes), capture.Bytes, capture.Device)
	}
	return fmt.Sprintf("the capture counted I/O on its files that no record describes and the replay does not perform: %s; %d bytes asked by the copies (%s) may have no file-level cause",
		strings.Join(parts, ", "), bytes, share)
}
