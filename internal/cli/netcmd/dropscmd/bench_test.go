package dropscmd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/bpf/dropcounter"
	"github.com/slowpath/slowpath/internal/stats"
	"github.com/slowpath/slowpath/internal/testing/netlab"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// tracer is one way of watching drops during a load. start attaches it;
// the stop it returns detaches it and returns the eBPF program's run
// statistics (zero for other tracers).
type tracer struct {
	name  string
	start func(b *testing.B) (stop func() progStats)
}

// progStats is what the kernel's BPF statistics say about one attachment.
type progStats struct {
	runs     uint64
	nsPerRun float64 // only while kernel.bpf_stats_enabled is on
}

// BenchmarkTracerCost measures what watching drops costs the traffic: the
// delivered packet rate (datagrams the iperf3 server read, the receiver
// namespace's UDP InDatagrams) of a UDP flood between two namespaces
// (netlab, RPS to one CPU, netdev_max_backlog 16), with no tracer, with an
// empty program on the same tracepoint (the floor: what the kernel's
// tracepoint dispatch costs any program), with slowpath's eBPF counter
// (reasons only, and with stacks) and with `perf record -a -g -e
// skb:kfree_skb`, the method of the incident.
//
// The sender runs on one CPU; the receive softirq (RPS) and the iperf3
// server share the other. That CPU is the bottleneck: its softirq takes
// every packet the sender manages, drops most of them at the full socket
// buffer, and the server gets what time is left (about a quarter). A
// tracer's time per drop comes out of that rest, so the delivered rate
// loses about four times the tracer's own share of the CPU.
//
// One flood runs throughout, and the variants take turns in windows of
// 1 s (each attached 0.5 s before its window, detached after it), in an
// order rotated every round; a tracer's cost is paired with the window
// without a tracer of the same round. Separate floods vary by tens of
// percent from one to the next (iperf3's start-up, where the scheduler
// puts things). Within one flood the offered load still wanders, and the
// delivered rate against it (more arrivals take more softirq time from
// the server): on this shared VM windows without a tracer vary by 3–10%
// (noise-%-none), so read each median with its spread. Reported, medians
// over rounds:
//
//   - pkt/s-<v>: delivered packets per second (the metric);
//   - cost-%-<v>, with -min and -max over rounds: delivered rate lost
//     against no tracer;
//   - over-floor-%-<v>: the part of that cost above the empty program's,
//     i.e. what slowpath's program itself adds to the kernel's dispatch;
//   - perf/reasons-cost, perf/stacks-cost: perf record's median cost
//     divided by the eBPF counter's, reasons only and with stacks; the
//     counter's is never taken below the floor's nor below noise-%-none,
//     so noise cannot blow the ratio up (it is then a lower bound);
//   - offered-pkt/s: what reached the receiving CPU (delivered plus
//     dropped, no tracer);
//   - sockdrop/s, backlogdrop/s: the drops a tracer pays for (no tracer);
//   - srvcpu-%: the server's share of the RPS CPU (user and system time,
//     /proc/stat, no tracer);
//   - ns/event-<v> and prog-ns/event-<v>: run time per hit from the
//     kernel's BPF statistics (a separate pass, as they cost time
//     themselves), and the same less the empty program's, which is the
//     statistics' own overhead;
//   - noise-%-none: median absolute deviation of the rate without a
//     tracer, relative to its median: the flood's own noise per window.
func BenchmarkTracerCost(b *testing.B) {
	perf := testenv.RequireTool(b, "perf", "linux-perf")
	if runtime.NumCPU() < 2 {
		testenv.Unavailable(b, "needs 2 CPUs: one sends, one receives")
	}
	const rpsCPU, sendCPU = 0, 1
	lab := netlab.New(b, netlab.Options{RPSCPU: rpsCPU})
	if err := lab.SetBacklog(16); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ensureTracefs(b))
	variants := tracerVariants(b, perf)
	// The sender on one CPU, the server pinned to the RPS CPU: left to
	// the scheduler, the server now and then moves to the sender's CPU,
	// which changes the rate more than any tracer does. The sender is not
	// paced: as fast as it goes, it drops the most (about 175k
	// socket-buffer drops/s here), the worst case for a tracer. (Pacing it
	// with iperf3 -b did not steady the offered load on this VM.)
	opts := netlab.FloodOptions{Affinity: fmt.Sprintf("%d,%d", sendCPU, rpsCPU)}
	for i := 0; i < b.N; i++ {
		floodCost(b, lab, variants, opts, rpsCPU)
	}
}

