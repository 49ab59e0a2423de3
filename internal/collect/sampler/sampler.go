// Package sampler answers "where did the time go" during a benchmark: it
// samples /proc/diskstats for the block devices on the target's storage
// path and the CPU time of the thread groups that do the work of an
// encrypted data path (the workload, kcryptd, dmcrypt_write, kworkers,
// ksoftirqd) from /proc/PID/stat, every interval, through the injected
// host root.
package sampler

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/procfs/blockdevice"
	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/units"
)

// DefaultInterval is the sampling period: once a second, like iostat 1.
const DefaultInterval = time.Second

// Device is a block device on the target's path, as the storage model
// names it.
type Device struct {
	Name  string // kernel name: dm-0, sda, ram0
	Layer string // model layer kind
	Depth int
}

// Options configure a Sampler.
type Options struct {
	FS       hostfs.FS
	Devices  []Device
	Interval time.Duration // DefaultInterval when zero
	// Start is the run's start: sample times are offsets from it.
	Start time.Time
}

// Sampler samples until Stop.
type Sampler struct {
	o     Options
	bdev  blockdevice.FS
	quit  chan struct{}
	done  chan struct{}
	start time.Time

	mu       sync.Mutex
	workload map[int]bool // roots of the workload: this process and what AddWorkload named

	// Owned by the sampling goroutine until done is closed.
	prevDisk   map[string]blockdevice.IOStats
	prevAt     time.Time
	devSamples map[string][]benchresult.DeviceSample
	prevTicks  map[procKey]uint64
	// prevSelfTicks is the sampler thread's own utime+stime.
	prevSelfTicks uint64
	// rootTicks is the workload CPU sampled per workload root.
	rootTicks map[int]uint64
	// exact is the CPU time of workload roots that exited, from wait4
	// (AddWorkloadCPU).
	exact      map[int]time.Duration
	groups     map[string]*groupAcc
	problems   map[string]bool
	samplerCPU time.Duration
	buf        []byte
}

type procKey struct {
	pid   int
	start uint64
}

type groupAcc struct {
	ticks    uint64
	pids     map[int]bool
	byComm   map[string]uint64
	timeline []benchresult.Point
}

// Start takes the first reading and samples every interval until Stop.
func Start(o Options) (*Sampler, error) {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Start.IsZero() {
		o.Start = time.Now()
	}
	bfs, err := blockdevice.NewFS(o.FS.Proc, o.FS.Sys)
	if err != nil {
		return nil, fmt.Errorf("sampler: %w", err)
	}
	s := &Sampler{o: o, bdev: bfs, quit: make(chan struct{}), done: make(chan struct{}), start: o.Start,
		workload: map[int]bool{os.Getpid(): true}, devSamples: map[string][]benchresult.DeviceSample{},
		prevTicks: map[procKey]uint64{}, rootTicks: map[int]uint64{}, exact: map[int]time.Duration{}, groups: map[string]*groupAcc{}, problems: map[string]bool{},
		buf: make([]byte, 1024)}
	for _, g := range []string{benchresult.GroupWorkload, benchresult.GroupKcryptd, benchresult.GroupDmcryptWrite, benchresult.GroupKworker, benchresult.GroupKsoftirqd} {
		s.groups[g] = &groupAcc{pids: map[int]bool{}, byComm: map[string]uint64{}}
	}
	ready := make(chan struct{})
	go s.loop(ready)
	<-ready
	return s, nil
}

// AddWorkload counts pid and its descendants as the workload (fio).
func (s *Sampler) AddWorkload(pid int) {
	s.mu.Lock()
	s.workload[pid] = true
	s.mu.Unlock()
}

// AddWorkloadCPU records the exact CPU time of workload root pid (its own
// and its reaped children's, from wait4) once it exited. Sampling misses
// what a process did after the last sample, and all of a process shorter
// than an interval; the run's workload figure takes the larger of the two.
func (s *Sampler) AddWorkloadCPU(pid int, cpu time.Duration) {
	s.mu.Lock()
	s.exact[pid] = cpu
	s.mu.Unlock()
}

func (s *Sampler) loop(ready chan struct{}) {
	defer close(s.done)
	// One OS thread, so RUSAGE_THREAD is the sampler's own CPU time and the
	// workload's figure can leave it out.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	selfTID := unix.Gettid()
	cpu0 := threadCPU()
	s.sample(selfTID, true)
	close(ready)
	t := time.NewTicker(s.o.Interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.sample(selfTID, false)
		case <-s.quit:
			s.sample(selfTID, false)
			s.samplerCPU = threadCPU() - cpu0
			return
		}
	}
}

func threadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (s *Sampler) problem(format string, a ...any) { s.problems[fmt.Sprintf(format, a...)] = true }

func (s *Sampler) sample(selfTID int, first bool) {
	now := time.Now()
	s.sampleDisks(now, first)
	s.sampleTasks(now, selfTID, first)
	s.prevAt = now
}

func (s *Sampler) sampleDisks(now time.Time, first bool) {
	if len(s.o.Devices) == 0 {
		return
	}
	stats, err := s.bdev.ProcDiskstats()
	if err != nil {
		s.problem("read %s: %v", s.o.FS.ProcPath("diskstats"), err)
		return
	}
	cur := map[string]blockdevice.IOStats{}
	for _, d := range stats {
		cur[d.DeviceName] = d.IOStats
	}
	if first {
		s.prevDisk = cur
		return
	}
	ms := now.Sub(s.prevAt).Milliseconds()
	for _, d := range s.o.Devices {
		c, ok := cur[d.Name]
		p, pok := s.prevDisk[d.Name]
		if !ok || !pok {
			s.problem("device %s not in /proc/diskstats", d.Name)
			continue
		}
		// Sectors in diskstats are always 512 bytes
		// (Documentation/admin-guide/iostats.rst).
		s.devSamples[d.Name] = append(s.devSamples[d.Name], benchresult.DeviceSample{
			TMS: now.Sub(s.start).Milliseconds(), IntervalMS: ms,
			Reads: sub(c.ReadIOs, p.ReadIOs), Writes: sub(c.WriteIOs, p.WriteIOs),
			ReadBytes: 512 * sub(c.ReadSectors, p.ReadSectors), WriteBytes: 512 * sub(c.WriteSectors, p.WriteSectors),
			ReadTicksMS: sub(c.ReadTicks, p.ReadTicks), WriteTicksMS: sub(c.WriteTicks, p.WriteTicks),
			IOTicksMS: sub(c.IOsTotalTicks, p.IOsTotalTicks), QueueTicksMS: sub(c.WeightedIOTicks, p.WeightedIOTicks),
			InFlight: c.IOsInProgress,
		})
	}
	s.prevDisk = cur
}

// sub is a counter delta; a counter that went backwards (32-bit wrap on
// old kernels, a device re-created) counts as 0 rather than huge.
func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// Group returns the thread group of a task by its comm and parent, or "".
// Kernel threads are children of kthreadd (PID 2).
func Group(comm string, ppid int, workload bool) string {
	if workload {
		return benchresult.GroupWorkload
	}
	if ppid != 2 {
		return ""
	}
	switch {
	case strings.Contains(comm, "kcryptd"):
		// dm-crypt's kcryptd is a workqueue since Linux 4.x; its work runs in
		// kworkers named after it ("kworker/u4:2-kcryptd/253:0").
		return benchresult.GroupKcryptd
	case strings.HasPrefix(comm, "dmcrypt_write"):
		return benchresult.GroupDmcryptWrite
	case strings.HasPrefix(comm, "kworker"):
		return benchresult.GroupKworker
	case strings.HasPrefix(comm, "ksoftirqd"):
		return benchresult.GroupKsoftirqd
	}
	return ""
}

func (s *Sampler) readStat(path string) (taskStat, error) { return readStatInto(path, s.buf) }

