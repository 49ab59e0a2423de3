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
	Name  string   `json:"jobname"`
	Error int      `json:"error"`
	Read  *jsonDir `json:"read"`
	Write *jsonDir `json:"write"`
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
}

// Parse reads one fio JSON document (fio 3.x, which reports latencies in
// nanoseconds as clat_ns).
func Parse(r io.Reader) (*Result, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read fio output: %w", err)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, errors.New("fio output is empty")
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
		jr := JobResult{Name: j.Name, Error: j.Error}
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
	for _, v := range []float64{d.IOPS, d.BWBytes, d.Clat.Min, d.Clat.Max, d.Clat.Mean} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return Direction{}, fmt.Errorf("invalid value %v", v)
		}
	}
	l := Latency{
		Count: d.Clat.N, Min: ns(d.Clat.Min), Max: ns(d.Clat.Max), Mean: ns(d.Clat.Mean),
		StddevNanosecs: d.Clat.Stddev,
	}
	for k, v := range d.Clat.Percentile {
		p, err := strconv.ParseFloat(k, 64)
		if err != nil || p < 0 || p > 100 || v < 0 {
			return Direction{}, fmt.Errorf("bad clat percentile %q: %v", k, v)
		}
		l.Percentiles = append(l.Percentiles, Percentile{P: p, Value: ns(v)})
	}
	sort.Slice(l.Percentiles, func(i, j int) bool { return l.Percentiles[i].P < l.Percentiles[j].P })
	out.Clat = l
	return out, nil
}

func ns(v float64) time.Duration { return time.Duration(math.Round(v)) }
