package comparisontest

import (
	"math/rand/v2"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// DBCommitSpec describes one synthetic db-commit side: the figures of
// bench's db-commit (direct-4k IOPS, commit latency and rate, CPU) on a
// target with Layers encryption layers.
type DBCommitSpec struct {
	Name      string
	Runs      int
	IOPS      float64 // direct-4k reads plus writes, median
	CommitP99 time.Duration
	Noise     float64
	Layers    int
	Seed      uint64
}

// DBCommitResults builds the runs of sp as bench results.
func DBCommitResults(sp DBCommitSpec) []*benchresult.Result {
	r := rand.New(rand.NewPCG(sp.Seed, sp.Seed^0x9e3779b97f4a7c15))
	var out []*benchresult.Result
	for i := range sp.Runs {
		n := func() float64 { return 1 + sp.Noise*r.NormFloat64() }
		iops := sp.IOPS * n()
		commits := 1 / sp.CommitP99.Seconds() * 3 * n()
		p := path(sp.Layers > 0)
		if sp.Layers > 1 {
			// A second dm-crypt layer beneath the first, as crypt on crypt.
			l := p.Layers[1]
			l.Name, l.Device, l.Depth = "inner", "dm-1", 2
			p.Layers = append(p.Layers[:2], append([]storagemodel.Layer{l}, p.Layers[2:]...)...)
			p.Layers[len(p.Layers)-1].Depth = 3
		}
		p.EncryptionLayers = sp.Layers
		out = append(out, &benchresult.Result{
			Kind: benchresult.Kind, SchemaVersion: benchresult.SchemaVersion, SlowpathVersion: "test",
			Profile:    "db-commit",
			Parameters: benchresult.Parameters{Scale: 1, RuntimeNS: int64(10 * time.Second), Target: "/srv/bench", TargetKind: "dir"},
			Started:    time.Date(2026, 11, 23, 10, 0, i, 0, time.UTC),
			DurationNS: int64(31 * time.Second),
			Status:     benchresult.StatusComplete,
			Environment: benchresult.Environment{
				Hostname: "bench-host",
				Host:     &snapshot.Host{KernelRelease: "6.1.0-28-amd64", NumCPU: 2, CPUModel: "AMD EPYC 7763 64-Core Processor"},
				Target:   &benchresult.TargetPath{Path: "/srv/bench", MountPoint: "/srv/bench", FSType: "ext4", Storage: p.Record()},
			},
			Figures: []benchresult.Figure{
				{Name: "read_iops", Phase: "direct-4k", Value: iops / 2, Unit: benchresult.UnitIOPS, Better: benchresult.HigherIsBetter},
				{Name: "write_iops", Phase: "direct-4k", Value: iops / 2, Unit: benchresult.UnitIOPS, Better: benchresult.HigherIsBetter},
				{Name: "commit_ops_per_sec", Phase: "commit-1", Value: commits, Unit: benchresult.UnitOpsPerSec, Better: benchresult.HigherIsBetter},
				{Name: "commit_p99", Phase: "commit-1", Value: float64(sp.CommitP99) * n(), Unit: benchresult.UnitNanoseconds, Better: benchresult.LowerIsBetter},
				{Name: "cpu.workload", Value: 0.2 * n(), Unit: benchresult.UnitCPUs, Better: benchresult.LowerIsBetter},
			},
		})
	}
	return out
}
