package capture

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/capture/capfile"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// The search incident's shape, time-based: psync 4 MiB writers and mmap
// random readers, on ext4 over a loop device. The files stay in the page
// cache (invalidate=0, written files small enough to stay under the dirty
// limits), so the job is bound by CPU, which the capture shares, and not
// by a device other engineers share: the ratio measures the capture, not
// the disk's noise.
const benchJob = `[global]
directory=%s
time_based=1
runtime=2
invalidate=0
[writer]
rw=write
ioengine=psync
bs=4m
size=8m
numjobs=2
[reader]
rw=randread
ioengine=mmap
bs=4k
filename=blob
size=64m
numjobs=2
`

type fioIOPS struct {
	Jobs []struct {
		Read struct {
			IOPS float64 `json:"iops"`
		} `json:"read"`
		Write struct {
			IOPS float64 `json:"iops"`
		} `json:"write"`
	} `json:"jobs"`
}

// BenchmarkCaptureOverhead runs the known fio job without and with a
// capture (default settings, filtered by the fio processes' cgroup),
// alternating, and reports:
//
//   - iops-ratio: median over rounds of IOPS with capture / IOPS without
//     (the target is at least 0.97 at the default settings);
//   - cpu-ns/event: slowpath's own CPU (user + system) per event handed
//     over by the kernel, from the attach to the end (loading and
//     verifying the programs, before the workload starts, is logged apart); bpf-ns/event: the kernel time in the capture's
//     programs per event (kernel BPF statistics, on for the benchmark),
//     which the traced threads pay;
//   - bytes/Mio: capture directory size per million records;
//   - peak-rss-MiB: this process's peak resident memory (VmHWM) after the
//     captures, which includes the test binary itself.
func BenchmarkCaptureOverhead(b *testing.B) { overhead(b, benchJob) }

// A worst case: one 4 KiB pread64 per I/O from the page cache, every one
// recorded, nothing else to wait for.
const syscallJob = `[global]
directory=%s
time_based=1
runtime=2
invalidate=0
[reader]
rw=randread
ioengine=psync
bs=4k
filename=blob
size=64m
numjobs=2
`

// BenchmarkCaptureOverheadSyscalls is BenchmarkCaptureOverhead on the
// worst case: cached 4 KiB preads, each one a record.
func BenchmarkCaptureOverheadSyscalls(b *testing.B) { overhead(b, syscallJob) }

func overhead(b *testing.B, jobText string) {
	testenv.RequireRoot(b)
	fio := testenv.RequireTool(b, "fio", "fio")
	mnt, _ := loopExt4(b, 512<<20)
	cg := testCgroup(b)
	job := layoutJob(b, fio, jobText, mnt)
	// Warm the blob.
	if out, err := exec.Command("dd", "if="+filepath.Join(mnt, "blob"), "of=/dev/null", "bs=1M").CombinedOutput(); err != nil {
		b.Fatalf("read blob: %v: %s", err, out)
	}
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err == nil {
		defer stats.Close()
	}
	runFio := func() float64 {
		outp := filepath.Join(b.TempDir(), "fio.json")
		inCgroup(b, cg, fio, "--output-format=json", "--output="+outp, job)
		raw, err := os.ReadFile(outp)
		if err != nil {
			b.Fatal(err)
		}
		var fo fioIOPS
		if err := json.Unmarshal(raw, &fo); err != nil {
			b.Fatal(err)
		}
		var iops float64
		for _, j := range fo.Jobs {
			iops += j.Read.IOPS + j.Write.IOPS
		}
		return iops
	}
	const rounds = 5
	var ratios []float64
	var events, records, bytes uint64
	var cpu, bpf float64
	var bpfRuns uint64
	for i := range rounds {
		base := runFio()
		out := filepath.Join(b.TempDir(), fmt.Sprintf("cap%d", i))
		finish := startCapture(b, Options{Mount: mnt, Cgroup: cg}, out)
		with := runFio()
		res, err := finish()
		if err != nil {
			b.Fatal(err)
		}
		ratios = append(ratios, with/base)
		b.Logf("round %d: %.0f IOPS without, %.0f with capture (%.3f); %d events, %d records, dropped %d; slowpath CPU %v running, %v to load",
			i, base, with, with/base, res.Events, res.Manifest.Events.Ops+res.Manifest.Events.Block, res.Manifest.Events.Dropped, res.UserCPU, res.SetupCPU)
		events += res.Events
		records += res.Manifest.Events.Ops + res.Manifest.Events.Block
		cpu += float64(res.UserCPU.Nanoseconds())
		bpf += float64(res.BPFTime.Nanoseconds())
		bpfRuns += res.BPFRuns
		for _, name := range []string{capfile.ManifestName, capfile.OpsName, capfile.BlockName} {
			if st, err := os.Stat(filepath.Join(out, name)); err == nil {
				bytes += uint64(st.Size())
			}
		}
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "iops-ratio")
	b.ReportMetric(ratios[0], "iops-ratio-min")
	if events > 0 {
		b.ReportMetric(cpu/float64(events), "cpu-ns/event")
		b.ReportMetric(bpf/float64(events), "bpf-ns/event")
	}
	if bpfRuns > 0 {
		b.ReportMetric(bpf/float64(bpfRuns), "bpf-ns/run")
	}
	if records > 0 {
		b.ReportMetric(float64(bytes)/float64(records)*1e6, "bytes/Mio")
	}
	b.ReportMetric(float64(records)/rounds, "records/run")
	if hwm, ok := vmHWM(); ok {
		b.ReportMetric(float64(hwm)/(1<<20), "peak-rss-MiB")
	}
}

func vmHWM() (uint64, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}
