package watch_test

import (
	"io"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkWatchCPU measures the CPU time (user+system, from the child's
// rusage) that the real binary's `net watch --interval 1s` uses per second
// of wall time on this machine, reported as a percentage of one CPU.
func BenchmarkWatchCPU(b *testing.B) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		b.Skip("go not found")
	}
	bin := filepath.Join(b.TempDir(), "slowpath")
	if out, err := exec.Command(goTool, "build", "-o", bin, "github.com/slowpath/slowpath/cmd/slowpath").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	const run = 5 * time.Second
	var cpu, wall time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bin, "net", "watch", "--interval", "1s", "--duration", run.String(), "--format", "json")
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		wall += time.Since(start)
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "cpu%")
	b.ReportMetric(cpu.Seconds()*1000/wall.Seconds(), "cpu-ms/s")
}
