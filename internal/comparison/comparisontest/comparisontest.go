// Package comparisontest builds deterministic sides for tests and
// benchmarks of comparisons and their reports: runs shaped like
// search-index results (read IOPS, percentiles with full latency histograms,
// per-second timelines, index loads), from a seeded generator.
package comparisontest

import (
	"math"
	"math/rand/v2"

	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/stats"
)

// Spec describes one synthetic side.
type Spec struct {
	Name     string
	Runs     int
	IOPS     float64 // median read IOPS
	Noise    float64 // relative run-to-run noise
	Seconds  int     // timeline length
	Buckets  int     // histogram buckets per run (fio json+ has up to ~1800)
	Crypt    bool    // storage path with dm-crypt
	LoadMs   float64 // median index load time
	Seed     uint64
	Requests uint64 // I/Os per run in the histogram
}

// Side builds the side described by sp.
func Side(sp Spec) comparison.Side {
	r := rand.New(rand.NewPCG(sp.Seed, sp.Seed^0x9e3779b97f4a7c15))
	s := comparison.Side{Name: sp.Name, Sources: []string{sp.Name + ".json"}}
	for range sp.Runs {
		iops := sp.IOPS * (1 + sp.Noise*r.NormFloat64())
		mean := 1 / iops * 8 // 8 readers in flight: Little's law
		h := histogram(r, mean, sp.Buckets, sp.Requests)
		run := comparison.Run{
			Metrics:           map[string]comparison.Measure{},
			Timeline:          map[string][]comparison.Point{},
			Latencies:         map[string]stats.Histogram{"read": h},
			SlowLoadThreshold: 0.010,
		}
		run.Metrics["read IOPS"] = comparison.Measure{Unit: comparison.UnitOpsPerSec, Better: comparison.HigherIsBetter, Value: iops}
		run.Metrics["read bandwidth"] = comparison.Measure{Unit: comparison.UnitBytesPerSec, Better: comparison.HigherIsBetter, Value: iops * 64 * 1024}
		for _, q := range []struct {
			name string
			q    float64
		}{{"read p50", 0.5}, {"read p99", 0.99}, {"read p99.9", 0.999}} {
			v, _ := h.Quantile(q.q)
			hh := h
			run.Metrics[q.name] = comparison.Measure{Unit: comparison.UnitSeconds, Better: comparison.LowerIsBetter, Value: v, Latency: &hh, Quantile: q.q}
		}
		run.Metrics["CPU"] = comparison.Measure{Unit: comparison.UnitCPU, Better: comparison.LowerIsBetter, Value: 0.3 * (1 + sp.Noise*r.NormFloat64())}
		if sp.Crypt {
			run.Metrics["crypto CPU"] = comparison.Measure{Unit: comparison.UnitCPU, Better: comparison.LowerIsBetter, Value: 0.38 * (1 + sp.Noise*r.NormFloat64())}
		}
		var tl []comparison.Point
		for t := range sp.Seconds {
			tl = append(tl, comparison.Point{T: float64(t + 1), V: iops * (1 + 0.05*r.NormFloat64())})
		}
		run.Timeline["read IOPS"] = tl
		slow := 0
		for t := 0.25; t < float64(sp.Seconds); t += 0.25 {
			v := sp.LoadMs / 1e3 * math.Exp(0.6*r.NormFloat64())
			run.Loads = append(run.Loads, comparison.Point{T: t, V: v})
			if v > run.SlowLoadThreshold {
				slow++
			}
		}
		run.Metrics["slow loads"] = comparison.Measure{Unit: comparison.UnitCount, Better: comparison.LowerIsBetter, Value: float64(slow)}
		s.Runs = append(s.Runs, run)
	}
	s.Facts = []comparison.Fact{{Key: "kernel", Value: "6.1.0-28-amd64"}, {Key: "cpu", Value: "AMD EPYC 7763 64-Core Processor"}}
	s.Storage = []storagemodel.Path{path(sp.Crypt)}
	s.Facts = append(s.Facts, comparison.StorageFacts(s.Storage[0])...)
	return s
}

// histogram draws requests log-normal latencies around mean into buckets
// spaced logarithmically, as fio's json+ bins are.
func histogram(r *rand.Rand, mean float64, buckets int, requests uint64) stats.Histogram {
	lo, hi := math.Log(mean/20), math.Log(mean*50)
	h := stats.Histogram{Values: make([]float64, buckets), Counts: make([]uint64, buckets)}
	for i := range buckets {
		h.Values[i] = math.Exp(lo + (hi-lo)*float64(i)/float64(buckets-1))
	}
	mu := math.Log(mean) - 0.5*0.7*0.7
	for range requests {
		v := math.Exp(mu + 0.7*r.NormFloat64())
		i := int(math.Round((math.Log(v) - lo) / (hi - lo) * float64(buckets-1)))
		h.Counts[max(0, min(buckets-1, i))]++
	}
	return h
}

func path(crypt bool) storagemodel.Path {
	no := false
	p := storagemodel.Path{MountPoint: "/srv/bench", Layers: []storagemodel.Layer{
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
