// Package benchresult is the on-disk format of one `slowpath bench` run
// (`-o result.json`), read back by `slowpath compare`. One file holds one
// run; compare loads several files per side. docs/bench.md describes every
// field.
//
// Stability: within SchemaVersion fields are only added, never renamed,
// removed or given another meaning. Readers ignore fields they do not know,
// so a file written by a newer slowpath with the same schema version reads
// in an older one. A change that is not additive raises SchemaVersion, and
// Read refuses a version it does not know with a clear error.
package benchresult

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/slowpath/slowpath/internal/pathrecord"
	"github.com/slowpath/slowpath/internal/recordkind"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/stats"
	"github.com/slowpath/slowpath/internal/stdfile"
)

// Kind is the value of "kind" in every result file: it tells a bench result
// from any other JSON document (a doctor report, an fio output).
const Kind = recordkind.BenchResult

// SchemaVersion is the version of this format that this package writes and
// reads.
const SchemaVersion = 1

// Status of a run.
const (
	StatusComplete    = "complete"    // every phase ran to its end
	StatusInterrupted = "interrupted" // SIGINT/SIGTERM: the phases so far, the last one partial
	StatusFailed      = "failed"      // an error stopped the run; Error says which
)

// CPUPerIO names the row compare derives from a result's CPU accounting
// and its I/O count (internal/comparison): not a figure a run writes, but
// a guard every profile declares (internal/workload/profile), so both read
// the name from here.
const CPUPerIO = "cpu_per_io"

// Units of figures, timelines and histograms. A figure's unit is always one
// of these, so compare never converts.
const (
	UnitIOPS         = "iops"     // completed I/Os per second
	UnitBytesPerSec  = "bytes/s"  // bytes per second (not bits)
	UnitOpsPerSec    = "ops/s"    // application operations per second (appends, commits)
	UnitNanoseconds  = "ns"       // a duration
	UnitBytes        = "bytes"    // a size
	UnitCount        = "count"    // a number of events (slow loads, I/Os)
	UnitPercent      = "percent"  // 0-100 (device utilisation)
	UnitCPUs         = "cpus"     // CPU time per wall time: 0.38 is 38% of one CPU
	UnitRequests     = "requests" // a queue depth (requests in flight, averaged)
	UnitSeconds      = "s"        // wall-clock seconds (timeline offsets use ms)
	UnitFraction     = "fraction" // 0-1
	UnitMilliseconds = "ms"       // only where the kernel counts in ms (diskstats ticks)
)

// Better says which direction of a figure is an improvement, so compare can
// say "worse" without knowing every figure's meaning.
const (
	HigherIsBetter = "higher"
	LowerIsBetter  = "lower"
	NoBetter       = "" // informational (sizes, counts of things done)
)

// Result is one run of one profile.
type Result struct {
	Kind            string `json:"kind"`           // always Kind
	SchemaVersion   int    `json:"schema_version"` // always SchemaVersion when written
	SlowpathVersion string `json:"slowpath_version,omitempty"`
	// Profile is search-index, db-commit, telemetry-ingest or "fio:NAME"
	// (NAME is the job file's base name).
	Profile    string     `json:"profile"`
	Parameters Parameters `json:"parameters"`
	// Started is when the first phase began (UTC); DurationNS the whole
	// run's wall time including setup (laying out files).
	Started    time.Time `json:"started"`
	DurationNS int64     `json:"duration_ns"`
	Status     string    `json:"status"`          // StatusComplete, StatusInterrupted, StatusFailed
	Error      string    `json:"error,omitempty"` // why the run failed or was interrupted
	// Environment says where the run happened, so two machines' results
	// can be told apart and compared.
	Environment Environment `json:"environment"`
	// Figures are the headline numbers, each with its unit: what the
	// summary table prints and compare compares. Keys (Figure.Name plus
	// Figure.Phase) are stable per profile (docs/bench.md lists them).
	Figures []Figure `json:"figures"`
	// Phases are the workloads the profile ran, in order: one fio
	// invocation or one native workload each.
	Phases []Phase `json:"phases"`
	// LoadTimes are the native index loader's loads (search-index only).
	LoadTimes *LoadTimes `json:"load_times,omitempty"`
	// WhereTime is what the sampler saw during the whole run.
	WhereTime *WhereTime `json:"where_time,omitempty"`
	// EncryptionTax is the expected encryption tax against the overhead
	// this run observed; present only when the target's path has dm-crypt
	// layers.
	EncryptionTax *EncryptionTax `json:"encryption_tax,omitempty"`
	// Fidelity is set for a replay of a capture (replay:DIR): how its
	// block-level requests compare with the capture's (docs/replay.md).
	Fidelity *Fidelity `json:"fidelity,omitempty"`
	// Engine is the throwaway database server a database profile ran
	// (pgbench, mariadb-oltp) and every encryption setting it ran with,
	// in the snapshot's terms (docs/snapshot.md, engines): the engine
	// layer of the run's data path, which the target's storage path
	// cannot show. Its PID is 0: the process is gone.
	Engine *snapshot.Engine `json:"engine,omitempty"`
}

