package vm

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// Gate lets at most n VMs run at once and, when one ends, starts the
// waiting boot expected to take longest: longest-first keeps both lanes
// busy to the end, where go test's own order (its parallel slots, handed
// out in the order tests reach t.Parallel, file by file) started the
// longest boots (TestFixProve, TestCaptureReplay) last and left one core
// idle for their last minutes. go test runs the lab with -parallel high
// enough that every test can wait here (Makefile, scripts/suite.sh).
type Gate struct {
	mu      sync.Mutex
	free    int
	waiting []*gateWaiter
}

type gateWaiter struct {
	cost  time.Duration
	ready chan struct{}
}

// NewGate returns a gate of n slots (at least 1).
func NewGate(n int) *Gate {
	return &Gate{free: max(n, 1)}
}

// Acquire blocks until a slot is free and no waiter expected to take
// longer is before it; release gives the slot back.
func (g *Gate) Acquire(cost time.Duration) (release func()) {
	g.mu.Lock()
	if g.free > 0 && len(g.waiting) == 0 {
		g.free--
		g.mu.Unlock()
		return g.releaseOnce()
	}
	w := &gateWaiter{cost: cost, ready: make(chan struct{})}
	g.waiting = append(g.waiting, w)
	g.mu.Unlock()
	<-w.ready
	return g.releaseOnce()
}

func (g *Gate) releaseOnce() func() {
	var once sync.Once
	return func() { once.Do(g.release) }
}

// release hands the slot to the longest waiter (the first of equals, so
// equal costs keep their order), or frees it.
func (g *Gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.waiting) == 0 {
		g.free++
		return
	}
	best := 0
	for i, w := range g.waiting {
		if w.cost > g.waiting[best].cost {
			best = i
		}
	}
	w := g.waiting[best]
	g.waiting = append(g.waiting[:best], g.waiting[best+1:]...)
	close(w.ready)
}

// bootCost is each boot's time in the lab summary of a run from empty
// caches at 6803000 (bin/vm-summary.txt; TCG on this 2-core machine, with
// the rest of the suite beside it), by test name without its kernel, the
// longest of its kernels; TestCaptureReplay and TestCryptLabModel/boot-a
// as halved and shortened after it (fe05420): the order it gives is what
// matters, not the figures. A boot not listed is taken as a minute.
var bootCost = map[string]time.Duration{
	"TestFixProve":                 305 * time.Second,
	"TestCaptureReplay":            235 * time.Second,
	"TestCryptLab":                 230 * time.Second,
	"TestCryptLabOnFilesystem":     129 * time.Second,
	"TestCryptLabModel/boot-a":     80 * time.Second,
	"TestBenchOnCrypt":             74 * time.Second,
	"TestKernelFacts":              71 * time.Second,
	"TestCryptLabModel/boot-b":     69 * time.Second,
	"TestAgentTaxOnCrypt":          65 * time.Second,
	"TestCryptLabSplit":            65 * time.Second,
	"TestDMTimingVsDmsetup":        54 * time.Second,
	"TestCaptureOnCrypt":           46 * time.Second,
	"TestFixApplyRollback":         41 * time.Second,
	"TestFioOnCrypt":               32 * time.Second,
	"TestAgentDropsAttach":         17 * time.Second,
	"TestBacklogDrop":              14 * time.Second,
	"TestLUKS2WorkqueueRefresh":    13 * time.Second,
	"TestFixLUKS2Keyring":          11 * time.Second,
	"TestPlainCryptFlags":          11 * time.Second,
	"TestBoot":                     10 * time.Second,
	"TestCryptOnLoopOnExt4OnCrypt": 9 * time.Second,
	"TestDropsOnDebianKernel":      9 * time.Second,
	"TestNetdevsimRing":            8 * time.Second,
	"TestCryptOnCrypt":             7 * time.Second,
}

// expectedBoot is bootCost for a test's name ("TestCryptLabModel/6.1/boot-a"
// on kernel 6.1 is "TestCryptLabModel/boot-a").
func expectedBoot(test, kernel string) time.Duration {
	parts := strings.Split(test, "/")
	parts = slices.DeleteFunc(parts, func(p string) bool { return p == kernel })
	if d, ok := bootCost[strings.Join(parts, "/")]; ok {
		return d
	}
	return time.Minute
}
