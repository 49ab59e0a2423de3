package fio

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// The testdata files are fio 3.33 (Debian 12) output recorded on this
// machine kind with --output-format=json --output=FILE; error.json is a job
// whose file fio could not lay out, with the error line fio puts before the
// JSON in the same file.
func TestParseRecorded(t *testing.T) {
	type dirSummary struct {
		IOs            uint64
		Bytes          uint64
		IOPS           float64
		BandwidthBytes float64
		Runtime        time.Duration
		ClatCount      uint64
		ClatMin        time.Duration
		ClatMax        time.Duration
		P50, P999      time.Duration
		Percentiles    int
	}
	type jobSummary struct {
		Name        string
		Error       int
		Read, Write dirSummary
	}
	summarise := func(d Direction) dirSummary {
		s := dirSummary{IOs: d.IOs, Bytes: d.Bytes, IOPS: d.IOPS, BandwidthBytes: d.BandwidthBytes, Runtime: d.Runtime,
			ClatCount: d.Clat.Count, ClatMin: d.Clat.Min, ClatMax: d.Clat.Max, Percentiles: len(d.Clat.Percentiles)}
		s.P50, _ = d.Clat.Percentile(50)
		s.P999, _ = d.Clat.Percentile(99.9)
		return s
	}
	tests := []struct {
		file     string
		want     []jobSummary
		messages int
		wantErr  string // from Result.Err
	}{
		{file: "randread-4k.json", want: []jobSummary{{Name: "randread",
			Read: dirSummary{IOs: 2048, Bytes: 8388608, IOPS: 14628.571429, BandwidthBytes: 59918628, Runtime: 140 * time.Millisecond,
				ClatCount: 2048, ClatMin: 33091, ClatMax: 16795655, P50: 44288, P999: 2539520, Percentiles: 17}}}},
		{file: "seqwrite-128k.json", want: []jobSummary{{Name: "seqwrite",
			Write: dirSummary{IOs: 64, Bytes: 8388608, IOPS: 0, BandwidthBytes: 2097152000}}}},
		{file: "randrw-2jobs.json", want: []jobSummary{{Name: "mixed"}}},
		{file: "error.json", want: []jobSummary{{Name: "broken", Error: 1}}, messages: 1, wantErr: "fio job broken failed: operation not permitted (errno 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			res, err := Parse(f)
			if err != nil {
				t.Fatal(err)
			}
			if res.Version != "fio-3.33" {
				t.Errorf("version %q", res.Version)
			}
			if len(res.Messages) != tt.messages {
				t.Errorf("messages %q, want %d", res.Messages, tt.messages)
			}
			var got []jobSummary
			for _, j := range res.Jobs {
				got = append(got, jobSummary{Name: j.Name, Error: j.Error, Read: summarise(j.Read), Write: summarise(j.Write)})
			}
			switch tt.file {
			case "seqwrite-128k.json":
				// Only the sure facts: sizes and counts. Latencies vary.
				got[0].Write = dirSummary{IOs: got[0].Write.IOs, Bytes: got[0].Write.Bytes, BandwidthBytes: got[0].Write.BandwidthBytes}
				if res.Jobs[0].Write.Clat.Count != 64 || len(res.Jobs[0].Write.Clat.Percentiles) != 17 {
					t.Errorf("seqwrite clat %+v", res.Jobs[0].Write.Clat)
				}
				got[0].Read = dirSummary{}
			case "randrw-2jobs.json":
				// group_reporting: one result for both jobs, 70% reads.
				r, w := res.Jobs[0].Read, res.Jobs[0].Write
				if r.IOs != 2846 || w.IOs != 1250 || w.BandwidthBytes != 465454545 {
					t.Errorf("randrw read %d ios, write %d ios %.0f B/s; want 2846, 1250, 465454545", r.IOs, w.IOs, w.BandwidthBytes)
				}
				if p, ok := w.Clat.Percentile(99); !ok || p != 5792 {
					t.Errorf("randrw write p99 = %v, %v; want 5.792µs", p, ok)
				}
				got[0].Read, got[0].Write = dirSummary{}, dirSummary{}
			case "error.json":
				got[0].Read, got[0].Write = dirSummary{}, dirSummary{}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("jobs (-want +got):\n%s", diff)
			}
			err = res.Err()
			if tt.wantErr == "" && err != nil {
				t.Errorf("Err() = %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "filesetup.c")) {
				t.Errorf("Err() = %v, want %q and fio's message", err, tt.wantErr)
			}
		})
	}
}

