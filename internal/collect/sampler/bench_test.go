package sampler

import (
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/hostfs"
)

// BenchmarkSamplerCPU runs the sampler at its default rate (1 s) for 10 s
// on this host's /proc, watching every block device, and reports its own
// CPU time (RUSAGE_THREAD of its locked thread) as a percentage of one CPU.
// Target: at most 1%.
func BenchmarkSamplerCPU(b *testing.B) {
	var devs []Device
	for _, n := range []string{"vda", "sda", "nvme0n1", "zram0", "loop0"} {
		devs = append(devs, Device{Name: n, Layer: "disk"})
	}
	for i := 0; i < b.N; i++ {
		start := time.Now()
		s, err := Start(Options{FS: hostfs.Default(), Devices: devs, Start: start})
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(10 * time.Second)
		w := s.Stop()
		wall := time.Since(start)
		b.ReportMetric(float64(w.SamplerCPUNS)/float64(wall)*100, "sampler-cpu-%")
		b.ReportMetric(float64(w.SamplerCPUNS)/1e6/10, "ms/sample")
	}
}