func (s *Sampler) sampleTasks(now time.Time, selfTID int, first bool) {
	ents, err := os.ReadDir(s.o.FS.Proc)
	if err != nil {
		s.problem("read %s: %v", s.o.FS.Proc, err)
		return
	}
	s.mu.Lock()
	roots := make(map[int]bool, len(s.workload))
	for p := range s.workload {
		roots[p] = true
	}
	s.mu.Unlock()
	var tasks []taskStat
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := s.readStat(filepath.Join(s.o.FS.Proc, e.Name(), "stat"))
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ESRCH) {
				s.problem("read /proc/%d/stat: %v", pid, err)
			}
			continue // exited between ReadDir and Open
		}
		tasks = append(tasks, st)
	}
	// Descendants of the workload roots are workload too (fio forks a
	// process per job), attributed to their root. Parents may be listed
	// after children: iterate.
	rootOf := map[int]int{}
	for p := range roots {
		rootOf[p] = p
	}
	for changed := true; changed; {
		changed = false
		for _, t := range tasks {
			if _, ok := rootOf[t.PID]; !ok {
				if r, ok := rootOf[t.PPID]; ok {
					rootOf[t.PID] = r
					roots[t.PID] = true
					changed = true
				}
			}
		}
	}
	// The sampler's own thread is left out of the workload.
	self := os.Getpid()
	var selfDelta uint64
	if st, err := s.readStat(filepath.Join(s.o.FS.Proc, strconv.Itoa(self), "task", strconv.Itoa(selfTID), "stat")); err == nil {
		selfDelta = sub(st.Ticks, s.prevSelfTicks)
		s.prevSelfTicks = st.Ticks
	}
	intervalTicks := map[string]uint64{}
	seen := make(map[procKey]uint64, len(tasks))
	for _, t := range tasks {
		k := procKey{t.PID, t.Start}
		seen[k] = t.Ticks
		if first {
			continue
		}
		g := Group(t.Comm, t.PPID, roots[t.PID])
		if g == "" {
			continue
		}
		// A task first seen now started during the interval: all of its
		// time is new.
		d := sub(t.Ticks, s.prevTicks[k])
		if t.PID == self {
			d = sub(d, selfDelta)
		}
		if g == benchresult.GroupWorkload {
			s.rootTicks[rootOf[t.PID]] += d
		}
		acc := s.groups[g]
		acc.ticks += d
		intervalTicks[g] += d
		if d > 0 {
			acc.pids[t.PID] = true
			acc.byComm[t.Comm] += d
		}
	}
	s.prevTicks = seen
	if first {
		return
	}
	sec := now.Sub(s.prevAt).Seconds()
	for g, acc := range s.groups {
		v := 0.0
		if sec > 0 {
			v = float64(intervalTicks[g]) / userHZ / sec
		}
		acc.timeline = append(acc.timeline, benchresult.Point{TMS: now.Sub(s.start).Milliseconds(), Value: round3(v), Unit: benchresult.UnitCPUs})
	}
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// Stop takes a last reading and returns what was sampled.
func (s *Sampler) Stop() *benchresult.WhereTime {
	close(s.quit)
	<-s.done
	wall := time.Since(s.start)
	w := &benchresult.WhereTime{IntervalNS: int64(s.o.Interval), Devices: []benchresult.DeviceTime{}, Threads: []benchresult.ThreadGroup{},
		SamplerCPUNS: int64(s.samplerCPU)}
	for _, d := range s.o.Devices {
		w.Devices = append(w.Devices, deviceTime(d, s.devSamples[d.Name]))
	}
	for _, g := range []string{benchresult.GroupWorkload, benchresult.GroupKcryptd, benchresult.GroupDmcryptWrite, benchresult.GroupKworker, benchresult.GroupKsoftirqd} {
		acc := s.groups[g]
		cpu := time.Duration(acc.ticks) * (time.Second / userHZ)
		if g == benchresult.GroupWorkload {
			s.mu.Lock()
			for pid, exact := range s.exact {
				if seen := time.Duration(s.rootTicks[pid]) * (time.Second / userHZ); exact > seen {
					cpu += exact - seen
				}
			}
			s.mu.Unlock()
		}
		tg := benchresult.ThreadGroup{Group: g, Threads: len(acc.pids), CPUNS: int64(cpu), Timeline: acc.timeline}
		if wall > 0 {
			tg.CPUs = round3(cpu.Seconds() / wall.Seconds())
		}
		for c, t := range acc.byComm {
			tg.Top = append(tg.Top, benchresult.ThreadCPU{Comm: c, CPUNS: int64(time.Duration(t) * (time.Second / userHZ))})
		}
		sort.Slice(tg.Top, func(i, j int) bool {
			if tg.Top[i].CPUNS != tg.Top[j].CPUNS {
				return tg.Top[i].CPUNS > tg.Top[j].CPUNS
			}
			return tg.Top[i].Comm < tg.Top[j].Comm
		})
		if len(tg.Top) > 5 {
			tg.Top = tg.Top[:5]
		}
		w.Threads = append(w.Threads, tg)
	}
	for p := range s.problems {
		w.Problems = append(w.Problems, p)
	}
	sort.Strings(w.Problems)
	w.Summary = Summary(w)
	return w
}

