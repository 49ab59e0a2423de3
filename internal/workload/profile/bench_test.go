package profile_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/collect/sampler"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/stats"
	"github.com/slowpath/slowpath/internal/testing/testenv"
	"github.com/slowpath/slowpath/internal/workload/fio"
	"github.com/slowpath/slowpath/internal/workload/profile"
)

// BenchmarkFidelity: db-commit's direct-4k phase (4 KiB direct random
// read/write, one job, 3 s) run by slowpath (the profile runner with the
// where-the-time-went sampler at its default rate) against the identical
// job file run by fio directly (`fio --output-format=json+ --output=F
// job.fio`, no slowpath code), on the same file in the same directory
// (on /dev/shm). Six rounds, alternating which side goes first;
// reported: the median of
// the per-round IOPS ratios slowpath/direct (target within 3%: 0.97-1.03),
// and the sampler's CPU share during the slowpath runs.
func BenchmarkFidelity(b *testing.B) {
	testenv.RequireTool(b, "fio", "fio")
	// A tmpfs: the shared virtual disk of this machine varies by 2x
	// between seconds with other jobs' I/O, which would drown the
	// comparison; memory-backed I/O varies far less.
	dir, err := os.MkdirTemp("/dev/shm", "slowpath-fidelity-")
	if err != nil {
		dir = b.TempDir()
	}
	defer os.RemoveAll(dir)
	plan, err := profile.New(profile.DBCommit, profile.Params{Scale: 1, Runtime: 3 * time.Second, Dir: dir, NumCPU: 2})
	if err != nil {
		b.Fatal(err)
	}
	plan.Phases = plan.Phases[:1]
	const rounds = 6
	jf := plan.Phases[0].JobFile
	for i := 0; i < b.N; i++ {
		var ratios []float64
		var sp, direct, samplerShare float64
		for round := 0; round < rounds; round++ {
			var s, d float64
			// Alternate which side goes first: the machine's load drifts.
			if round%2 == 0 {
				s, samplerShare = runSlowpath(b, plan, samplerShare)
				d = runDirect(b, jf)
			} else {
				d = runDirect(b, jf)
				s, samplerShare = runSlowpath(b, plan, samplerShare)
			}
			ratios = append(ratios, s/d)
			sp, direct = sp+s, direct+d
		}
		sort.Float64s(ratios)
		b.ReportMetric(sp/rounds, "slowpath-iops")
		b.ReportMetric(direct/rounds, "fio-direct-iops")
		b.ReportMetric(stats.Median(ratios), "slowpath/fio")
		b.ReportMetric(ratios[0], "slowpath/fio-min")
		b.ReportMetric(ratios[rounds-1], "slowpath/fio-max")
		b.ReportMetric(samplerShare, "sampler-cpu-%")
		b.Logf("per-round ratios slowpath/fio: %.3f", ratios)
	}
}

// runSlowpath runs the plan as bench does (sampler on) and returns its
// IOPS and the larger of share and the sampler's CPU share.
func runSlowpath(b *testing.B, plan *profile.Plan, share float64) (float64, float64) {
	start := time.Now()
	smp, err := sampler.Start(sampler.Options{FS: hostfs.Default(), Devices: []sampler.Device{{Name: "vda", Layer: "disk"}, {Name: "zram0", Layer: "zram"}}, Start: start})
	if err != nil {
		b.Fatal(err)
	}
	phases, _, err := plan.Run(context.Background(), b.TempDir(), profile.Hooks{Start: start, FioStarted: smp.AddWorkload})
	w := smp.Stop()
	if err != nil {
		b.Fatal(err)
	}
	var s float64
	for _, st := range phases[0].Streams {
		s += st.OpsPerSec
	}
	return s, max(share, float64(w.SamplerCPUNS)/float64(time.Since(start))*100)
}

// runDirect runs the job file with fio alone and returns its IOPS.
func runDirect(b *testing.B, jf []byte) float64 {
	dd := b.TempDir()
	if err := os.WriteFile(filepath.Join(dd, "job.fio"), jf, 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command("fio", "--output-format=json+", "--output=out.json", "--eta=never", "job.fio")
	cmd.Dir = dd
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("fio: %v: %s", err, out)
	}
	f, err := os.Open(filepath.Join(dd, "out.json"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	r, err := fio.Parse(f)
	if err != nil {
		b.Fatal(err)
	}
	return r.Jobs[0].Read.IOPS + r.Jobs[0].Write.IOPS
}
