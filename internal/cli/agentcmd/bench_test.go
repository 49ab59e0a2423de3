package agentcmd_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/testing/dmtest"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// procCPU is a process's user+system CPU time from /proc/PID/stat (fields
// 14 and 15, in clock ticks of 1/100 s: proc_pid_stat(5)).
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The command name may hold spaces: fields start after the last ')'.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// procRSS returns VmRSS and VmHWM (peak) of pid in bytes.
func procRSS(b *testing.B, pid int) (rss, hwm float64) {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(fs[1], 64)
		switch fs[0] {
		case "VmRSS:":
			rss = kb * 1024
		case "VmHWM:":
			hwm = kb * 1024
		}
	}
	return rss, hwm
}

func freePort(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

type exporter struct {
	name string
	url  string
	cmd  *exec.Cmd
	cpu  time.Duration
	// took is each scrape's time, as the scraper sees it.
	took []time.Duration
}

func startExporter(b *testing.B, name, addr string, argv ...string) *exporter {
	b.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	e := &exporter{name: name, url: "http://" + addr + "/metrics", cmd: cmd}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if resp, err := http.Get(e.url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return e
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s did not serve %s", name, e.url)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *exporter) scrape(b *testing.B, n int) {
	b.Helper()
	before := procCPU(b, e.cmd.Process.Pid)
	for i := 0; i < n; i++ {
		start := time.Now()
		resp, err := http.Get(e.url)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		e.took = append(e.took, time.Since(start))
		if resp.StatusCode != 200 {
			b.Fatalf("%s: status %d", e.name, resp.StatusCode)
		}
	}
	e.cpu += procCPU(b, e.cmd.Process.Pid) - before
}

// BenchmarkAgentVsNodeExporter scrapes the live agent, Debian's
// prometheus-node-exporter restricted to the collectors that read the same
// kind of data (netdev, softnet, ethtool, diskstats), and node_exporter
// with its default collectors (what runs beside the agent on a node), the
// same number of times, alternating in rounds, and reports CPU per scrape
// of each server process, peak RSS (VmHWM), and the agent's ratios to
// each. Steady state: the agent's first scrape, which reads the storage
// and network topology (re-read every 5 minutes), is a warm-up like
// node_exporter's first.
func BenchmarkAgentVsNodeExporter(b *testing.B) {
	ne := testenv.RequireTool(b, "prometheus-node-exporter", "prometheus-node-exporter")
	bin := testenv.BuildSlowpathStripped(b)
	aAddr, nAddr, dAddr := freePort(b), freePort(b), freePort(b)
	agent := startExporter(b, "slowpath agent", aAddr, bin, "agent", "--web.listen-address", aAddr, "--cloud", "none")
	nodeExp := startExporter(b, "node_exporter", nAddr, ne, "--web.listen-address", nAddr, "--collector.disable-defaults",
		"--collector.netdev", "--collector.softnet", "--collector.ethtool", "--collector.diskstats")
	neDefault := startExporter(b, "node_exporter (defaults)", dAddr, ne, "--web.listen-address", dAddr)
	sides := []*exporter{agent, nodeExp, neDefault}
	const warmup, rounds, perRound = 5, 10, 30
	for _, e := range sides {
		e.scrape(b, warmup)
		e.cpu = 0
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			for k := range sides {
				sides[(r+k)%len(sides)].scrape(b, perRound)
			}
		}
	}
	b.StopTimer()
	n := float64(b.N * rounds * perRound)
	cpu := func(e *exporter) float64 { return float64(e.cpu.Microseconds()) / n }
	_, hwm := procRSS(b, agent.cmd.Process.Pid)
	_, nhwm := procRSS(b, nodeExp.cmd.Process.Pid)
	_, dhwm := procRSS(b, neDefault.cmd.Process.Pid)
	b.ReportMetric(cpu(agent), "agent-cpu-µs/scrape")
	b.ReportMetric(cpu(nodeExp), "node-exporter-cpu-µs/scrape")
	b.ReportMetric(cpu(neDefault), "node-exporter-default-cpu-µs/scrape")
	b.ReportMetric(cpu(agent)/cpu(nodeExp), "cpu-ratio")
	b.ReportMetric(cpu(agent)/cpu(neDefault), "cpu-ratio-default")
	b.ReportMetric(hwm/1e6, "agent-peak-rss-MB")
	b.ReportMetric(nhwm/1e6, "node-exporter-peak-rss-MB")
	b.ReportMetric(dhwm/1e6, "node-exporter-default-peak-rss-MB")
	b.ReportMetric(hwm/nhwm, "peak-rss-ratio")
	b.ReportMetric(hwm/dhwm, "peak-rss-ratio-default")
}

// allocated is the exporter's own go_memstats_alloc_bytes_total (both are
// Go programs): bytes allocated since it started. Reading it is a scrape.
func (e *exporter) allocated(b *testing.B) float64 {
	b.Helper()
	resp, err := http.Get(e.url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_alloc_bytes_total "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("%s: go_memstats_alloc_bytes_total %q", e.name, v)
			}
			return f
		}
	}
	b.Fatalf("%s: no go_memstats_alloc_bytes_total", e.name)
	return 0
}