// floodCost measures each tracer variant's cost on one flood: rounds of
// one window per variant, the variants' order rotating each round, then a
// pass with the kernel's BPF statistics on.
func floodCost(b *testing.B, lab *netlab.Lab, variants []tracer, opts netlab.FloodOptions, rpsCPU int) {
	const (
		rounds = 16
		warmup = 2 * time.Second
	)
	// One flood for every window, with room for perf's start-up and the
	// statistics pass; cancelled when the windows are done.
	length := warmup + time.Duration(rounds*len(variants)+len(variants))*(floodWindow+floodSettle+time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := lab.Flood(ctx, length, opts)
		done <- err
	}()
	defer func() {
		cancel()
		<-done // the flood's error is only of interest while it should run
	}()

	time.Sleep(warmup)
	runs := map[string][]floodRun{} // per variant, index = round
	var detail []string
	for r := 0; r < rounds; r++ {
		for k := range variants {
			v := variants[(r+k)%len(variants)]
			x := measureWindow(b, lab, v, done)
			if v.name == "none" && x.rate == 0 {
				b.Fatal("no packets delivered in a window without a tracer: is the flood running?")
			}
			runs[v.name] = append(runs[v.name], x)
			detail = append(detail, fmt.Sprintf("round %2d %-7s received %6.0f pkt/s, drops/s socket %6.0f backlog %6.0f, cpu %v",
				r, v.name, x.rate, x.sockDrops, x.backlogDrops, x.cpus))
		}
	}
	// The programs' own run time, in a separate pass: the kernel's BPF
	// statistics cost time themselves, so they are off above.
	stats, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
	if err != nil {
		b.Fatalf("enable BPF stats: %v", err)
	}
	timed := map[string]progStats{}
	for _, v := range variants {
		if v.name != "none" && v.name != "perf" {
			timed[v.name] = measureWindow(b, lab, v, done).stats
		}
	}
	stats.Close()

	reportFloodCost(b, variants, runs, rpsCPU)
	reportRunTimes(b, timed)
	// Every window, for reading the medians against: `go test -v` shows
	// all of it, plain `go test` only the first lines.
	b.Log("windows:\n" + strings.Join(detail, "\n"))
}

// A tracer settles for floodSettle before its floodWindow of measurement.
const (
	floodWindow = time.Second
	floodSettle = 500 * time.Millisecond
)

// floodRun is what one window measured under one tracer variant.
type floodRun struct {
	rate, sockDrops, backlogDrops float64
	cpus                          []cpuSplit
	stats                         progStats
}

// measureWindow starts v, lets it settle and measures one window of the
// flood, which must still be running (done not ready).
func measureWindow(b *testing.B, lab *netlab.Lab, v tracer, done <-chan error) floodRun {
	stop := v.start(b)
	time.Sleep(floodSettle)
	w0 := readRxWindow(b, lab)
	time.Sleep(floodWindow)
	w1 := readRxWindow(b, lab)
	st := stop()
	select {
	case err := <-done:
		b.Fatalf("the flood ended before the measurements did: %v", err)
	default:
	}
	d := w1.counters.Sub(w0.counters)
	secs := w1.at.Sub(w0.at).Seconds()
	return floodRun{
		rate:         float64(d.UDPInDatagrams) / secs,
		sockDrops:    float64(d.UDPRcvbufErrors) / secs,
		backlogDrops: float64(d.TotalSoftnetDropped()) / secs,
		cpus:         w1.split(w0),
		stats:        st,
	}
}

// pickRuns is f of each run, in round order.
func pickRuns(runs []floodRun, f func(floodRun) float64) []float64 {
	var xs []float64
	for _, x := range runs {
		xs = append(xs, f(x))
	}
	return xs
}

