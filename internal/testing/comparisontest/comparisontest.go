// Package comparisontest builds deterministic bench results for tests and
// benchmarks of comparisons and their reports: search-index results in the
// real result format (internal/benchresult) with read IOPS, percentiles and
// fio-style latency histograms, per-second timelines, index loads and CPU per
// thread group, from a seeded generator.
package comparisontest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Spec describes one synthetic side.
type Spec struct {
	Name     string
	Runs     int
	IOPS     float64 // median read IOPS
	Noise    float64 // relative run-to-run noise
	Seconds  int     // timeline length
	Buckets  int     // histogram bins per run (fio json+ has up to ~1800)
	Crypt    bool    // storage path with dm-crypt
	LoadMs   float64 // median index load time
	Seed     uint64
	Requests uint64 // I/Os per run in the histogram
}

// Results builds the runs of sp as bench results.
func Results(sp Spec) []*benchresult.Result {
	r := rand.New(rand.NewPCG(sp.Seed, sp.Seed^0x9e3779b97f4a7c15))
	var out []*benchresult.Result
	for i := range sp.Runs {
		out = append(out, result(r, sp, i))
	}
	return out
}

// Side builds the side described by sp through comparison.FromResults, as
// `slowpath compare` does with result files.
func Side(sp Spec) comparison.Side {
	rs := Results(sp)
	var src []string
	for i := range rs {
		src = append(src, fmt.Sprintf("%s-%d.json", sp.Name, i+1))
	}
	s, err := comparison.FromResults(sp.Name, src, rs)
	if err != nil {
		panic(err) // generated results are valid by construction
	}
	return s
}

func result(r *rand.Rand, sp Spec, i int) *benchresult.Result {
	iops := sp.IOPS * (1 + sp.Noise*r.NormFloat64())
	meanNS := 8 / iops * 1e9 // 8 readers in flight: Little's law
	h := histogram(r, meanNS, sp.Buckets, sp.Requests)
	pct := func(p float64) float64 { v, _ := h.Percentile(p); return float64(v) }
	var tl []benchresult.Point
	for t := range sp.Seconds {
		tl = append(tl, benchresult.Point{TMS: int64(t+1) * 1000, Value: iops * (1 + 0.05*r.NormFloat64()), Unit: benchresult.UnitIOPS})
	}
	lt := &benchresult.LoadTimes{SlowNS: int64(10 * time.Millisecond)}
	var ds []time.Duration
	for t := 250 * time.Millisecond; t < time.Duration(sp.Seconds)*time.Second; t += 250 * time.Millisecond {
		d := time.Duration(sp.LoadMs * math.Exp(0.6*r.NormFloat64()) * float64(time.Millisecond))
		lt.Loads = append(lt.Loads, benchresult.Load{StartNS: int64(t), DurationNS: int64(d), Bytes: 64 << 20, File: "index.bin"})
		ds = append(ds, d)
		if d > 10*time.Millisecond {
			lt.Slow++
		}
	}
	lt.Count = len(lt.Loads)
	lh := benchresult.FromDurations(ds)
	p50, _ := lh.Percentile(50)
	p99, _ := lh.Percentile(99)
	lt.P50NS, lt.P99NS, lt.MaxNS = p50, p99, lh.Bins[len(lh.Bins)-1].ValueNS
	cpu := 0.3 * (1 + sp.Noise*r.NormFloat64())
	res := &benchresult.Result{
		Kind: benchresult.Kind, SchemaVersion: benchresult.SchemaVersion, SlowpathVersion: "test",
		Profile:    "search-index",
		Parameters: benchresult.Parameters{Scale: 1, RuntimeNS: int64(sp.Seconds) * 1e9, Target: "/srv/bench", TargetKind: "dir", SlowLoadNS: lt.SlowNS, Settings: map[string]string{"readers": "8", "writers": "2"}},
		Started:    time.Date(2026, 11, 23, 9, 0, i, 0, time.UTC),
		DurationNS: int64(sp.Seconds+1) * 1e9,
		Status:     benchresult.StatusComplete,
		Environment: benchresult.Environment{
			Hostname: "bench-host",
			Host:     &snapshot.Host{KernelRelease: "6.1.0-28-amd64", NumCPU: 2, CPUModel: "AMD EPYC 7763 64-Core Processor"},
			Target:   &benchresult.TargetPath{Path: "/srv/bench", MountPoint: "/srv/bench", FSType: "ext4", Storage: path(sp.Crypt).Record()},
		},
		Figures: []benchresult.Figure{
			{Name: "read_iops", Phase: "pair", Value: iops, Unit: benchresult.UnitIOPS, Better: benchresult.HigherIsBetter},
			{Name: "read_bytes_per_sec", Phase: "pair", Value: iops * 64 * 1024, Unit: benchresult.UnitBytesPerSec, Better: benchresult.HigherIsBetter},
			{Name: "read_p50", Phase: "pair", Value: pct(50), Unit: benchresult.UnitNanoseconds, Better: benchresult.LowerIsBetter},
			{Name: "read_p99", Phase: "pair", Value: pct(99), Unit: benchresult.UnitNanoseconds, Better: benchresult.LowerIsBetter},
			{Name: "read_p999", Phase: "pair", Value: pct(99.9), Unit: benchresult.UnitNanoseconds, Better: benchresult.LowerIsBetter},
			{Name: "load_p50", Phase: "pair", Value: float64(lt.P50NS), Unit: benchresult.UnitNanoseconds, Better: benchresult.LowerIsBetter},
			{Name: "load_p99", Phase: "pair", Value: float64(lt.P99NS), Unit: benchresult.UnitNanoseconds, Better: benchresult.LowerIsBetter},
			{Name: "slow_loads", Phase: "pair", Value: float64(lt.Slow), Unit: benchresult.UnitCount, Better: benchresult.LowerIsBetter},
			{Name: "cpu.workload", Value: cpu, Unit: benchresult.UnitCPUs, Better: benchresult.LowerIsBetter},
		},
		Phases: []benchresult.Phase{{Name: "pair", Engine: "fio", DurationNS: int64(sp.Seconds) * 1e9, Streams: []benchresult.Stream{
			{Name: "readers", Op: "read", Jobs: 8, Ops: h.Count(), OpsPerSec: iops, BytesPerSec: iops * 64 * 1024,
				Latency: &benchresult.Latency{Count: h.Count(), Histogram: h}, Timeline: tl},
		}}},
		LoadTimes: lt,
	}
	if sp.Crypt {
		res.Figures = append(res.Figures, benchresult.Figure{Name: "cpu.kcryptd", Value: 0.38 * (1 + sp.Noise*r.NormFloat64()), Unit: benchresult.UnitCPUs, Better: benchresult.LowerIsBetter})
	}
	return res
}