func TestParseBad(t *testing.T) {
	good, err := os.ReadFile("testdata/randread-4k.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "fio output is empty"},
		{"text", "randread: (g=0): rw=randread\n", "not JSON"},
		{"only messages", "fio: something failed\n", "no JSON document"},
		{"truncated", string(good[:len(good)/2]), "truncated"},
		{"not fio", `{"jobs": []}`, `no "fio version"`},
		{"no jobs", `{"fio version": "fio-3.33"}`, `no "jobs"`},
		{"old fio", `{"fio version": "fio-2.2", "jobs": [{"jobname": "x", "read": {"clat": {}}, "write": {"clat": {}}}]}`, "no clat_ns"},
		{"bad percentile", `{"fio version": "fio-3.33", "jobs": [{"jobname": "x", "read": {"clat_ns": {"percentile": {"abc": 1}}}, "write": {"clat_ns": {}}}]}`, "bad clat percentile"},
		{"negative", `{"fio version": "fio-3.33", "jobs": [{"jobname": "x", "read": {"iops": -1, "clat_ns": {}}, "write": {"clat_ns": {}}}]}`, "invalid value"},
		{"no write", `{"fio version": "fio-3.33", "jobs": [{"jobname": "x", "read": {"clat_ns": {}}}]}`, "write: missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v, want error containing %q", err, tt.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, n := range []string{"randread-4k.json", "seqwrite-128k.json", "error.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := Parse(strings.NewReader(string(b)))
		if err == nil && res == nil {
			t.Fatal("nil result without error")
		}
	})
}

func TestJobFile(t *testing.T) {
	j := Job{Name: "r4k", Filename: "/dev/mapper/x", RW: "randrw", BlockSize: "4k", Size: "64m", IOEngine: "libaio",
		IODepth: 32, NumJobs: 2, RWMixRead: 70, Direct: true, Runtime: 1500 * time.Millisecond, TimeBased: true, RampTime: time.Second}
	got, err := j.JobFile()
	if err != nil {
		t.Fatal(err)
	}
	want := `[r4k]
filename=/dev/mapper/x
rw=randrw
bs=4k
size=64m
ioengine=libaio
iodepth=32
numjobs=2
rwmixread=70
direct=1
runtime=1500ms
ramp_time=1000ms
time_based=1
group_reporting=1
`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("job file (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"--output-format=json+", "--output=/r.json", "--eta=never", "/j.fio"}, Args("/j.fio", "/r.json")); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
}

func TestJobValidate(t *testing.T) {
	ok := Job{Name: "a", Filename: "/tmp/f"}
	tests := []struct {
		name string
		mod  func(*Job)
	}{
		{"no name", func(j *Job) { j.Name = "" }},
		{"name with bracket", func(j *Job) { j.Name = "a]" }},
		{"no file", func(j *Job) { j.Filename = "" }},
		{"newline in file", func(j *Job) { j.Filename = "/tmp/f\nrw=write" }},
		{"bad rw", func(j *Job) { j.RW = "sideways" }},
		{"mix over 100", func(j *Job) { j.RWMixRead = 101 }},
		{"time based without runtime", func(j *Job) { j.TimeBased = true }},
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid job: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := ok
			tt.mod(&j)
			if err := j.Validate(); err == nil {
				t.Errorf("Validate accepted %+v", j)
			}
			if _, err := j.JobFile(); err == nil {
				t.Errorf("JobFile accepted %+v", j)
			}
		})
	}
}

// TestRunReal runs fio on a temporary file on this host.
func TestRunReal(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	dir := t.TempDir()
	for _, j := range []Job{
		{Name: "write", Filename: filepath.Join(dir, "f"), RW: "write", BlockSize: "64k", Size: "4m", IOEngine: "psync"},
		{Name: "randread", Filename: filepath.Join(dir, "f"), RW: "randread", BlockSize: "4k", Size: "4m", IOEngine: "psync"},
	} {
		res, err := Run(context.Background(), j)
		if err != nil {
			t.Fatalf("%s: %v", j.Name, err)
		}
		if len(res.Jobs) != 1 || res.Jobs[0].Name != j.Name {
			t.Fatalf("%s: jobs %+v", j.Name, res.Jobs)
		}
		d := res.Jobs[0].Read
		if j.RW == "write" {
			d = res.Jobs[0].Write
		}
		// fio covers size= exactly once when not time based.
		if d.Bytes != 4<<20 || d.IOs == 0 || d.IOPS <= 0 || d.BandwidthBytes <= 0 || d.Clat.Count != d.IOs || len(d.Clat.Percentiles) == 0 {
			t.Errorf("%s: implausible result %+v", j.Name, d)
		}
		if p50, ok := d.Clat.Percentile(50); !ok || p50 <= 0 || p50 > d.Clat.Max {
			t.Errorf("%s: p50 %v (max %v)", j.Name, p50, d.Clat.Max)
		}
	}
}

// TestRunJobError: a job fio cannot run is an error naming the job.
func TestRunJobError(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	// fio lays out a write job's file by unlinking it first: EPERM in /proc.
	_, err := Run(context.Background(), Job{Name: "procfile", Filename: "/proc/version", RW: "write", Size: "1m"})
	if err == nil {
		t.Fatal("fio writing /proc/version succeeded")
	}
	if !strings.Contains(err.Error(), "procfile") {
		t.Errorf("error does not name the job: %v", err)
	}
	t.Logf("error (expected): %v", err)
}

func TestRunNotFound(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Run(context.Background(), Job{Name: "a", Filename: "/tmp/x"})
	if !errors.Is(err, ErrNotFound) || err.Error() != "fio not found: apt-get install fio" {
		t.Errorf("err = %v, want ErrNotFound", err)
	}
	if _, lookErr := exec.LookPath("fio"); lookErr == nil {
		t.Error("PATH override did not hide fio")
	}
}