// reportFloodCost reports each variant's delivery rate and its cost
// against the window without a tracer of the same round, and the flood's
// own load and noise.
func reportFloodCost(b *testing.B, variants []tracer, runs map[string][]floodRun, rpsCPU int) {
	rate := func(x floodRun) float64 { return x.rate }
	base := pickRuns(runs["none"], rate)
	floor := pickRuns(runs["floor"], rate)
	cost := map[string]float64{}
	for _, v := range variants {
		b.ReportMetric(median(pickRuns(runs[v.name], rate)), "pkt/s-"+v.name)
		if v.name == "none" {
			continue
		}
		// Paired per round: against the window without a tracer of the
		// same round.
		var c, over []float64
		for r, x := range runs[v.name] {
			c = append(c, (1-x.rate/base[r])*100)
			over = append(over, (floor[r]-x.rate)/base[r]*100)
		}
		cost[v.name] = median(c)
		b.ReportMetric(median(c), "cost-%-"+v.name)
		b.ReportMetric(slices.Min(c), "cost-%-"+v.name+"-min")
		b.ReportMetric(slices.Max(c), "cost-%-"+v.name+"-max")
		if v.name != "floor" {
			b.ReportMetric(median(over), "over-floor-%-"+v.name)
		}
		b.Logf("%-7s cost per round (%%): %s", v.name, fmtAll(c))
	}
	var dev []float64
	for _, x := range base {
		dev = append(dev, abs(x/median(base)-1)*100)
	}
	noise := median(dev)
	// An eBPF cost within the flood's own noise counts as the noise: the
	// ratio is then a lower bound, not a number blown up by a cost that
	// noise took to zero or below.
	reportRatios(b, perfRatios(cost, max(0.1, noise)))
	none := runs["none"]
	b.ReportMetric(median(pickRuns(none, func(x floodRun) float64 { return x.rate + x.sockDrops + x.backlogDrops })), "offered-pkt/s")
	b.ReportMetric(median(pickRuns(none, func(x floodRun) float64 { return x.sockDrops })), "sockdrop/s")
	b.ReportMetric(median(pickRuns(none, func(x floodRun) float64 { return x.backlogDrops })), "backlogdrop/s")
	b.ReportMetric(median(pickRuns(none, func(x floodRun) float64 { return x.cpus[rpsCPU].task })), "srvcpu-%")
	b.ReportMetric(noise, "noise-%-none")
}

// reportRunTimes reports each eBPF variant's run time per tracepoint hit
// from the kernel's statistics, and the same less the empty program's
// (the statistics' own overhead).
func reportRunTimes(b *testing.B, st map[string]progStats) {
	for name, s := range st {
		if s.runs == 0 {
			continue
		}
		b.ReportMetric(s.nsPerRun, "ns/event-"+name)
		if name != "floor" && st["floor"].runs > 0 {
			b.ReportMetric(s.nsPerRun-st["floor"].nsPerRun, "prog-ns/event-"+name)
		}
	}
}

// BenchmarkDropPathCost is the precise companion of BenchmarkTracerCost:
// one thread sends UDP datagrams to a closed port on loopback, so every
// packet is dropped (NO_SOCKET) synchronously in the sender's own softirq
// and the time per packet includes the whole cost of tracing its drop.
// It reports the best ns/pkt of several interleaved rounds per variant,
// each tracer's cost, and added-ns/drop-<v>: the time a tracer adds per
// drop, the floor's being the kernel's tracepoint dispatch to an empty
// program. perf/reasons-cost and perf/stacks-cost divide the time perf
// record adds per packet by the time the eBPF counter adds, reasons only
// and with stacks, the latter never taken below the floor's, so noise
// cannot inflate the ratio.
func BenchmarkDropPathCost(b *testing.B) {
	testenv.RequireRoot(b)
	perf := testenv.RequireTool(b, "perf", "linux-perf")
	b.Cleanup(ensureTracefs(b))
	send := netlab.ClosedPortSender(b)

	variants := tracerVariants(b, perf)
	// Sending from one thread on one CPU: a migration in the middle of a
	// round costs more than a tracer does.
	defer netlab.PinToLastCPU(b)()
	const (
		rounds  = 15
		packets = 40000
	)
	perPkt := map[string][]float64{}
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			for k := range variants {
				v := variants[(r+k)%len(variants)]
				stop := v.start(b)
				t0 := time.Now()
				send(packets)
				el := time.Since(t0)
				stop()
				perPkt[v.name] = append(perPkt[v.name], float64(el.Nanoseconds())/packets)
			}
		}
	}
	// The programs' own run time, in a separate pass: the kernel's BPF
	// statistics cost time themselves.
	stats, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
	if err != nil {
		b.Fatalf("enable BPF stats: %v", err)
	}
	timed := map[string]progStats{}
	for _, v := range variants {
		if v.name == "none" || v.name == "perf" {
			continue
		}
		stop := v.start(b)
		send(packets)
		timed[v.name] = stop()
	}
	stats.Close()

	base := slices.Min(perPkt["none"])
	added := map[string]float64{}
	for _, v := range variants {
		m := slices.Min(perPkt[v.name])
		b.ReportMetric(m, "ns/pkt-"+v.name)
		if v.name != "none" {
			added[v.name] = m - base
			b.ReportMetric(m-base, "added-ns/drop-"+v.name)
			// Packet rate lost: 1 - base/m.
			b.ReportMetric((1-base/m)*100, "cost-%-"+v.name)
		}
	}
	reportRunTimes(b, timed)
	reportRatios(b, perfRatios(added, 1))
}

