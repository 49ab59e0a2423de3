package cryptlab

import (
	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/units"
)

// CPU and CryptoCPU are the rows lab crypt adds to every run from where
// the time went: the CPU of every thread group the sampler follows (the
// workload, and the kernel threads where dm-crypt works), and of the
// kernel threads alone: dm-crypt encrypts in kcryptd workers (kworkers
// running kcryptd work) and submits writes from dmcrypt_write
// (drivers/md/dm-crypt.c, kcryptd_crypt and dmcrypt_write), and
// completions run in ksoftirqd. With no_read_workqueue and
// no_write_workqueue it encrypts inline, in the workload's own context.
const (
	CPU       = "CPU"
	CryptoCPU = "crypto CPU"
)

// AddCPU adds CPU and CryptoCPU from res's where the time went to run.
func AddCPU(run *comparison.Run, res *benchresult.Result) {
	var all, kernel float64
	if w := res.WhereTime; w != nil {
		for _, g := range w.Threads {
			all += g.CPUs
			if g.Group != benchresult.GroupWorkload {
				kernel += g.CPUs
			}
		}
	}
	run.Metrics[CPU] = comparison.Measure{Unit: units.CPU, Better: comparison.LowerIsBetter, Value: all}
	run.Metrics[CryptoCPU] = comparison.Measure{Unit: units.CPU, Better: comparison.LowerIsBetter, Value: kernel}
}

// JobRun is a lab job's run (profile.LabPrefix) as lab crypt's table has
// always shown it: IOPS (reads and writes), the p99 of each direction the
// job does, CPU and crypto CPU.
func JobRun(label string, res *benchresult.Result) comparison.Run {
	run := comparison.Run{Label: label, Metrics: map[string]comparison.Measure{}}
	for _, f := range res.Figures {
		switch {
		case f.Name == "total_iops":
			run.Metrics["IOPS"] = comparison.Measure{Unit: units.OpsPerSec, Better: comparison.HigherIsBetter, Value: f.Value}
		case f.Name == "read_p99" && f.Phase == "lab":
			run.Metrics["read p99"] = comparison.Measure{Unit: units.Seconds, Better: comparison.LowerIsBetter, Value: f.Value / 1e9}
		case f.Name == "write_p99" && f.Phase == "lab":
			run.Metrics["write p99"] = comparison.Measure{Unit: units.Seconds, Better: comparison.LowerIsBetter, Value: f.Value / 1e9}
		}
	}
	AddCPU(&run, res)
	run.Order = []string{"IOPS", "read p99", "write p99", CPU, CryptoCPU}
	return run
}
