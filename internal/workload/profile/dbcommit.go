package profile

import (
	"fmt"
	"math"
	"strconv"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/workload/fio"
)

// DBCommit is the PostgreSQL story's profile.
const DBCommit = "db-commit"

func init() { Register(dbCommit{}) }

type dbCommit struct{}

// Spec: a commit is a write and its fdatasync; the single-writer phase
// (commit-1) shows the per-commit cost without the group-commit batching
// of commit-N, so its commit p99, then its commits per second. The
// direct-4k phase is 4 KiB psync I/O by one job: the encryption tax's
// shape. Its CPU is not the phase's own (a bench result has the whole
// run's), so the tax's CPU form is left out.
func (dbCommit) Spec() Spec {
	return Spec{Name: DBCommit, Needs: Dir | Device, Rank: 20,
		Description: "4 KiB direct random 50/50, then 8 KiB write+fdatasync commits with 1 and N jobs",
		Metrics: &Metrics{Primary: []Metric{{"commit-1", "commit_p99"}, {"commit-1", "commit_ops_per_sec"}},
			Guards: []Metric{{"commit-1", "commit_p999"}, {Figure: CPUPerIO}}},
		Tax: &TaxShape{Phase: "direct-4k", IOPS: []Metric{{"direct-4k", "read_iops"}, {"direct-4k", "write_iops"}},
			IOShape: IOShape{BytesPerIO: 4096, QueueDepth: 1}}}
}

// Plan: the PostgreSQL story's job (4 KiB direct random read/write,
// one job) and commits: 8 KiB writes each followed by fdatasync, one job
// and N jobs.
func (dbCommit) Plan(_ string, p Params) (*Plan, error) {
	s := p.Scale
	fileSize := clampBytes(64*mib*s, 16*mib, 16*gib, mib)
	walSize := clampBytes(32*mib*s, 8*mib, 4*gib, mib)
	n := clampInt(float64(2*p.NumCPU)*math.Max(1, s), 2, 64)
	global := append(where(p), fio.Option{Key: "group_reporting"}, fio.Option{Key: "log_avg_msec", Value: "1000"},
		fio.Option{Key: "runtime", Value: secs(p.Runtime)}, fio.Option{Key: "time_based"}, fio.Option{Key: "ioengine", Value: "psync"})
	directFile := []fio.Option{{Key: "filename", Value: "db"}}
	if p.Device != "" {
		directFile = nil // the device, from global
	}
	direct := fio.File{Global: global, Jobs: []fio.Section{{Name: "direct", Options: append([]fio.Option{{Key: "rw", Value: "randrw"},
		{Key: "rwmixread", Value: "50"}, {Key: "bs", Value: "4k"}, {Key: "direct", Value: "1"}, {Key: "size", Value: size(fileSize)},
		{Key: "write_bw_log", Value: "direct"}, {Key: "write_iops_log", Value: "direct"}}, directFile...)}}}
	commit := func(jobs int) fio.File {
		opts := []fio.Option{{Key: "rw", Value: "write"},
			{Key: "bs", Value: "8k"}, {Key: "fdatasync", Value: "1"}, {Key: "size", Value: size(walSize)}, {Key: "numjobs", Value: strconv.Itoa(jobs)},
			{Key: "write_bw_log", Value: "commit"}, {Key: "write_iops_log", Value: "commit"}}
		if p.Device != "" {
			// Each job its own region after the database's.
			opts = append(opts, fio.Option{Key: "offset", Value: size(fileSize)}, fio.Option{Key: "offset_increment", Value: size(walSize)})
		}
		return fio.File{Global: global, Jobs: []fio.Section{{Name: "commit", Options: opts}}}
	}
	return &Plan{Profile: DBCommit,
		Settings: map[string]string{"direct_file": size(fileSize), "direct_bs": "4k", "direct_rwmixread": "50", "commit_bs": "8k",
			"wal_size": size(walSize), "commit_jobs_n": strconv.Itoa(n)},
		SpaceBytes: uint64(fileSize + int64(n)*walSize),
		SpaceNote:  fmt.Sprintf("a %s database region and %s for each of %d commit jobs, 2 per CPU", size(fileSize), size(walSize), n),
		Phases: []PhasePlan{
			{Name: "direct-4k", JobFile: render(direct), Expected: p.Runtime + layoutTime(fileSize), logs: []string{"direct"}},
			{Name: "commit-1", JobFile: render(commit(1)), Expected: p.Runtime + layoutTime(walSize), logs: []string{"commit"}},
			{Name: "commit-N", JobFile: render(commit(n)), Expected: p.Runtime + layoutTime(int64(n)*walSize), logs: []string{"commit"}},
		}}, nil
}

func (dbCommit) Figures(phases []benchresult.Phase, _ *benchresult.LoadTimes) []benchresult.Figure {
	var f figures
	for _, ph := range phases {
		if ph.Name == "direct-4k" {
			r, w := find(ph, "direct", "read"), find(ph, "direct", "write")
			if r != nil {
				f.add(ph.Name, "read_iops", r.OpsPerSec, benchresult.UnitIOPS, benchresult.HigherIsBetter)
				f.addPct(ph.Name, "read_p99", r, 99)
			}
			if w != nil {
				f.add(ph.Name, "write_iops", w.OpsPerSec, benchresult.UnitIOPS, benchresult.HigherIsBetter)
				f.addPct(ph.Name, "write_p99", w, 99)
			}
			continue
		}
		w, s := find(ph, "commit", "write"), find(ph, "commit", "sync")
		if w != nil {
			f.add(ph.Name, "commit_ops_per_sec", w.OpsPerSec, benchresult.UnitOpsPerSec, benchresult.HigherIsBetter)
			f.addPct(ph.Name, "write_p99", w, 99)
		}
		f.addPct(ph.Name, "commit_p50", s, 50)
		f.addPct(ph.Name, "commit_p99", s, 99)
		f.addPct(ph.Name, "commit_p999", s, 99.9)
	}
	return f
}
