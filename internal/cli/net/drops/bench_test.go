package drops

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"

	bpfdrops "github.com/slowpath/slowpath/internal/bpf/drops"
	"github.com/slowpath/slowpath/internal/lab/netlab"
	"github.com/slowpath/slowpath/internal/testenv"
)

// tracer is one way of watching drops during a flood.
type tracer struct {
	name  string
	start func(b *testing.B) (stop func() (nsPerRun float64))
}

// BenchmarkTracerCost measures what watching drops costs the traffic: the
// delivered packet rate (received by the iperf3 server) of a UDP flood
// between two namespaces (netlab, RPS to one CPU, netdev_max_backlog 16),
// with no tracer, with slowpath's eBPF counter (reasons only, and with
// stacks) and with `perf record -a -g -e skb:kfree_skb`, the method of the
// incident.
//
// The sender runs on one CPU; the receive softirq (RPS) and the iperf3
// server share the other. That CPU is the bottleneck: its softirq takes
// every packet the sender manages, drops most of them at the full socket
// buffer, and the server gets what time is left (about a quarter). A
// tracer's time per drop comes out of that rest, so the delivered rate
// loses (tracer time)/(server's share of the CPU), about four times the
// tracer's own share of the CPU. model-cost-%-reasons computes that from
// measured inputs, to check the measured cost against.
//
// Variants are interleaved: every round runs each once, 1 s each, in an
// order rotated from round to round, and a tracer's cost is taken per
// round against that round's run without a tracer, so slow drifts of this
// shared machine cancel. The sender's own rate still varies by tens of
// percent from one flood to the next, and the delivered rate with it.
// Reported, medians over rounds:
//
//   - pkt/s-<v>: delivered packets per second (the metric);
//   - cost-%-<v>, with -min and -max over rounds: delivered rate lost
//     against no tracer;
//   - perf/reasons-cost: the ratio of the two median costs; the eBPF
//     counter's is never taken below model-cost-%-reasons, so noise
//     cannot blow the ratio up;
//   - sockdrop/s, backlogdrop/s: the drops a tracer pays for (no tracer);
//   - srvcpu-%: the server's share of the RPS CPU (user and system time,
//     /proc/stat, no tracer);
//   - ns/drop-<v>: the eBPF program's own run time per drop (kernel BPF
//     statistics, in a separate pass because they cost time themselves),
//     and bpfcpu-%-<v>: that times the drop rate, as a share of one CPU;
//   - noise-%-none: median absolute deviation of the rate without a
//     tracer, relative to its median: the flood's own noise per round;
//   - model-cost-%-reasons: sockdrop/s × ns/drop-reasons / srvcpu-%, the
//     rate the program's own time must cost; the tracepoint's dispatch is
//     not in it (see BenchmarkDropPathCost), so it is a lower bound.
func BenchmarkTracerCost(b *testing.B) {
	perf := testenv.RequireTool(b, "perf", "linux-perf")
	if runtime.NumCPU() < 2 {
		b.Skip("needs 2 CPUs: one sends, one receives")
	}
	const rpsCPU, sendCPU = 0, 1
	lab := netlab.New(b, netlab.Options{RPSCPU: rpsCPU})
	if err := lab.SetBacklog(16); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ensureTracefs(b))
	variants := tracerVariants(perf)
	// The sender on one CPU, the server pinned to the RPS CPU: left to
	// the scheduler, the server now and then moves to the sender's CPU,
	// which changes the rate more than any tracer does.
	opts := netlab.FloodOptions{Affinity: fmt.Sprintf("%d,%d", sendCPU, rpsCPU)}
	for i := 0; i < b.N; i++ {
		floodCost(b, lab, variants, opts, rpsCPU)
	}
}