// deviceTime sums a device's samples into iostat -x style figures.
func deviceTime(d Device, samples []benchresult.DeviceSample) benchresult.DeviceTime {
	dt := benchresult.DeviceTime{Device: d.Name, Layer: d.Layer, Depth: d.Depth, Samples: samples, AwaitNS: -1, ReadAwaitNS: -1, WriteAwaitNS: -1}
	if dt.Samples == nil {
		dt.Samples = []benchresult.DeviceSample{}
	}
	var sum benchresult.DeviceSample
	for _, s := range samples {
		sum.IntervalMS += s.IntervalMS
		sum.Reads += s.Reads
		sum.Writes += s.Writes
		sum.ReadBytes += s.ReadBytes
		sum.WriteBytes += s.WriteBytes
		sum.ReadTicksMS += s.ReadTicksMS
		sum.WriteTicksMS += s.WriteTicksMS
		sum.IOTicksMS += s.IOTicksMS
		sum.QueueTicksMS += s.QueueTicksMS
	}
	if sum.IntervalMS == 0 {
		return dt
	}
	sec := float64(sum.IntervalMS) / 1000
	dt.ReadIOPS = float64(sum.Reads) / sec
	dt.WriteIOPS = float64(sum.Writes) / sec
	dt.ReadBytesPerSec = float64(sum.ReadBytes) / sec
	dt.WriteBytesPerSec = float64(sum.WriteBytes) / sec
	if n := sum.Reads + sum.Writes; n > 0 {
		dt.AwaitNS = float64(sum.ReadTicksMS+sum.WriteTicksMS) * 1e6 / float64(n)
	}
	if sum.Reads > 0 {
		dt.ReadAwaitNS = float64(sum.ReadTicksMS) * 1e6 / float64(sum.Reads)
	}
	if sum.Writes > 0 {
		dt.WriteAwaitNS = float64(sum.WriteTicksMS) * 1e6 / float64(sum.Writes)
	}
	dt.UtilPercent = math.Min(100, float64(sum.IOTicksMS)/float64(sum.IntervalMS)*100)
	dt.QueueDepth = float64(sum.QueueTicksMS) / float64(sum.IntervalMS)
	return dt
}

// Summary is the one-line answer: the await of the device nearest the
// filesystem against the one at the bottom of the path, then the kernel
// thread groups that used at least 1% of a CPU.
func Summary(w *benchresult.WhereTime) string {
	var parts []string
	var busy []benchresult.DeviceTime
	for _, d := range w.Devices {
		if d.AwaitNS >= 0 {
			busy = append(busy, d)
		}
	}
	sort.SliceStable(busy, func(i, j int) bool { return busy[i].Depth < busy[j].Depth })
	switch {
	case len(busy) >= 2 && busy[0].Device != busy[len(busy)-1].Device:
		top, bottom := busy[0], busy[len(busy)-1]
		parts = append(parts, fmt.Sprintf("%s await %s vs %s %s", top.Device, units.Milliseconds(top.AwaitNS), bottom.Device, units.Milliseconds(bottom.AwaitNS)))
	case len(busy) == 1:
		line := fmt.Sprintf("%s await %s, %.0f%% busy", busy[0].Device, units.Milliseconds(busy[0].AwaitNS), busy[0].UtilPercent)
		// Devices below that counted nothing: a bio-based driver such as
		// brd does no I/O accounting (drivers/block/brd.c never calls
		// bio_start_io_acct; its diskstats stay 0, seen in the VM lab).
		var idle []string
		for _, d := range w.Devices {
			if d.AwaitNS < 0 && d.Depth > busy[0].Depth {
				idle = append(idle, d.Device)
			}
		}
		if len(idle) > 0 {
			line += fmt.Sprintf(" (%s counts no I/O)", strings.Join(idle, ", "))
		}
		parts = append(parts, line)
	case len(w.Devices) == 0:
		parts = append(parts, "no block device on the path (tmpfs or unknown)")
	default:
		parts = append(parts, "no I/O reached the devices on the path")
	}
	var kern []string
	for _, g := range w.Threads {
		if g.Group == benchresult.GroupWorkload || g.CPUs < 0.01 {
			continue
		}
		kern = append(kern, fmt.Sprintf("%.0f%% of a CPU in %s", g.CPUs*100, g.Group))
	}
	for _, g := range w.Threads {
		if g.Group == benchresult.GroupWorkload {
			kern = append([]string{fmt.Sprintf("workload %.0f%% of a CPU", g.CPUs*100)}, kern...)
		}
	}
	parts = append(parts, kern...)
	return strings.Join(parts, "; ")
}
