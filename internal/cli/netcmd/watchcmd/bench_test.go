package watchcmd_test

import (
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// cpuPerSecond runs cmd to completion and returns the CPU time (user+system,
// including its waited-for children: wait4 reports both) per second of wall time.
func cpuPerSecond(b *testing.B, cmd *exec.Cmd) float64 {
	b.Helper()
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v", cmd, err)
	}
	wall := time.Since(start)
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return cpu.Seconds() / wall.Seconds()
}

// BenchmarkWatchCPU measures the CPU time that the real binary's
// `net watch --interval 1s` uses per second of wall time on this machine,
// as a percentage of one CPU, and as a ratio to the reference: what an
// operator runs by hand every second for the same counters (cat of
// softnet_stat, snmp and netstat, `ip -s link`, `ethtool -S` of each NIC).
func BenchmarkWatchCPU(b *testing.B) {
	bin := testenv.BuildSlowpath(b)
	const seconds = 5
	ref := `for i in $(seq ` + "5" + `); do
	cat /proc/net/softnet_stat /proc/net/snmp /proc/net/netstat >/dev/null
	ip -s link >/dev/null
	for d in /sys/class/net/*; do ethtool -S "${d##*/}" >/dev/null 2>&1; done
	sleep 1
done`
	_, errIP := exec.LookPath("ip")
	_, errEthtool := exec.LookPath("ethtool")
	haveRef := errIP == nil && errEthtool == nil
	if _, err := os.Stat("/proc/net/softnet_stat"); err != nil {
		testenv.Unavailable(b, "no /proc/net/softnet_stat")
	}
	var ours, theirs float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ours += cpuPerSecond(b, exec.Command(bin, "net", "watch", "--interval", "1s", "--duration", (seconds*time.Second).String(), "--format", "json"))
		if haveRef {
			theirs += cpuPerSecond(b, exec.Command("sh", "-c", ref))
		}
	}
	ours /= float64(b.N)
	b.ReportMetric(100*ours, "cpu%")
	if haveRef {
		theirs /= float64(b.N)
		b.ReportMetric(100*theirs, "ref-cpu%")
		b.ReportMetric(ours/theirs, "ratio-to-ref")
	}
}
