package fio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/slowpath/slowpath/internal/stdfile"
)

// Result is fio's --output-format=json document, reduced to what slowpath
// uses. Field meanings: https://fio.readthedocs.io/en/latest/fio_doc.html#json-output
type Result struct {
	Version string      // "fio-3.33"
	Jobs    []JobResult // one per job (per group with group_reporting)
	// Messages are lines fio wrote into the output file before the JSON
	// document: fio 3.33 puts job errors there even with --output
	// ("fio: pid=0, err=1/file:filesetup.c:150, func=unlink, ...").
	Messages []string
}

// JobResult is one entry of "jobs".
type JobResult struct {
	Name  string
	Error int // errno of the first error, 0 when the job succeeded
	Read  Direction
	Write Direction
	// Sync is the "sync" object: fsync/fdatasync calls (fsync=N,
	// fdatasync=N) and their latency, which is what a commit or checkpoint
	// waits for. Zero when the job issued none.
	Sync Sync
	// RuntimeNS is job_runtime (ms in the JSON): how long the job ran.
	Runtime time.Duration
	// UsrCPU and SysCPU are usr_cpu and sys_cpu: percent of one CPU.
	UsrCPU, SysCPU float64
}

// Sync is a job's "sync" object.
type Sync struct {
	Count uint64  // calls: total_ios, or lat_ns N where fio leaves total_ios 0
	Lat   Latency // lat_ns
}

// Direction is a job's "read" or "write" object.
type Direction struct {
	IOs            uint64        // total_ios
	Bytes          uint64        // io_bytes
	IOPS           float64       // iops
	BandwidthBytes float64       // bw_bytes: bytes per second
	Runtime        time.Duration // runtime (milliseconds in the JSON)
	Clat           Latency       // clat_ns: submission to completion
}

// Latency is a clat_ns object.
type Latency struct {
	Count          uint64 // N
	Min, Max, Mean time.Duration
	Percentiles    []Percentile // ascending by P; empty when Count is 0
	StddevNanosecs float64
	// Bins are clat_ns.bins of --output-format=json+: every completion in
	// fio's logarithmic buckets, ascending by Value (fio stat.h,
	// FIO_IO_U_PLAT_BITS 6: at most 1/64 relative error). Empty with plain
	// json output.
	Bins []Bin
}

// Bin is one json+ latency bucket: Count completions of about Value.
type Bin struct {
	Value time.Duration
	Count uint64
}

// Percentile is one entry of clat_ns.percentile: P percent of completions
// took at most Value.
type Percentile struct {
	P     float64
	Value time.Duration
}

// Percentile returns the latency at p (e.g. 99 or 99.9) if fio reported it
// (fio's default list: 1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99,
// 99.5, 99.9, 99.95, 99.99).
func (l *Latency) Percentile(p float64) (time.Duration, bool) {
	for _, q := range l.Percentiles {
		if q.P == p {
			return q.Value, true
		}
	}
	return 0, false
}

// Err returns an error naming every job fio reports as failed.
func (r *Result) Err() error {
	var errs []error
	for _, j := range r.Jobs {
		if j.Error != 0 {
			errs = append(errs, fmt.Errorf("fio job %s failed: %v (errno %d)", j.Name, syscall.Errno(j.Error), j.Error))
		}
	}
	if len(errs) > 0 {
		for _, m := range r.Messages {
			errs = append(errs, errors.New(m))
		}
	}
	return errors.Join(errs...)
}

type jsonDoc struct {
	Version *string   `json:"fio version"`
	Jobs    []jsonJob `json:"jobs"`
}

type jsonJob struct {
	Name       string    `json:"jobname"`
	Error      int       `json:"error"`
	Read       *jsonDir  `json:"read"`
	Write      *jsonDir  `json:"write"`
	Sync       *jsonSync `json:"sync"`
	JobRuntime int64     `json:"job_runtime"` // ms
	UsrCPU     float64   `json:"usr_cpu"`
	SysCPU     float64   `json:"sys_cpu"`
}

type jsonSync struct {
	TotalIOs uint64   `json:"total_ios"`
	Lat      *jsonLat `json:"lat_ns"`
}

type jsonDir struct {
	IOBytes  uint64   `json:"io_bytes"`
	BWBytes  float64  `json:"bw_bytes"`
	IOPS     float64  `json:"iops"`
	Runtime  int64    `json:"runtime"` // ms
	TotalIOs uint64   `json:"total_ios"`
	Clat     *jsonLat `json:"clat_ns"`
}

type jsonLat struct {
	Min        float64            `json:"min"`
	Max        float64            `json:"max"`
	Mean       float64            `json:"mean"`
	Stddev     float64            `json:"stddev"`
	N          uint64             `json:"N"`
	Percentile map[string]float64 `json:"percentile"`
	Bins       map[string]uint64  `json:"bins"`
}

