package profile

import (
	"math"
	"strconv"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/workload/fio"
	"github.com/slowpath/slowpath/internal/workload/indexload"
)

// SearchIndex is the search-index incident's profile.
const SearchIndex = "search-index"

func init() { Register(searchIndex{}) }

type searchIndex struct{}

// Spec: the incident was slow index loads, so the index load p99 first,
// then the number of slow loads.
func (searchIndex) Spec() Spec {
	return Spec{Name: SearchIndex, Needs: Dir, Rank: 10,
		Description: "writers laying down index files (psync 4 MiB) while readers mmap-read a blob at random and the native loader loads each finished file",
		Metrics:     &Metrics{Primary: []Metric{{Figure: "load_p99"}, {Figure: "slow_loads"}}, Guards: []Metric{{Figure: "read_p999"}, {Figure: CPUPerIO}}}}
}

// Plan: the incident's fio pair: writers laying down new index
// files with psync 4 MiB writes while readers mmap-read a blob at random
// (4 KiB-1 MiB), plus the native loader loading each finished file.
func (searchIndex) Plan(_ string, p Params) (*Plan, error) {
	s := p.Scale
	writers := clampInt(4*s, 1, 30)
	perWriter := clampBytes(64*mib*s, 8*mib, 2*gib, mib)
	files := 4
	fileSize := perWriter / int64(files) / mib * mib
	bs := min(int64(4*mib), fileSize)
	readers := clampInt(8*s, 1, 8)
	// The blob grows faster than the rest so that scale 32 is the
	// incident's 50 GiB: 256 MiB × s^(log 200 / log 32).
	blob := clampBytes(256*mib*math.Pow(s, math.Log(200)/math.Log(32)), 16*mib, 50*gib, mib)
	f := fio.File{
		Global: []fio.Option{{Key: "directory", Value: p.Dir}, {Key: "group_reporting"}, {Key: "log_avg_msec", Value: "1000"},
			{Key: "runtime", Value: secs(p.Runtime)}, {Key: "invalidate", Value: "1"}},
		Jobs: []fio.Section{
			{Name: "writers", Options: []fio.Option{{Key: "rw", Value: "write"}, {Key: "ioengine", Value: "psync"}, {Key: "bs", Value: size(bs)},
				{Key: "numjobs", Value: strconv.Itoa(writers)}, {Key: "nrfiles", Value: strconv.Itoa(files)}, {Key: "filesize", Value: size(fileSize)},
				{Key: "file_service_type", Value: "sequential"}, {Key: "fallocate", Value: "none"},
				{Key: "write_bw_log", Value: "writers"}, {Key: "write_iops_log", Value: "writers"}}},
			{Name: "readers", Options: []fio.Option{{Key: "new_group"}, {Key: "rw", Value: "randread"}, {Key: "ioengine", Value: "mmap"},
				{Key: "bsrange", Value: "4k-1m"}, {Key: "numjobs", Value: strconv.Itoa(readers)}, {Key: "filename", Value: "blob"},
				{Key: "size", Value: size(blob)}, {Key: "time_based"},
				{Key: "write_bw_log", Value: "readers"}, {Key: "write_iops_log", Value: "readers"}}},
		},
	}
	pl := &Plan{Profile: SearchIndex, slowLoad: p.SlowLoad, loader: true,
		Settings: map[string]string{"writers": strconv.Itoa(writers), "writer_bytes": size(perWriter), "files_per_writer": strconv.Itoa(files),
			"file_size": size(fileSize), "write_bs": size(bs), "readers": strconv.Itoa(readers), "read_bs": "4k-1m", "blob": size(blob),
			"loads_per_sec_max": "4", "slow_load": p.SlowLoad.String()},
		SpaceBytes: uint64(int64(writers)*perWriter + blob),
		Phases: []PhasePlan{{Name: "pair", JobFile: render(f), Expected: p.Runtime + layoutTime(blob),
			logs:   []string{"writers", "readers"},
			Loader: &indexload.Options{Dir: loaderDir(p.Dir), Prefix: "writers.", FileSize: fileSize, MaxRate: 4, Evict: true}}},
	}
	return pl, nil
}

func (searchIndex) Figures(phases []benchresult.Phase, lt *benchresult.LoadTimes) []benchresult.Figure {
	var f figures
	for _, ph := range phases {
		if r := find(ph, "readers", "read"); r != nil {
			f.add(ph.Name, "read_iops", r.OpsPerSec, benchresult.UnitIOPS, benchresult.HigherIsBetter)
			f.add(ph.Name, "read_bytes_per_sec", r.BytesPerSec, benchresult.UnitBytesPerSec, benchresult.HigherIsBetter)
			f.addPct(ph.Name, "read_p50", r, 50)
			f.addPct(ph.Name, "read_p99", r, 99)
			f.addPct(ph.Name, "read_p999", r, 99.9)
		}
		if w := find(ph, "writers", "write"); w != nil {
			f.add(ph.Name, "write_bytes_per_sec", w.BytesPerSec, benchresult.UnitBytesPerSec, benchresult.HigherIsBetter)
		}
		if lt != nil {
			f.add(ph.Name, "loads", float64(lt.Count), benchresult.UnitCount, benchresult.NoBetter)
			f.add(ph.Name, "slow_loads", float64(lt.Slow), benchresult.UnitCount, benchresult.LowerIsBetter)
			if lt.Count > 0 {
				f.add(ph.Name, "load_p50", float64(lt.P50NS), benchresult.UnitNanoseconds, benchresult.LowerIsBetter)
				f.add(ph.Name, "load_p99", float64(lt.P99NS), benchresult.UnitNanoseconds, benchresult.LowerIsBetter)
				f.add(ph.Name, "load_max", float64(lt.MaxNS), benchresult.UnitNanoseconds, benchresult.LowerIsBetter)
				f.add(ph.Name, "load_bytes_per_sec", lt.PageBytesPerSec, benchresult.UnitBytesPerSec, benchresult.HigherIsBetter)
			}
		}
	}
	return f
}