// Parameters are the inputs of the run, enough to repeat it.
type Parameters struct {
	Scale     float64 `json:"scale"`      // --scale; 1 is the default size for this machine
	RuntimeNS int64   `json:"runtime_ns"` // --runtime per timed phase
	// Target is the --dir or the block device the run used (the path
	// given, before slowpath's own subdirectory).
	Target string `json:"target"`
	// TargetKind is "dir" or "block".
	TargetKind string `json:"target_kind"`
	// SlowLoadNS is --slow-load (search-index): loads above it are slow.
	SlowLoadNS int64 `json:"slow_load_ns,omitempty"`
	// JobFile is the fio job file a fio:FILE profile ran, verbatim.
	JobFile string `json:"job_file,omitempty"`
	// Settings are profile-specific values after scaling (writers, file
	// size, block sizes, checkpoint interval ...), as strings with units
	// as fio spells them ("4m", "8k").
	Settings map[string]string `json:"settings,omitempty"`
}

// Environment is the machine and the target's storage path.
type Environment struct {
	Hostname   string          `json:"hostname,omitempty"`
	Host       *snapshot.Host  `json:"host,omitempty"`  // kernel, CPU model and flags, DMI, crypto drivers
	Cloud      *snapshot.Cloud `json:"cloud,omitempty"` // provider, instance type, region: nil off cloud
	FioVersion string          `json:"fio_version,omitempty"`
	GoVersion  string          `json:"go_version,omitempty"`
	// Target is the doctor storage model of the path the run wrote to:
	// filesystem → dm → md → loop → disk (→ cloud disk).
	Target *TargetPath `json:"target,omitempty"`
	// Problems name what could not be learnt about the environment.
	Problems []string `json:"problems,omitempty"`
}

// TargetPath is the target's place in the storage model.
type TargetPath struct {
	Path       string `json:"path"`                 // the directory or device benchmarked
	MountPoint string `json:"mountpoint,omitempty"` // the filesystem holding Path
	FSType     string `json:"fstype,omitempty"`
	// FreeBytes is the free space before the run (statfs f_bavail).
	FreeBytes uint64 `json:"free_bytes,omitempty"`
	// Storage is the doctor model's path for MountPoint (or the device):
	// its layers top first, with encryption and where it runs.
	Storage *pathrecord.Path `json:"storage,omitempty"`
}

