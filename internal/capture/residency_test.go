package capture

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/slowpath/slowpath/internal/capture/capfile"
)

// pagesOf is the set of pages runs hold.
func pagesOf(runs [][2]uint64) map[uint64]bool {
	out := map[uint64]bool{}
	for _, r := range runs {
		for p := r[0]; p < r[0]+r[1]; p++ {
			out[p] = true
		}
	}
	return out
}

func TestUnitSubtractRuns(t *testing.T) {
	cases := []struct {
		a, b, want [][2]uint64
	}{
		{a: [][2]uint64{{0, 10}}, b: nil, want: [][2]uint64{{0, 10}}},
		{a: [][2]uint64{{0, 10}}, b: [][2]uint64{{0, 10}}, want: nil},
		{a: [][2]uint64{{0, 10}}, b: [][2]uint64{{3, 2}}, want: [][2]uint64{{0, 3}, {5, 5}}},
		{a: [][2]uint64{{0, 4}, {8, 4}}, b: [][2]uint64{{2, 8}}, want: [][2]uint64{{0, 2}, {10, 2}}},
		{a: [][2]uint64{{5, 5}}, b: [][2]uint64{{0, 2}, {20, 3}}, want: [][2]uint64{{5, 5}}},
	}
	for _, c := range cases {
		if got := subtractRuns(c.a, c.b); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v - %v = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	// Against sets, on random runs.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 500; i++ {
		var a, b [][2]uint64
		for j := 0; j < 6; j++ {
			a = append(a, [2]uint64{rng.Uint64N(200), 1 + rng.Uint64N(20)})
			b = append(b, [2]uint64{rng.Uint64N(200), 1 + rng.Uint64N(20)})
		}
		a, b = mergeRuns(a), mergeRuns(b)
		got := pagesOf(subtractRuns(a, b))
		want := pagesOf(a)
		for p := range pagesOf(b) {
			delete(want, p)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%v - %v: %d pages, want %d", a, b, len(got), len(want))
		}
	}
}

// TestUnitLateResidency: a file first seen during the capture keeps the
// pages its window read without a block read beneath, and loses those
// read while block reads were issued, or by a major fault.
func TestUnitLateResidency(t *testing.T) {
	const page = 4096
	newFile := func() *fileState {
		return &fileState{f: capfile.File{ID: 1, Resident: [][2]uint64{{0, 100}}, ResidentPages: 100},
			late: &lateSight{from: 1000, at: 2000}}
	}
	cases := []struct {
		name        string
		blockTraced bool
		blockAt     []uint64
		reads       [][3]uint64 // t, offset, bytes
		major       bool
		wantPages   uint64
	}{
		{name: "reads hit the cache", blockTraced: true, reads: [][3]uint64{{1500, 0, 10 * page}}, wantPages: 100},
		{name: "a block read in the window", blockTraced: true, blockAt: []uint64{1600}, reads: [][3]uint64{{1500, 0, 10 * page}}, wantPages: 90},
		{name: "a block read after the window", blockTraced: true, blockAt: []uint64{2500}, reads: [][3]uint64{{1500, 0, 10 * page}}, wantPages: 100},
		{name: "a read after the window", blockTraced: true, blockAt: []uint64{1600}, reads: [][3]uint64{{2500, 0, 10 * page}}, wantPages: 100},
		{name: "a major fault", blockTraced: true, reads: [][3]uint64{{1500, 5 * page, page}}, major: true, wantPages: 99},
		{name: "no block trace", blockTraced: false, reads: [][3]uint64{{1500, page + 1, page}}, wantPages: 98},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFile()
			r := &run{pageSize: page, blockTraced: c.blockTraced, late: []*fileState{f}, lateUntil: f.late.at, fileList: []*fileState{f}}
			for _, rd := range c.reads {
				r.readInWindow(f, rd[0], rd[1], rd[2], c.major)
			}
			for _, at := range c.blockAt {
				r.blockReadAt(at)
			}
			r.settleLate(f)
			if f.f.ResidentPages != c.wantPages || uint64(len(pagesOf(f.f.Resident))) != c.wantPages {
				t.Errorf("%d resident pages (runs %v), want %d", f.f.ResidentPages, f.f.Resident, c.wantPages)
			}
		})
	}
}
