package doctorcmd

import (
	"context"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/collect"
	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/stats"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// manualPipeline is what an operator runs by hand for the facts doctor
// reads on this host, one process per command as a shell would start
// them (exec'd directly here, without the shell's own cost): lsblk -J -O,
// ethtool -g, -S and -i of every interface, sysctl -a, dmsetup table (when
// installed; on a kernel without device-mapper it fails after opening the
// control node, as it would by hand), and cat of the /proc files.
func manualPipeline(b *testing.B) [][]string {
	b.Helper()
	testenv.RequireTool(b, "lsblk", "util-linux")
	testenv.RequireTool(b, "ethtool", "ethtool")
	testenv.RequireTool(b, "sysctl", "procps")
	cmds := [][]string{{"lsblk", "-J", "-O"}}
	nics, err := os.ReadDir("/sys/class/net")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range nics {
		for _, f := range []string{"-g", "-S", "-i"} {
			cmds = append(cmds, []string{"ethtool", f, n.Name()})
		}
	}
	cmds = append(cmds, []string{"sysctl", "-a"})
	if _, err := exec.LookPath("dmsetup"); err == nil {
		cmds = append(cmds, []string{"dmsetup", "table"})
	} else {
		b.Log("dmsetup not installed (apt-get install dmsetup): left out of the manual pipeline")
	}
	cmds = append(cmds, []string{"cat", "/proc/self/mountinfo", "/proc/net/softnet_stat", "/proc/net/snmp",
		"/proc/net/netstat", "/proc/interrupts", "/proc/cpuinfo", "/proc/crypto"})
	return cmds
}

func runManual(b *testing.B, cmds [][]string) time.Duration {
	start := time.Now()
	for _, c := range cmds {
		cmd := exec.Command(c[0], c[1:]...)
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		// Failures (ethtool -g on lo, dmsetup without dm) are answers too.
		if err := cmd.Run(); err != nil {
			if _, ok := err.(*exec.ExitError); !ok {
				b.Fatalf("%v: %v", c, err)
			}
		}
	}
	return time.Since(start)
}

func median(d []time.Duration) time.Duration {
	v := make([]float64, len(d))
	for i, x := range d {
		v[i] = float64(x)
	}
	return time.Duration(stats.Median(v))
}

// BenchmarkDoctorVsManual times `slowpath doctor --net-interval 0` on this
// host (one counter sample, no instance metadata: tests never contact it)
// against the manual pipeline above, in the same run, rounds interleaved
// so both see the same load. Reported: medians of 15 rounds for doctor
// in-process (collect, analyse, render), the built binary (what a user
// runs: process start included), and the manual pipeline, and the ratios
// binary/manual (the headline; target 0.2) and in-process/manual.
func BenchmarkDoctorVsManual(b *testing.B) {
	bin := testenv.BuildSlowpathStripped(b) // as make build and the packages build it
	cmds := manualPipeline(b)
	env := &clienv.Env{Stdout: io.Discard, Stderr: io.Discard, FS: hostfs.Default(), Version: "bench"}
	o := &Options{Format: "text", FailOn: "none",
		Collect: collect.Options{FS: hostfs.Default(), Cloud: cloud.Options{Cloud: "none"}}}
	inproc := func() time.Duration {
		start := time.Now()
		if err := run(context.Background(), env, o); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	binary := func() time.Duration {
		cmd := exec.Command(bin, "doctor", "--net-interval", "0", "--cloud", "none", "--fail-on", "none")
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("%s: %v", cmd, err)
		}
		return time.Since(start)
	}
	// Warm the page cache and the binaries once.
	inproc()
	binary()
	runManual(b, cmds)
	const rounds = 15
	var in, bi, man []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			// Rotate the order so neither side always runs first.
			for k := 0; k < 3; k++ {
				switch (r + k) % 3 {
				case 0:
					in = append(in, inproc())
				case 1:
					bi = append(bi, binary())
				case 2:
					man = append(man, runManual(b, cmds))
				}
			}
		}
	}
	b.StopTimer()
	mi, mb, mm := median(in), median(bi), median(man)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(mi), "inproc-ms")
	b.ReportMetric(ms(mb), "binary-ms")
	b.ReportMetric(ms(mm), "manual-ms")
	b.ReportMetric(float64(mb)/float64(mm), "binary/manual")
	b.ReportMetric(float64(mi)/float64(mm), "inproc/manual")
	b.Logf("%d commands in the manual pipeline", len(cmds))
}