// perfRatios divides perf record's cost by slowpath's, reasons only and
// with stacks (sampled as the command does by default), each taken no
// lower than the empty program's cost (floor) or eps, so noise cannot
// inflate a ratio.
func perfRatios(cost map[string]float64, eps float64) map[string]float64 {
	return map[string]float64{
		"perf/reasons-cost": cost["perf"] / max(cost["reasons"], cost["floor"], eps),
		"perf/stacks-cost":  cost["perf"] / max(cost["stacks"], cost["floor"], eps),
	}
}

func reportRatios(b *testing.B, r map[string]float64) {
	for _, name := range slices.Sorted(maps.Keys(r)) {
		b.ReportMetric(r[name], name)
	}
}

// rxWindow is a reading of what a flood changes: the receiver
// namespace's UDP counters, the host's softnet drops, and the time every
// CPU spent in tasks, in softirq and idle.
type rxWindow struct {
	at       time.Time
	counters netlab.Counters
	cpus     []procfs.CPUStat // index = CPU
}

func readRxWindow(b *testing.B, lab *netlab.Lab) rxWindow {
	c, err := lab.ReadCounters()
	if err != nil {
		b.Fatal(err)
	}
	fs, err := procfs.NewFS("/proc")
	if err != nil {
		b.Fatal(err)
	}
	st, err := fs.Stat()
	if err != nil {
		b.Fatalf("read /proc/stat: %v", err)
	}
	w := rxWindow{at: time.Now(), counters: c, cpus: make([]procfs.CPUStat, runtime.NumCPU())}
	for i := range w.cpus {
		s, ok := st.CPU[int64(i)]
		if !ok {
			b.Fatalf("/proc/stat: no cpu%d", i)
		}
		w.cpus[i] = s
	}
	return w
}

// cpuSplit is how one CPU spent a window, in percent. /proc/stat samples
// it at every tick (this kernel has no IRQ_TIME_ACCOUNTING), which is
// precise enough over a second of 250 ticks.
type cpuSplit struct{ task, softirq, idle float64 }

func (s cpuSplit) String() string {
	return fmt.Sprintf("task %.0f%% softirq %.0f%% idle %.0f%%", s.task, s.softirq, s.idle)
}

func (w rxWindow) split(w0 rxWindow) []cpuSplit {
	out := make([]cpuSplit, len(w.cpus))
	for i, a := range w.cpus {
		z := w0.cpus[i]
		task := a.User + a.Nice + a.System - z.User - z.Nice - z.System
		soft := a.SoftIRQ + a.IRQ - z.SoftIRQ - z.IRQ
		idle := a.Idle + a.Iowait - z.Idle - z.Iowait
		all := task + soft + idle + a.Steal - z.Steal
		if all <= 0 {
			continue
		}
		out[i] = cpuSplit{task / all * 100, soft / all * 100, idle / all * 100}
	}
	return out
}

func abs(x float64) float64 { return max(x, -x) }

func fmtAll(xs []float64) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.FormatFloat(x, 'f', 1, 64))
	}
	return strings.Join(s, " ")
}

// ebpfTracer attaches slowpath's drop counter as `slowpath net drops`
// does; stop reads the maps (as the command does at the end), detaches,
// and returns the program's run statistics.
func ebpfTracer(o dropcounter.Options) func(*testing.B) func() progStats {
	return func(b *testing.B) func() progStats {
		tr, err := dropcounter.Start(o)
		if err != nil {
			b.Fatal(err)
		}
		return func() progStats {
			defer tr.Close()
			if err := tr.Stop(); err != nil {
				b.Fatal(err)
			}
			if _, err := tr.Read(); err != nil {
				b.Fatal(err)
			}
			st, err := tr.Stats()
			if err != nil {
				b.Fatal(err)
			}
			return toProgStats(st)
		}
	}
}

