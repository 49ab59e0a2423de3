// Package fio drives fio (https://fio.readthedocs.io): it writes a job file,
// runs fio with JSON output and parses the result. It is the only place in
// slowpath that executes fio.
//
// fio writes its JSON to --output=FILE rather than stdout, so warnings that
// fio prints while it runs cannot corrupt the document.
package fio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Job is one fio job. Zero fields are left to fio's defaults.
type Job struct {
	Name     string // job name, [a-zA-Z0-9_.-]
	Filename string // file or block device
	// RW is fio's rw= pattern: read, write, randread, randwrite, rw, randrw.
	RW        string
	BlockSize string // bs=, e.g. "4k"
	Size      string // size=, e.g. "64m"
	IOEngine  string // psync, libaio, io_uring, mmap, ...
	IODepth   int
	NumJobs   int
	RWMixRead int  // rwmixread= percentage for rw/randrw
	Direct    bool // O_DIRECT
	// Runtime with TimeBased loops over the file for that long; without
	// TimeBased fio stops at Size or Runtime, whichever comes first.
	Runtime   time.Duration
	TimeBased bool
	RampTime  time.Duration
}

var validRW = map[string]bool{"read": true, "write": true, "randread": true, "randwrite": true,
	"rw": true, "readwrite": true, "randrw": true, "trim": true, "randtrim": true}

// Validate reports a job fio would reject or a value that would break the
// job file's ini syntax.
func (j *Job) Validate() error {
	if j.Name == "" || strings.ContainsFunc(j.Name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-')
	}) {
		return fmt.Errorf("fio job name %q: use letters, digits, '_', '.', '-'", j.Name)
	}
	if j.Filename == "" {
		return fmt.Errorf("fio job %s: no filename", j.Name)
	}
	if j.RW != "" && !validRW[j.RW] {
		return fmt.Errorf("fio job %s: unknown rw %q", j.Name, j.RW)
	}
	for k, v := range map[string]string{"filename": j.Filename, "bs": j.BlockSize, "size": j.Size, "ioengine": j.IOEngine} {
		if strings.ContainsAny(v, "\n\r[]") {
			return fmt.Errorf("fio job %s: %s %q contains a line break or bracket", j.Name, k, v)
		}
	}
	if j.IODepth < 0 || j.NumJobs < 0 || j.RWMixRead < 0 || j.RWMixRead > 100 || j.Runtime < 0 || j.RampTime < 0 {
		return fmt.Errorf("fio job %s: negative or out-of-range number", j.Name)
	}
	if j.TimeBased && j.Runtime == 0 {
		return fmt.Errorf("fio job %s: time_based needs a runtime", j.Name)
	}
	return nil
}

// JobFile renders the job in fio's ini format.
func (j *Job) JobFile() ([]byte, error) {
	if err := j.Validate(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "[%s]\nfilename=%s\n", j.Name, j.Filename)
	kv := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s=%s\n", k, v)
		}
	}
	num := func(k string, v int) {
		if v != 0 {
			kv(k, strconv.Itoa(v))
		}
	}
	secs := func(k string, d time.Duration) {
		if d != 0 {
			// fio takes a unit suffix; milliseconds keep sub-second values.
			kv(k, strconv.FormatInt(d.Milliseconds(), 10)+"ms")
		}
	}
	kv("rw", j.RW)
	kv("bs", j.BlockSize)
	kv("size", j.Size)
	kv("ioengine", j.IOEngine)
	num("iodepth", j.IODepth)
	num("numjobs", j.NumJobs)
	num("rwmixread", j.RWMixRead)
	if j.Direct {
		kv("direct", "1")
	}
	secs("runtime", j.Runtime)
	secs("ramp_time", j.RampTime)
	if j.TimeBased {
		kv("time_based", "1")
	}
	if j.NumJobs > 1 {
		kv("group_reporting", "1")
	}
	return b.Bytes(), nil
}

// Args is fio's command line (without "fio") for a job file and the path of
// the JSON result. json+ adds the latency histogram bins; --eta=never: the
// progress line would go to stdout.
func Args(jobFile, output string) []string {
	return []string{"--output-format=json+", "--output=" + output, "--eta=never", jobFile}
}

// ErrNotFound is returned when fio is not installed.
var ErrNotFound = errors.New("fio not found: apt-get install fio")

// Run writes j to a job file in a temporary directory, runs fio there
// (Invocation.Run: cancellation is SIGINT to fio's process group) and
// parses its JSON. A job that fio reports as failed is an error, and so is
// a cancelled run.
func Run(ctx context.Context, j Job) (*Result, error) {
	if _, err := exec.LookPath("fio"); err != nil {
		return nil, ErrNotFound
	}
	jf, err := j.JobFile()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "slowpath-fio-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	res, err := Invocation{JobFile: jf, Dir: dir}.Run(ctx)
	if err != nil {
		return nil, fmt.Errorf("fio job %s: %w", j.Name, err)
	}
	return res, nil
}