// p99 of the scrape times since the last reset.
func (e *exporter) p99() time.Duration {
	d := slices.Clone(e.took)
	slices.Sort(d)
	return d[(len(d)*99+99)/100-1]
}

// BenchmarkAgentVsNodeExporterSynthetic scrapes the agent and Debian's
// prometheus-node-exporter on synthetic host trees (dmtest: n LUKS2
// dm-crypt devices, each over an NVMe partition with an ext4 mount, and
// m network interfaces), both reading the tree's files: the agent with
// --path.* and --live-sources off (no ioctl, no netlink; dm-crypt known by
// its uuid), node_exporter with its --path.* and the collectors that read
// those same files (diskstats, netdev, netclass, softnet). Scrapes
// alternate in rounds; after warm-up (the agent's first scrape reads the
// topology) reported per side: CPU and bytes allocated per scrape, peak
// RSS, scrape time p99, and each as a ratio agent/node_exporter. Growth
// with the node shows across the sub-benchmarks: the 512-device cost over
// the 1-device one.
func BenchmarkAgentVsNodeExporterSynthetic(b *testing.B) {
	ne := testenv.RequireTool(b, "prometheus-node-exporter", "prometheus-node-exporter")
	bin := testenv.BuildSlowpathStripped(b)
	for _, tc := range []struct{ dm, nics int }{{1, 1}, {64, 1}, {512, 1}, {1, 8}, {1, 64}, {512, 64}} {
		b.Run(fmt.Sprintf("dm=%d/nics=%d", tc.dm, tc.nics), func(b *testing.B) {
			dir := b.TempDir()
			if _, err := dmtest.WriteSynthetic(dir, tc.dm); err != nil {
				b.Fatal(err)
			}
			if err := dmtest.WriteCounters(dir, tc.nics); err != nil {
				b.Fatal(err)
			}
			proc, sys := filepath.Join(dir, "proc"), filepath.Join(dir, "sys")
			aAddr, nAddr := freePort(b), freePort(b)
			agent := startExporter(b, "slowpath agent", aAddr, bin, "agent", "--web.listen-address", aAddr, "--cloud", "none",
				"--path.procfs", proc, "--path.sysfs", sys, "--path.rootfs", dir, "--live-sources", "off", "--collector.cipher=false")
			nodeExp := startExporter(b, "node_exporter", nAddr, ne, "--web.listen-address", nAddr,
				"--path.procfs", proc, "--path.sysfs", sys, "--path.rootfs", dir, "--collector.disable-defaults",
				"--collector.diskstats", "--collector.netdev", "--collector.netclass", "--collector.softnet")
			const warmup, rounds, perRound = 3, 5, 20
			agent.scrape(b, warmup)
			nodeExp.scrape(b, warmup)
			agent.cpu, nodeExp.cpu, agent.took, nodeExp.took = 0, 0, nil, nil
			aAlloc, nAlloc := agent.allocated(b), nodeExp.allocated(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for r := 0; r < rounds; r++ {
					agent.scrape(b, perRound)
					nodeExp.scrape(b, perRound)
				}
			}
			b.StopTimer()
			n := float64(b.N * rounds * perRound)
			aAlloc, nAlloc = (agent.allocated(b)-aAlloc)/n, (nodeExp.allocated(b)-nAlloc)/n
			a, ref := float64(agent.cpu.Microseconds())/n, float64(nodeExp.cpu.Microseconds())/n
			_, hwm := procRSS(b, agent.cmd.Process.Pid)
			_, nhwm := procRSS(b, nodeExp.cmd.Process.Pid)
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(a, "agent-cpu-µs/scrape")
			b.ReportMetric(ref, "node-exporter-cpu-µs/scrape")
			b.ReportMetric(a/ref, "cpu-ratio")
			b.ReportMetric(aAlloc/1e3, "agent-alloc-kB/scrape")
			b.ReportMetric(nAlloc/1e3, "node-exporter-alloc-kB/scrape")
			b.ReportMetric(aAlloc/nAlloc, "alloc-ratio")
			b.ReportMetric(hwm/1e6, "agent-peak-rss-MB")
			b.ReportMetric(nhwm/1e6, "node-exporter-peak-rss-MB")
			b.ReportMetric(hwm/nhwm, "peak-rss-ratio")
			b.ReportMetric(ms(agent.p99()), "agent-p99-ms")
			b.ReportMetric(ms(nodeExp.p99()), "node-exporter-p99-ms")
			b.ReportMetric(float64(agent.p99())/float64(nodeExp.p99()), "p99-ratio")
		})
	}
}
