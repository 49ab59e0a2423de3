package capture

import (
	"cmp"
	"os"
	"runtime"
	"slices"
	"unsafe"

	"github.com/slowpath/slowpath/internal/capture/capfile"
	"golang.org/x/sys/unix"
)

// Page-cache residency of a file at the start (mincore), or at its first
// sight for a file first used during the capture, coarsened to what the
// manifest holds.

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

// Late files. A file the traced processes first use after the capture
// started (a database opening its relations as queries reach them) has
// its residency read at that first sight, not at the start: what it shows
// is what the service found, except for what the service itself read
// between the event that showed the file and the mincore (the window,
// milliseconds: the time the event took to reach user space). A page read
// in the window with a block read issued during it may have come from
// disk, so it is taken out of the resident set; one read without any
// block read in the window was a cache hit and stays. A major fault in the
// window read its page from disk: always taken out.

// maxWindowRuns bounds what one file's window remembers; beyond it the
// runs are coarsened (more pages taken out, never fewer).
const maxWindowRuns = 4096

// readInWindow notes that bytes [off, off+n) of f were read at t; major
// says the read certainly came from disk (a major fault).
func (r *run) readInWindow(f *fileState, t, off, n uint64, major bool) {
	l := f.late
	if l == nil || n == 0 || t > l.at || t < l.from {
		return
	}
	if major {
		l.blocks = true
	}
	first, last := off/r.pageSize, (off+n-1)/r.pageSize
	l.reads = append(l.reads, [2]uint64{first, last - first + 1})
	if len(l.reads) > 2*maxWindowRuns {
		l.reads, _ = coarsen(mergeRuns(l.reads), maxWindowRuns)
	}
}

// blockReadAt notes a block read issued at t: every late file whose
// window holds t may have had pages read from disk in it.
func (r *run) blockReadAt(t uint64) {
	if t > r.lateUntil || !r.blockTraced {
		return
	}
	keep := r.late[:0]
	for _, f := range r.late {
		if t >= f.late.from && t <= f.late.at {
			f.late.blocks = true
			continue
		}
		keep = append(keep, f)
	}
	r.late = keep
}

// settleLate takes out of a late file's resident pages those read in its
// window that may have come from disk. Without a block trace nothing says
// a read in the window hit the cache, so all of them are taken out.
func (r *run) settleLate(f *fileState) {
	l := f.late
	if l == nil || len(l.reads) == 0 || (r.blockTraced && !l.blocks) {
		return
	}
	f.f.Resident = subtractRuns(f.f.Resident, mergeRuns(l.reads))
	f.f.ResidentPages = 0
	for _, run := range f.f.Resident {
		f.f.ResidentPages += run[1]
	}
	l.reads = nil
}

// mergeRuns sorts page runs [first, count] and joins those that overlap
// or touch.
func mergeRuns(runs [][2]uint64) [][2]uint64 {
	slices.SortFunc(runs, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	out := runs[:0]
	for _, r := range runs {
		if k := len(out); k > 0 && r[0] <= out[k-1][0]+out[k-1][1] {
			out[k-1][1] = max(out[k-1][1], r[0]+r[1]-out[k-1][0])
			continue
		}
		out = append(out, r)
	}
	return out
}

// subtractRuns is a minus b, both sorted and disjoint.
func subtractRuns(a, b [][2]uint64) [][2]uint64 {
	var out [][2]uint64
	j := 0
	for _, r := range a {
		lo, hi := r[0], r[0]+r[1]
		for j < len(b) && b[j][0]+b[j][1] <= lo {
			j++
		}
		for k := j; k < len(b) && b[k][0] < hi; k++ {
			if b[k][0] > lo {
				out = append(out, [2]uint64{lo, b[k][0] - lo})
			}
			lo = max(lo, b[k][0]+b[k][1])
		}
		if lo < hi {
			out = append(out, [2]uint64{lo, hi - lo})
		}
	}
	return out
}
