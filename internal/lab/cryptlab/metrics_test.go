package cryptlab

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/benchresult"
)

// TestJobRun: a lab job's bench result becomes lab crypt's row set: IOPS,
// the p99 of each direction the job did (seconds), CPU of every thread
// group, crypto CPU of the kernel's alone; nothing else.
func TestJobRun(t *testing.T) {
	where := &benchresult.WhereTime{Threads: []benchresult.ThreadGroup{
		{Group: benchresult.GroupWorkload, CPUs: 0.5},
		{Group: benchresult.GroupKcryptd, CPUs: 0.25},
		{Group: benchresult.GroupDmcryptWrite, CPUs: 0.125},
	}}
	for _, tc := range []struct {
		name string
		res  *benchresult.Result
		want map[string]float64
	}{
		{"randrw", &benchresult.Result{WhereTime: where, Figures: []benchresult.Figure{
			{Name: "read_iops", Phase: "lab", Value: 50},
			{Name: "read_p99", Phase: "lab", Value: 74240},
			{Name: "write_p99", Phase: "lab", Value: 378880},
			{Name: "total_iops", Value: 100},
			{Name: "total_p99", Value: 1},
		}}, map[string]float64{"IOPS": 100, "read p99": 0.00007424, "write p99": 0.00037888, CPU: 0.875, CryptoCPU: 0.375}},
		{"randread, no sampler", &benchresult.Result{Figures: []benchresult.Figure{
			{Name: "read_p99", Phase: "lab", Value: 1000},
			{Name: "total_iops", Value: 7},
		}}, map[string]float64{"IOPS": 7, "read p99": 1e-6, CPU: 0, CryptoCPU: 0}},
	} {
		run := JobRun("x-1", tc.res)
		got := map[string]float64{}
		for k, m := range run.Metrics {
			got[k] = m.Value
		}
		if d := cmp.Diff(tc.want, got); d != "" || run.Label != "x-1" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
}