// histogram draws requests log-normal latencies around meanNS into bins
// spaced logarithmically, as fio's json+ bins are.
func histogram(r *rand.Rand, meanNS float64, buckets int, requests uint64) *benchresult.Histogram {
	lo, hi := math.Log(meanNS/20), math.Log(meanNS*50)
	counts := make([]uint64, buckets)
	mu := math.Log(meanNS) - 0.5*0.7*0.7
	for range requests {
		v := math.Exp(mu + 0.7*r.NormFloat64())
		i := int(math.Round((math.Log(v) - lo) / (hi - lo) * float64(buckets-1)))
		counts[max(0, min(buckets-1, i))]++
	}
	h := &benchresult.Histogram{}
	last := int64(0)
	for i, c := range counts {
		v := int64(math.Exp(lo + (hi-lo)*float64(i)/float64(buckets-1)))
		if v <= last {
			v = last + 1
		}
		last = v
		if c > 0 {
			h.Bins = append(h.Bins, benchresult.Bin{ValueNS: v, Count: c})
		}
	}
	return h
}

func path(crypt bool) *storagemodel.Path {
	no := false
	p := &storagemodel.Path{MountPoint: "/srv/bench", Layers: []storagemodel.Layer{
		{Kind: storagemodel.LayerFilesystem, Name: "/srv/bench", FSType: "ext4"},
	}}
	d := 1
	if crypt {
		p.EncryptionLayers = 1
		p.Layers = append(p.Layers, storagemodel.Layer{Kind: storagemodel.LayerDMCrypt, Name: "data", Device: "dm-0", Depth: 1, Encrypted: true, EncryptedBy: "kernel-cpu",
			Crypt: &storagemodel.Crypt{CipherSpec: "aes-xts-plain64", Cipher: "aes", ChainMode: "xts", IVMode: "plain64", KeyBits: 512, KeySource: "hex", SectorSize: 512}})
		d = 2
	}
	p.Layers = append(p.Layers, storagemodel.Layer{Kind: storagemodel.LayerDisk, Name: "nvme0n1", Device: "nvme0n1", Depth: d,
		Queue: &snapshot.Queue{Rotational: &no, Scheduler: "none"}})
	return p
}