func floodCost(b *testing.B, lab *netlab.Lab, variants []tracer, opts netlab.FloodOptions, rpsCPU int) {
	const (
		rounds = 12
		flood  = time.Second
	)
	type run struct {
		rate, sockDrops, backlogDrops float64
		cpus                          []cpuSplit
	}
	runs := map[string][]run{} // per variant, index = round
	var detail []string
	for r := 0; r < rounds; r++ {
		for k := range variants {
			v := variants[(r+k)%len(variants)]
			stop := v.start(b)
			w0 := readRxWindow(b, lab)
			res, err := lab.Flood(context.Background(), flood, opts)
			w1 := readRxWindow(b, lab)
			stop()
			if err != nil {
				b.Fatalf("%s: %v", v.name, err)
			}
			d := w1.counters.Sub(w0.counters)
			x := run{
				rate:         res.ReceivedPacketsPerSecond(),
				sockDrops:    float64(d.UDPRcvbufErrors) / res.Seconds,
				backlogDrops: float64(d.TotalSoftnetDropped()) / res.Seconds,
				cpus:         w1.split(w0),
			}
			runs[v.name] = append(runs[v.name], x)
			detail = append(detail, fmt.Sprintf("round %d %-7s received %6.0f pkt/s, sent %6.0f pkt/s, drops/s socket %6.0f backlog %6.0f, cpu %v",
				r, v.name, x.rate, float64(res.SentPackets)/res.Seconds, x.sockDrops, x.backlogDrops, x.cpus))
		}
	}
	// The program's own run time, in a separate pass: the kernel's BPF
	// statistics cost time themselves, so they are off above.
	nsPerDrop := runTimes(b, variants, func() error {
		_, err := lab.Flood(context.Background(), flood, opts)
		return err
	})

	pick := func(name string, f func(run) float64) []float64 {
		var xs []float64
		for _, x := range runs[name] {
			xs = append(xs, f(x))
		}
		return xs
	}
	base := pick("none", func(x run) float64 { return x.rate })
	cost := map[string]float64{}
	for _, v := range variants {
		b.ReportMetric(median(pick(v.name, func(x run) float64 { return x.rate })), "pkt/s-"+v.name)
		if v.name == "none" {
			continue
		}
		// Paired per round: against the run without a tracer of the same
		// round.
		var c []float64
		for r, x := range runs[v.name] {
			c = append(c, (1-x.rate/base[r])*100)
		}
		cost[v.name] = median(c)
		b.ReportMetric(median(c), "cost-%-"+v.name)
		b.ReportMetric(slices.Min(c), "cost-%-"+v.name+"-min")
		b.ReportMetric(slices.Max(c), "cost-%-"+v.name+"-max")
		b.Logf("%-7s cost per round (%%): %s", v.name, fmtAll(c))
	}
	sock := median(pick("none", func(x run) float64 { return x.sockDrops }))
	srv := median(pick("none", func(x run) float64 { return x.cpus[rpsCPU].task }))
	b.ReportMetric(sock, "sockdrop/s")
	b.ReportMetric(median(pick("none", func(x run) float64 { return x.backlogDrops })), "backlogdrop/s")
	b.ReportMetric(srv, "srvcpu-%")
	for name, ns := range nsPerDrop {
		b.ReportMetric(ns, "ns/drop-"+name)
		// Drops per second of the flood rounds of the same variant: the
		// single flood of the statistics pass is too noisy for this.
		drops := median(pick(name, func(x run) float64 { return x.sockDrops + x.backlogDrops }))
		b.ReportMetric(ns*drops/1e7, "bpfcpu-%-"+name)
	}
	// How much the flood itself varies: the median absolute deviation of
	// the rate without a tracer, relative to its median.
	var dev []float64
	for _, x := range base {
		dev = append(dev, abs(x/median(base)-1)*100)
	}
	b.ReportMetric(median(dev), "noise-%-none")
	model := 0.0
	if srv > 0 {
		model = sock * nsPerDrop["reasons"] / 1e9 * 100 / (srv / 100)
		b.ReportMetric(model, "model-cost-%-reasons")
		b.Logf("model: %.0f socket drops/s × %.0f ns = %.2f%% of the RPS CPU, taken from the server's %.0f%% of it: %.1f%% of the delivered rate",
			sock, nsPerDrop["reasons"], sock*nsPerDrop["reasons"]/1e7, srv, model)
	}
	// The eBPF counter's cost is never taken below what its own run time
	// must cost, so noise cannot inflate the ratio.
	b.ReportMetric(cost["perf"]/max(cost["reasons"], model, 0.1), "perf/reasons-cost")
	for _, l := range detail {
		b.Log(l)
	}
}