// Parse reads one fio JSON document (fio 3.x, which reports latencies in
// nanoseconds as clat_ns).
func Parse(r io.Reader) (*Result, error) {
	b, err := stdfile.ReadDocument(r, "fio output")
	if err != nil {
		return nil, err
	}
	var messages []string
	for len(b) > 0 && b[0] != '{' {
		line, rest, _ := bytes.Cut(b, []byte("\n"))
		if !bytes.HasPrefix(line, []byte("fio: ")) {
			return nil, fmt.Errorf("fio output is not JSON (starts with %q): run fio with --output-format=json --output=FILE", firstLine(line))
		}
		messages = append(messages, string(bytes.TrimSpace(line)))
		b = bytes.TrimSpace(rest)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("fio output has messages but no JSON document: %q", messages)
	}
	var d jsonDoc
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errors.New("fio output is truncated JSON")
		}
		return nil, fmt.Errorf("fio output: %w", err)
	}
	if d.Version == nil {
		return nil, errors.New(`fio output has no "fio version": not an fio JSON document`)
	}
	if d.Jobs == nil {
		return nil, errors.New(`fio output has no "jobs"`)
	}
	res := &Result{Version: *d.Version, Jobs: []JobResult{}, Messages: messages}
	for i, j := range d.Jobs {
		jr := JobResult{Name: j.Name, Error: j.Error, Runtime: time.Duration(j.JobRuntime) * time.Millisecond, UsrCPU: j.UsrCPU, SysCPU: j.SysCPU}
		if j.JobRuntime < 0 {
			return nil, fmt.Errorf("fio job %d (%s): negative job_runtime", i, j.Name)
		}
		if j.Sync != nil && j.Sync.Lat != nil {
			l, err := convertLat(j.Sync.Lat)
			if err != nil {
				return nil, fmt.Errorf("fio job %d (%s) sync: %w", i, j.Name, err)
			}
			// fio 3.33 leaves sync total_ios at 0 for fsync=N/fdatasync=N
			// (it counts only rw=sync jobs there); lat_ns N counts the calls.
			jr.Sync = Sync{Count: max(j.Sync.TotalIOs, l.Count), Lat: l}
		}
		var err error
		if jr.Read, err = convertDir(j.Read); err != nil {
			return nil, fmt.Errorf("fio job %d (%s) read: %w", i, j.Name, err)
		}
		if jr.Write, err = convertDir(j.Write); err != nil {
			return nil, fmt.Errorf("fio job %d (%s) write: %w", i, j.Name, err)
		}
		res.Jobs = append(res.Jobs, jr)
	}
	return res, nil
}

func firstLine(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	if len(b) > 60 {
		b = b[:60]
	}
	return string(b)
}

func convertDir(d *jsonDir) (Direction, error) {
	if d == nil {
		return Direction{}, errors.New("missing")
	}
	if d.Clat == nil {
		return Direction{}, errors.New("no clat_ns (fio older than 3.0 reports microseconds; install fio 3.x)")
	}
	out := Direction{
		IOs: d.TotalIOs, Bytes: d.IOBytes, IOPS: d.IOPS, BandwidthBytes: d.BWBytes,
		Runtime: time.Duration(d.Runtime) * time.Millisecond,
	}
	if d.IOPS < 0 || math.IsNaN(d.IOPS) || math.IsInf(d.IOPS, 0) || d.BWBytes < 0 || math.IsNaN(d.BWBytes) || math.IsInf(d.BWBytes, 0) {
		return Direction{}, fmt.Errorf("invalid value %v / %v", d.IOPS, d.BWBytes)
	}
	l, err := convertLat(d.Clat)
	if err != nil {
		return Direction{}, err
	}
	out.Clat = l
	return out, nil
}

func convertLat(c *jsonLat) (Latency, error) {
	for _, v := range []float64{c.Min, c.Max, c.Mean} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) || v > math.MaxInt64/2 {
			return Latency{}, fmt.Errorf("invalid value %v", v)
		}
	}
	l := Latency{
		Count: c.N, Min: ns(c.Min), Max: ns(c.Max), Mean: ns(c.Mean),
		StddevNanosecs: c.Stddev,
	}
	for k, v := range c.Percentile {
		p, err := strconv.ParseFloat(k, 64)
		if err != nil || p < 0 || p > 100 || v < 0 || v > math.MaxInt64/2 {
			return Latency{}, fmt.Errorf("bad clat percentile %q: %v", k, v)
		}
		l.Percentiles = append(l.Percentiles, Percentile{P: p, Value: ns(v)})
	}
	sort.Slice(l.Percentiles, func(i, j int) bool { return l.Percentiles[i].P < l.Percentiles[j].P })
	for k, c := range c.Bins {
		v, err := strconv.ParseInt(k, 10, 64)
		if err != nil || v < 0 {
			return Latency{}, fmt.Errorf("bad latency bin %q", k)
		}
		if c > 0 {
			l.Bins = append(l.Bins, Bin{Value: time.Duration(v), Count: c})
		}
	}
	sort.Slice(l.Bins, func(i, j int) bool { return l.Bins[i].Value < l.Bins[j].Value })
	return l, nil
}

func ns(v float64) time.Duration { return time.Duration(math.Round(v)) }