func toProgStats(st *ebpf.ProgramStats) progStats {
	if st.RunCount == 0 {
		return progStats{}
	}
	return progStats{runs: st.RunCount, nsPerRun: float64(st.Runtime.Nanoseconds()) / float64(st.RunCount)}
}

// floorTracer attaches a program that does nothing to the same tracepoint
// the same way (tp_btf): its cost is the kernel's dispatch, which every
// program on skb:kfree_skb pays whatever it does.
func floorTracer(b *testing.B) func(*testing.B) func() progStats {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         ebpf.Tracing,
		AttachType:   ebpf.AttachTraceRawTp,
		AttachTo:     "kfree_skb",
		License:      "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if err != nil {
		b.Fatalf("load the empty program: %v", err)
	}
	b.Cleanup(func() { prog.Close() })
	return func(b *testing.B) func() progStats {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			b.Fatal(err)
		}
		// Statistics are cumulative per program: report this attachment's.
		before, err := prog.Stats()
		if err != nil {
			b.Fatal(err)
		}
		return func() progStats {
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
			after, err := prog.Stats()
			if err != nil {
				b.Fatal(err)
			}
			return toProgStats(&ebpf.ProgramStats{RunCount: after.RunCount - before.RunCount, Runtime: after.Runtime - before.Runtime})
		}
	}
}

// perfTracer runs `perf record -a -g -e skb:kfree_skb` into a temporary
// directory and stops it with SIGINT, as an operator would.
func perfTracer(perf string) func(*testing.B) func() progStats {
	return func(b *testing.B) func() progStats {
		dir := b.TempDir()
		cmd := exec.Command(perf, "record", "-a", "-g", "-e", "skb:kfree_skb", "-o", filepath.Join(dir, "perf.data"))
		cmd.Dir = dir
		out, err := os.Create(filepath.Join(dir, "perf.log"))
		if err != nil {
			b.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		// perf prints nothing when its events are armed; it has opened them
		// once it wrote the file header.
		deadline := time.Now().Add(10 * time.Second)
		for {
			if st, err := os.Stat(filepath.Join(dir, "perf.data")); err == nil && st.Size() > 0 {
				break
			}
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				log, _ := os.ReadFile(filepath.Join(dir, "perf.log"))
				b.Fatalf("perf record did not start: %s", log)
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond)
		return func() progStats {
			_ = cmd.Process.Signal(syscall.SIGINT)
			err := cmd.Wait()
			out.Close()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				b.Fatalf("perf record: %v", err)
			}
			// perf.data reaches tens of MB per round: do not keep it until
			// the benchmark ends.
			if err := os.RemoveAll(dir); err != nil {
				b.Errorf("remove perf output: %v", err)
			}
			return progStats{}
		}
	}
}

// ensureTracefs mounts tracefs for perf when it is not mounted, and
// returns the undo (unmount only what we mounted).
func ensureTracefs(b *testing.B) func() {
	const dir = "/sys/kernel/tracing"
	if _, err := os.Stat(filepath.Join(dir, "events")); err == nil {
		return func() {}
	}
	if err := unix.Mount("tracefs", dir, "tracefs", 0, ""); err != nil {
		b.Fatalf("mount tracefs on %s for perf: %v", dir, err)
	}
	return func() {
		if err := unix.Unmount(dir, 0); err != nil {
			b.Errorf("unmount %s: %v", dir, err)
		}
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return stats.Median(xs)
}

// tracerVariants are the ways both benchmarks run the same load: no
// tracer, an empty program on the tracepoint (the floor), slowpath reasons
// only, slowpath with stacks (sampled as the command does by default),
// and perf record.
func tracerVariants(b *testing.B, perf string) []tracer {
	return []tracer{
		{"none", func(*testing.B) func() progStats { return func() progStats { return progStats{} } }},
		{"floor", floorTracer(b)},
		{"reasons", ebpfTracer(dropcounter.Options{})},
		{"stacks", ebpfTracer(dropcounter.Options{Stacks: true, StackEvery: DefaultStackEvery})},
		{"perf", perfTracer(perf)},
	}
}