// BenchmarkDropPathCost is the precise companion of BenchmarkTracerCost:
// one thread sends UDP datagrams to a closed port on loopback, so every
// packet is dropped (NO_SOCKET) synchronously in the sender's own softirq
// and the time per packet includes the whole cost of tracing its drop.
// It reports the best ns/pkt of several interleaved rounds per variant and
// each tracer's cost; it is far less noisy than a two-process flood on a
// shared 2-CPU machine. perf/reasons-cost divides the time perf record
// adds per packet by the time the eBPF counter adds, and the latter is
// never taken below the program's own run time per drop (kernel BPF
// statistics), so noise cannot inflate the ratio.
func BenchmarkDropPathCost(b *testing.B) {
	testenv.RequireRoot(b)
	perf := testenv.RequireTool(b, "perf", "linux-perf")
	b.Cleanup(ensureTracefs(b))
	send, closeSender := closedPortSender(b)
	defer closeSender()

	variants := tracerVariants(perf)
	const (
		rounds  = 5
		packets = 150000
	)
	perPkt := map[string][]float64{}
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			for _, v := range variants {
				stop := v.start(b)
				t0 := time.Now()
				if err := send(packets); err != nil {
					b.Fatal(err)
				}
				el := time.Since(t0)
				stop()
				perPkt[v.name] = append(perPkt[v.name], float64(el.Nanoseconds())/packets)
			}
		}
	}
	nsPerDrop := runTimes(b, variants, func() error { return send(packets) })
	base := slices.Min(perPkt["none"])
	added := map[string]float64{}
	for _, v := range variants {
		m := slices.Min(perPkt[v.name])
		b.ReportMetric(m, "ns/pkt-"+v.name)
		if v.name != "none" {
			added[v.name] = m - base
			// Packet rate lost: 1 - base/m.
			b.ReportMetric((1-base/m)*100, "cost-%-"+v.name)
		}
	}
	for name, ns := range nsPerDrop {
		b.ReportMetric(ns, "ns/drop-"+name)
	}
	reasons := max(added["reasons"], nsPerDrop["reasons"])
	b.ReportMetric(added["perf"]/reasons, "perf/reasons-cost")
}

// runTimes runs load once under each eBPF variant with the kernel's BPF
// run-time statistics on, and returns the program's mean ns per drop.
func runTimes(b *testing.B, variants []tracer, load func() error) map[string]float64 {
	stats, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
	if err != nil {
		b.Fatalf("enable BPF stats: %v", err)
	}
	defer stats.Close()
	out := map[string]float64{}
	for _, v := range variants {
		if v.name != "reasons" && v.name != "stacks" {
			continue
		}
		stop := v.start(b)
		err := load()
		ns := stop()
		if err != nil {
			b.Fatal(err)
		}
		out[v.name] = ns
	}
	return out
}

// rxWindow is a reading of what a flood changes: the receiver
// namespace's UDP counters, the host's softnet drops, and the time every
// CPU spent in tasks, in softirq and idle.
type rxWindow struct {
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
	w := rxWindow{counters: c, cpus: make([]procfs.CPUStat, runtime.NumCPU())}
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

// closedPortSender returns a function sending n datagrams from an
// unconnected loopback socket to a port nobody listens on.
func closedPortSender(b *testing.B) (func(n int) error, func()) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		b.Fatal(err)
	}
	probe, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		b.Fatal(err)
	}
	lo := [4]byte{127, 0, 0, 1}
	if err := unix.Bind(probe, &unix.SockaddrInet4{Addr: lo}); err != nil {
		b.Fatal(err)
	}
	sa, err := unix.Getsockname(probe)
	if err != nil {
		b.Fatal(err)
	}
	unix.Close(probe) // the port is now closed
	dst := &unix.SockaddrInet4{Addr: lo, Port: sa.(*unix.SockaddrInet4).Port}
	payload := []byte("slowpath")
	return func(n int) error {
			for i := 0; i < n; i++ {
				if err := unix.Sendto(fd, payload, 0, dst); err != nil {
					return fmt.Errorf("sendto %v: %w", dst, err)
				}
			}
			return nil
		}, func() {
			unix.Close(fd)
		}
}

// ebpfTracer attaches slowpath's drop counter as `slowpath net drops`
// does; stop reads the maps (as the command does at the end), detaches,
// and returns the program's mean run time per drop.
func ebpfTracer(o bpfdrops.Options) func(*testing.B) func() float64 {
	return func(b *testing.B) func() float64 {
		tr, err := bpfdrops.Start(o)
		if err != nil {
			b.Fatal(err)
		}
		return func() float64 {
			defer tr.Close()
			if err := tr.Stop(); err != nil {
				b.Fatal(err)
			}
			if _, err := tr.Read(); err != nil {
				b.Fatal(err)
			}
			st, err := tr.Stats()
			if err != nil || st.RunCount == 0 {
				return 0
			}
			return float64(st.Runtime.Nanoseconds()) / float64(st.RunCount)
		}
	}
}

// perfTracer runs `perf record -a -g -e skb:kfree_skb` into a temporary
// directory and stops it with SIGINT, as an operator would.
func perfTracer(perf string) func(*testing.B) func() float64 {
	return func(b *testing.B) func() float64 {
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
		return func() float64 {
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
			return 0
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
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// tracerVariants are the four ways both benchmarks run the same load: no
// tracer, slowpath reasons only, slowpath with stacks, and perf record.
func tracerVariants(perf string) []tracer {
	return []tracer{
		{"none", func(*testing.B) func() float64 { return func() float64 { return 0 } }},
		{"reasons", ebpfTracer(bpfdrops.Options{})},
		{"stacks", ebpfTracer(bpfdrops.Options{Stacks: true})},
		{"perf", perfTracer(perf)},
	}
}