// Figure is one headline number.
type Figure struct {
	Name   string  `json:"name"`            // e.g. read_iops, load_p99, commit_p99
	Phase  string  `json:"phase,omitempty"` // the Phase it came from; "" for run-wide figures
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`             // one of the Unit constants
	Better string  `json:"better,omitempty"` // HigherIsBetter, LowerIsBetter or ""
}

// Phase is one workload of the profile.
type Phase struct {
	Name string `json:"name"` // e.g. "pair", "direct-4k", "commit-1", "ingest"
	// Engine is "fio", "native" (slowpath's own Go code), or the
	// database client of a database profile ("pgbench", "sysbench").
	Engine string `json:"engine"`
	// StartNS is the phase's start as an offset from Result.Started, so
	// phase timelines line up with WhereTime samples.
	StartNS    int64 `json:"start_ns"`
	DurationNS int64 `json:"duration_ns"`
	// Partial is set when the run was interrupted inside this phase: its
	// numbers cover only the time it ran.
	Partial bool `json:"partial,omitempty"`
	// JobFile is the fio job file this phase ran, verbatim (fio phases).
	JobFile string `json:"job_file,omitempty"`
	// ServiceCPUNS is the CPU time of the database server's processes
	// (utime+stime of its process tree, reaped backends included) during
	// the phase's timed run: the service's own threads, where an engine's
	// encryption runs (database profiles; 0 when not measured).
	ServiceCPUNS int64 `json:"service_cpu_ns,omitempty"`
	// Streams are the phase's measured I/O streams.
	Streams []Stream `json:"streams"`
}

// Stream is one direction of one group of jobs (fio with
// group_reporting) or one native operation: "readers" reading, "writers"
// writing, "loader" loading, "ingest" checkpointing.
type Stream struct {
	Name string `json:"name"` // the fio job name or native stream name
	// Op is "read", "write", "load", "commit", "append", "checkpoint",
	// "sync": fio's fsync/fdatasync calls, which are the commits of
	// db-commit and the checkpoints of telemetry-ingest, or a database
	// client's "transaction" and "query".
	Op          string  `json:"op"`
	Jobs        int     `json:"jobs,omitempty"` // threads/processes in the group
	Ops         uint64  `json:"ops"`            // completed operations (fio total_ios)
	Bytes       uint64  `json:"bytes"`
	RuntimeNS   int64   `json:"runtime_ns"`
	OpsPerSec   float64 `json:"ops_per_sec"`   // fio iops
	BytesPerSec float64 `json:"bytes_per_sec"` // fio bw_bytes
	// Latency is completion latency (fio clat_ns; for native streams the
	// operation's wall time).
	Latency *Latency `json:"latency,omitempty"`
	// Timeline is per-second throughput while the stream ran.
	Timeline []Point `json:"timeline,omitempty"`
}

// Latency summarises and keeps the distribution of one stream's latency.
type Latency struct {
	Count  uint64  `json:"count"`
	MinNS  int64   `json:"min_ns"`
	MeanNS float64 `json:"mean_ns"`
	MaxNS  int64   `json:"max_ns"`
	// Percentiles as the engine computed them (fio: 1 ... 99.99).
	Percentiles []Percentile `json:"percentiles,omitempty"`
	// Histogram holds every completion (fio json+ clat_ns.bins), enough to
	// draw a CDF and recompute any percentile, also over several runs
	// merged (Histogram.Merge).
	Histogram *Histogram `json:"histogram,omitempty"`
}

// Percentile is P percent of operations completing within ValueNS.
type Percentile struct {
	P       float64 `json:"p"`
	ValueNS int64   `json:"value_ns"`
}

// Histogram is a latency distribution in nanoseconds. Each bin holds Count
// operations whose latency fio (or the native engine) recorded as ValueNS.
// fio's bins are logarithmic with at most 1/64 relative error (fio
// stat.h, FIO_IO_U_PLAT_BITS 6); ValueNS is fio's representative value
// of the bin (plat_idx_to_val), the key of clat_ns.bins in json+ output.
// Native histograms use exact nanoseconds (one bin per distinct value) or
// the same scheme.
type Histogram struct {
	Bins []Bin `json:"bins"` // ascending by ValueNS, counts > 0
}

// Bin is one histogram bucket.
type Bin struct {
	ValueNS int64  `json:"value_ns"`
	Count   uint64 `json:"count"`
}

// Point is one timeline sample: the mean rate over the second (or
// interval) ending at TMS milliseconds after the phase start.
type Point struct {
	TMS   int64   `json:"t_ms"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// LoadTimes are the native index loader's measurements.
type LoadTimes struct {
	// SlowNS is the threshold above which a load counts as slow.
	SlowNS int64 `json:"slow_ns"`
	Slow   int   `json:"slow"` // loads above SlowNS
	Count  int   `json:"count"`
	P50NS  int64 `json:"p50_ns"`
	P99NS  int64 `json:"p99_ns"`
	MaxNS  int64 `json:"max_ns"`
	// PageBytesPerSec is bytes loaded over the sum of load times: the
	// loader's page-read throughput.
	PageBytesPerSec float64 `json:"page_bytes_per_sec"`
	// Loads are every load in order, so the distribution can be redrawn
	// and merged exactly.
	Loads []Load `json:"loads"`
}

// Load is one index load: map a finished file and touch every page.
type Load struct {
	StartNS    int64  `json:"start_ns"` // offset from Result.Started
	DurationNS int64  `json:"duration_ns"`
	Bytes      uint64 `json:"bytes"`
	File       string `json:"file"` // base name
}

// ErrVersion is wrapped by Read's error for a schema version it cannot read.
var ErrVersion = recordkind.ErrVersion

// Figure returns the figure with name in phase ("" for run-wide).
func (r *Result) Figure(phase, name string) (Figure, bool) {
	for _, f := range r.Figures {
		if f.Phase == phase && f.Name == name {
			return f, true
		}
	}
	return Figure{}, false
}

// Validate checks what every reader relies on.
func (r *Result) Validate() error {
	if err := (recordkind.Header{Kind: r.Kind, SchemaVersion: r.SchemaVersion}).Check(Kind, SchemaVersion); err != nil {
		return err
	}
	if r.Profile == "" {
		return errors.New("bench result has no profile")
	}
	switch r.Status {
	case StatusComplete, StatusInterrupted, StatusFailed:
	default:
		return fmt.Errorf("bench result has unknown status %q", r.Status)
	}
	for _, f := range r.Figures {
		if f.Name == "" || f.Unit == "" {
			return fmt.Errorf("bench result figure %+v has no name or unit", f)
		}
		if math.IsNaN(f.Value) || math.IsInf(f.Value, 0) {
			return fmt.Errorf("bench result figure %s is not a number", f.Name)
		}
	}
	if t := r.EncryptionTax; t != nil {
		vs := []float64{t.BytesPerIO, t.QueueDepth, t.TopAwaitNS, t.BottomAwaitNS, t.ExpectedCPUPerGiB}
		for _, p := range []*float64{t.Ratio, t.CryptoCPUPerGiB} {
			if p != nil {
				vs = append(vs, *p)
			}
		}
		for _, v := range vs {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return errors.New("bench result encryption_tax has a figure that is not a number")
			}
		}
		if l := t.Load; l != nil {
			for _, v := range []float64{l.BytesPerSec, l.CipherShare, l.CryptoThreadCPUs, l.QueueDepth} {
				if !(v >= 0) || math.IsInf(v, 0) {
					return errors.New("bench result encryption_tax.load has a figure that is negative or not a number")
				}
			}
		}
	}
	for _, p := range r.Phases {
		for _, s := range p.Streams {
			if s.Latency != nil && s.Latency.Histogram != nil {
				if err := s.Latency.Histogram.validate(); err != nil {
					return fmt.Errorf("phase %s stream %s: %w", p.Name, s.Name, err)
				}
			}
		}
	}
	return nil
}

