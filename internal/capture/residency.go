package capture

import (
	"os"
	"runtime"
	"unsafe"

	"github.com/slowpath/slowpath/internal/capture/capfile"
	"golang.org/x/sys/unix"
)

// Page-cache residency of a file at the start (mincore), coarsened to
// what the manifest holds.

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
