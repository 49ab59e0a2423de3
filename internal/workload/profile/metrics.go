package profile

import (
	"strings"

	"github.com/slowpath/slowpath/internal/benchresult"
)

// Metrics are a profile's declared roles for compare's verdict and fix
// --prove, by the row names compare gives its figures ("PHASE figure" when
// the result has several phases, internal/comparison FromResults).
type Metrics struct {
	// Primary metrics decide the verdict, tested in this order at the
	// full alpha, each only once the one before it was significant (a
	// fixed sequence): the first is the one the profile exists for.
	Primary []string
	// Guards must not be significantly worse for fix --prove to keep a
	// change: the tail (p99.9) and the CPU the data path spends per I/O.
	Guards []string
}

// CPUPerIO is the row compare derives from a result's CPU figures and its
// I/O count (benchresult.CPUPerIO): a guard of every profile, since a
// change that buys latency with CPU (an inline dm-crypt) must say so.
const CPUPerIO = benchresult.CPUPerIO

// MetricsOf returns the declared roles of profile name (a built-in one or
// fio:FILE); ok is false for a name New does not know.
//
//   - search-index: the incident was slow index loads, so the index load
//     p99 first, then the number of slow loads.
//   - db-commit: a commit is a write and its fdatasync; the single-writer
//     phase (commit-1) shows the per-commit cost without the group-commit
//     batching of commit-N, so its commit p99, then its commits per second.
//   - telemetry-ingest: an ingest pipeline is judged by throughput, so
//     append ops/s, then the checkpoint (fsync) p99 that stalls it.
//   - fio:FILE, and lab crypt's fio jobs: a job file has no declared
//     purpose, so the sum of IOPS over its read and write groups (at a
//     fixed queue depth the same information as mean latency, Little's
//     law, and the steadiest figure a run gives), then the p99 of all
//     its I/Os merged.
//   - replay:DIR keeps the captured offered load, so latency is the
//     answer: the p99 of all its I/Os first, then IOPS; replay-afap:DIR
//     runs as fast as it can, so IOPS first.
func MetricsOf(name string) (Metrics, bool) {
	switch {
	case name == SearchIndex:
		return Metrics{Primary: []string{"load_p99", "slow_loads"}, Guards: []string{"read_p999", CPUPerIO}}, true
	case name == DBCommit:
		return Metrics{Primary: []string{"commit-1 commit_p99", "commit-1 commit_ops_per_sec"}, Guards: []string{"commit-1 commit_p999", CPUPerIO}}, true
	case name == TelemetryIngest:
		return Metrics{Primary: []string{"append_ops_per_sec", "checkpoint_p99"}, Guards: []string{"checkpoint_p999", CPUPerIO}}, true
	case strings.HasPrefix(name, FioPrefix) && len(name) > len(FioPrefix):
		return Metrics{Primary: []string{"total_iops", "total_p99"}, Guards: []string{"total_p999", CPUPerIO}}, true
	case strings.HasPrefix(name, ReplayAFAPPrefix) && len(name) > len(ReplayAFAPPrefix):
		return Metrics{Primary: []string{"total_iops", "total_p99"}, Guards: []string{"total_p999", CPUPerIO}}, true
	case strings.HasPrefix(name, ReplayPrefix) && len(name) > len(ReplayPrefix):
		return Metrics{Primary: []string{"total_p99", "total_iops"}, Guards: []string{"total_p999", CPUPerIO}}, true
	}
	return Metrics{}, false
}