// Write encodes r as indented JSON, setting Kind and SchemaVersion.
func Write(w io.Writer, r *Result) error {
	r.Kind, r.SchemaVersion = Kind, SchemaVersion
	if r.Figures == nil {
		r.Figures = []Figure{}
	}
	if r.Phases == nil {
		r.Phases = []Phase{}
	}
	if err := r.Validate(); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteFile writes r to path atomically (a temporary file in the same
// directory, renamed), so an interrupted write never leaves half a result.
func WriteFile(path string, r *Result) error {
	return stdfile.WriteFile(path, func(w io.Writer) error { return Write(w, r) })
}

// Read decodes one result and validates it. A truncated file, a document
// that is not a bench result and a schema version this slowpath does not
// read are distinct, clear errors (errors.Is(err, ErrVersion) for the last).
func Read(r io.Reader) (*Result, error) {
	b, err := stdfile.ReadDocument(r, "bench result")
	if err != nil {
		return nil, err
	}
	// The envelope first: a newer schema may not decode into these types.
	env, err := recordkind.Read(b)
	if err != nil {
		if what := recordkind.Describe(b); what != "" {
			return nil, fmt.Errorf("not a slowpath bench result: it is %s", what)
		}
		return nil, decodeError(err)
	}
	if err := env.Check(Kind, SchemaVersion, false); err != nil {
		return nil, err
	}
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, decodeError(err)
	}
	if err := res.Validate(); err != nil {
		return nil, err
	}
	// A file from elsewhere: its strings are checked before any report
	// sees them (validate.go). Not at Write: a run's result is saved
	// whatever its host's names are.
	if err := res.validateStrings(); err != nil {
		return nil, err
	}
	return &res, nil
}

// ReadFile reads one result file, or standard input for "-" (stdfile);
// the error names the path.
func ReadFile(path string) (*Result, error) {
	b, err := stdfile.ReadFile(path)
	if err != nil {
		return nil, err
	}
	res, err := Read(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", stdfile.Name(path), err)
	}
	return res, nil
}

func decodeError(err error) error {
	var se *json.SyntaxError
	if errors.Is(err, io.ErrUnexpectedEOF) || (errors.As(err, &se) && se.Error() == "unexpected end of JSON input") {
		return errors.New("bench result is truncated (incomplete JSON): the run may have been killed while writing")
	}
	return fmt.Errorf("bench result is not valid JSON: %w", err)
}

func (h *Histogram) validate() error {
	for i, b := range h.Bins {
		if b.ValueNS < 0 {
			return fmt.Errorf("histogram bin %d has negative value", i)
		}
		if i > 0 && b.ValueNS <= h.Bins[i-1].ValueNS {
			return fmt.Errorf("histogram bins not strictly ascending at %d", i)
		}
	}
	return nil
}

// Count is the number of operations in h.
func (h *Histogram) Count() uint64 {
	var n uint64
	for _, b := range h.Bins {
		n += b.Count
	}
	return n
}

// Stats is h as the distribution internal/stats reads quantiles, merges
// and CDFs from, in nanoseconds. Histogram itself is only the wire form.
func (h *Histogram) Stats() stats.Histogram {
	var out stats.Histogram
	if h == nil {
		return out
	}
	out.Values = make([]float64, len(h.Bins))
	out.Counts = make([]uint64, len(h.Bins))
	for i, b := range h.Bins {
		out.Values[i], out.Counts[i] = float64(b.ValueNS), b.Count
	}
	return out
}

// FromStats is the wire form of a distribution in nanoseconds (exact below
// 2^53 ns, 104 days).
func FromStats(s stats.Histogram) *Histogram {
	out := &Histogram{Bins: make([]Bin, 0, len(s.Values))}
	for i, v := range s.Values {
		out.Bins = append(out.Bins, Bin{ValueNS: int64(v), Count: s.Counts[i]})
	}
	return out
}

// Percentile is stats' quantile p/100 of h (fio's definition for its clat
// percentiles); false when h is empty or p is outside 0-100.
func (h *Histogram) Percentile(p float64) (int64, bool) {
	v, err := h.Stats().Quantile(p / 100)
	return int64(v), err == nil
}

// Merge returns the sum of histograms (several runs of one side; stats.Merge).
// fio's bin values are the same on every machine, so fio histograms merge
// exactly.
func Merge(hs ...*Histogram) *Histogram {
	ss := make([]stats.Histogram, 0, len(hs))
	for _, h := range hs {
		ss = append(ss, h.Stats())
	}
	return FromStats(stats.Merge(ss...))
}

// FromDurations builds an exact histogram (one bin per distinct value).
func FromDurations(ds []time.Duration) *Histogram {
	v := make([]float64, len(ds))
	for i, d := range ds {
		v[i] = float64(d)
	}
	return FromStats(stats.Exact(v))
}
