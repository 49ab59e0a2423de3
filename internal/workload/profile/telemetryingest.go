package profile

import (
	"strconv"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/workload/fio"
)

// TelemetryIngest is the ingest pipeline's profile.
const TelemetryIngest = "telemetry-ingest"

func init() { Register(telemetryIngest{}) }

type telemetryIngest struct{}

// Spec: an ingest pipeline is judged by throughput, so append ops/s, then
// the checkpoint (fsync) p99 that stalls it.
func (telemetryIngest) Spec() Spec {
	return Spec{Name: TelemetryIngest, Needs: Dir | Device, Rank: 30,
		Description: "64 KiB appends with a checkpoint fsync every 8 MiB",
		Metrics: &Metrics{Primary: []Metric{{Figure: "append_ops_per_sec"}, {Figure: "checkpoint_p99"}},
			Guards: []Metric{{Figure: "checkpoint_p999"}, {Figure: CPUPerIO}}}}
}

// Plan appends 64 KiB records sequentially with a checkpoint
// fsync every N MiB.
func (telemetryIngest) Plan(_ string, p Params) (*Plan, error) {
	s := p.Scale
	fileSize := clampBytes(256*mib*s, 32*mib, 64*gib, mib)
	const bs = 64 * kib
	checkpoint := int64(8 * mib)
	opts := []fio.Option{{Key: "rw", Value: "write"}, {Key: "bs", Value: size(bs)},
		{Key: "fsync", Value: strconv.FormatInt(checkpoint/bs, 10)}, {Key: "size", Value: size(fileSize)},
		{Key: "write_bw_log", Value: "ingest"}, {Key: "write_iops_log", Value: "ingest"}}
	if p.Device == "" {
		opts = append(opts, fio.Option{Key: "fallocate", Value: "none"}, fio.Option{Key: "filename", Value: "ingest"})
	}
	f := fio.File{Global: append(where(p), fio.Option{Key: "group_reporting"}, fio.Option{Key: "log_avg_msec", Value: "1000"},
		fio.Option{Key: "runtime", Value: secs(p.Runtime)}, fio.Option{Key: "time_based"}, fio.Option{Key: "ioengine", Value: "psync"}),
		Jobs: []fio.Section{{Name: "ingest", Options: opts}}}
	return &Plan{Profile: TelemetryIngest,
		Settings:   map[string]string{"append_bs": size(bs), "checkpoint_every": size(checkpoint), "file_size": size(fileSize)},
		SpaceBytes: uint64(fileSize),
		Phases:     []PhasePlan{{Name: "ingest", JobFile: render(f), Expected: p.Runtime, logs: []string{"ingest"}}}}, nil
}

func (telemetryIngest) Figures(phases []benchresult.Phase, _ *benchresult.LoadTimes) []benchresult.Figure {
	var f figures
	for _, ph := range phases {
		w, s := find(ph, "ingest", "write"), find(ph, "ingest", "sync")
		if w != nil {
			f.add(ph.Name, "append_ops_per_sec", w.OpsPerSec, benchresult.UnitOpsPerSec, benchresult.HigherIsBetter)
			f.add(ph.Name, "append_bytes_per_sec", w.BytesPerSec, benchresult.UnitBytesPerSec, benchresult.HigherIsBetter)
		}
		if s != nil {
			f.add(ph.Name, "checkpoints", float64(s.Ops), benchresult.UnitCount, benchresult.NoBetter)
			f.addPct(ph.Name, "checkpoint_p50", s, 50)
			// The declared primary and guard (Spec).
			f.addPct(ph.Name, "checkpoint_p99", s, 99)
			f.addPct(ph.Name, "checkpoint_p999", s, 99.9)
			if s.Latency != nil {
				f.add(ph.Name, "checkpoint_max", float64(s.Latency.MaxNS), benchresult.UnitNanoseconds, benchresult.LowerIsBetter)
			}
		}
	}
	return f
}
