package benchresult

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/pathrecord"
	"github.com/slowpath/slowpath/internal/snapshot"
)

func sample() *Result {
	return &Result{
		SlowpathVersion: "test",
		Profile:         "db-commit",
		Parameters:      Parameters{Scale: 1, RuntimeNS: int64(5 * time.Second), Target: "/data", TargetKind: "dir", Settings: map[string]string{"bs": "4k"}},
		Started:         time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC),
		DurationNS:      int64(6 * time.Second),
		Status:          StatusComplete,
		Environment: Environment{
			Host:   &snapshot.Host{KernelRelease: "6.1.0-test", NumCPU: 2},
			Target: &TargetPath{Path: "/data", MountPoint: "/data", FSType: "ext4", Storage: &pathrecord.Path{MountPoint: "/data", EncryptionLayers: 1, Layers: []pathrecord.Layer{{Kind: "filesystem", Name: "/data"}, {Kind: "dm-crypt", Name: "data", Depth: 1, Device: "dm-0", Encrypted: true}}}},
		},
		Figures: []Figure{{Name: "read_iops", Phase: "direct-4k", Value: 26600, Unit: UnitIOPS, Better: HigherIsBetter}},
		Phases: []Phase{{Name: "direct-4k", Engine: "fio", DurationNS: int64(5 * time.Second), Streams: []Stream{{
			Name: "direct", Op: "read", Ops: 133000, Bytes: 133000 * 4096, OpsPerSec: 26600,
			Latency: &Latency{Count: 4, MinNS: 10, MaxNS: 40, Histogram: &Histogram{Bins: []Bin{{10, 1}, {20, 1}, {40, 2}}}},
		}}}},
		WhereTime: &WhereTime{IntervalNS: int64(time.Second), Summary: "dm-0 await 18 ms vs ram0 0.1 ms",
			Devices: []DeviceTime{{Device: "dm-0", Layer: "dm-crypt", Depth: 1, Samples: []DeviceSample{{TMS: 1000, Reads: 5}}}},
			Threads: []ThreadGroup{{Group: GroupKcryptd, Threads: 2, CPUNS: 1e9, CPUs: 0.2}}},
	}
}

func TestRoundTrip(t *testing.T) {
	in := sample()
	var b bytes.Buffer
	if err := Write(&b, in); err != nil {
		t.Fatal(err)
	}
	out, err := Read(&b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("round trip (-in +out):\n%s", diff)
	}
	if out.Kind != Kind || out.SchemaVersion != SchemaVersion {
		t.Errorf("envelope %q %d", out.Kind, out.SchemaVersion)
	}
	if f, ok := out.Figure("direct-4k", "read_iops"); !ok || f.Value != 26600 {
		t.Errorf("Figure = %+v, %v", f, ok)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	if err := WriteFile(p, sample()); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(p); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
	bad := sample()
	bad.Profile = ""
	if err := WriteFile(p, bad); err == nil {
		t.Error("wrote a result without profile")
	}
	if _, err := ReadFile(p); err != nil {
		t.Errorf("failed write damaged the previous file: %v", err)
	}
}

func TestReadBad(t *testing.T) {
	var good bytes.Buffer
	if err := Write(&good, sample()); err != nil {
		t.Fatal(err)
	}
	g := good.String()
	tests := []struct {
		name, in, want string
		version        bool
	}{
		{"empty", "", "empty", false},
		{"truncated", g[:len(g)/2], "truncated", false},
		{"garbage", "hello", "not valid JSON", false},
		{"doctor report", `{"format_version": 1, "findings": []}`, "not a slowpath bench result", false},
		{"no version", `{"kind": "slowpath-bench-result"}`, "no schema_version", false},
		{"newer", strings.Replace(g, `"schema_version": 1`, `"schema_version": 2`, 1), "version 2 (written by a newer slowpath)", true},
		{"older", strings.Replace(g, `"schema_version": 1`, `"schema_version": 0`, 1), "older", true},
		{"no profile", strings.Replace(g, `"profile": "db-commit"`, `"profile": ""`, 1), "no profile", false},
		{"bad status", strings.Replace(g, `"status": "complete"`, `"status": "maybe"`, 1), "unknown status", false},
		{"wrong type", strings.Replace(g, `"duration_ns": 6000000000`, `"duration_ns": "6s"`, 1), "not valid JSON", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Read = %v, want error containing %q", err, tt.want)
			}
			if errors.Is(err, ErrVersion) != tt.version {
				t.Errorf("errors.Is(ErrVersion) = %v", !tt.version)
			}
		})
	}
	// Unknown fields are additive changes of the same version: accepted.
	if _, err := Read(strings.NewReader(strings.Replace(g, `"profile"`, `"new_field": {"x": 1}, "profile"`, 1))); err != nil {
		t.Errorf("unknown field refused: %v", err)
	}
}

func TestHistogram(t *testing.T) {
	h := &Histogram{Bins: []Bin{{100, 50}, {200, 40}, {1000, 9}, {50000, 1}}}
	for _, tt := range []struct {
		p    float64
		want int64
	}{{0, 100}, {50, 100}, {50.1, 200}, {90, 200}, {99, 1000}, {99.5, 50000}, {100, 50000}} {
		if got, ok := h.Percentile(tt.p); !ok || got != tt.want {
			t.Errorf("p%v = %d, %v; want %d", tt.p, got, ok, tt.want)
		}
	}
	if _, ok := (&Histogram{}).Percentile(50); ok {
		t.Error("empty histogram has a percentile")
	}
	if _, ok := h.Percentile(101); ok {
		t.Error("p101 accepted")
	}
	m := Merge(h, &Histogram{Bins: []Bin{{150, 10}, {200, 10}}}, nil)
	want := []Bin{{100, 50}, {150, 10}, {200, 50}, {1000, 9}, {50000, 1}}
	if diff := cmp.Diff(want, m.Bins); diff != "" {
		t.Errorf("merge (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(m, FromStats(m.Stats())); diff != "" {
		t.Errorf("through stats and back (-want +got):\n%s", diff)
	}
	// FromDurations is exact: its percentiles are the durations' own.
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(100 - i)
	}
	if got, ok := FromDurations(hundred).Percentile(99); !ok || got != 99 {
		t.Errorf("p99 of 1..100 = %d, %v; want 99", got, ok)
	}
	e := FromDurations([]time.Duration{3, 1, 3, 2})
	if diff := cmp.Diff([]Bin{{1, 1}, {2, 1}, {3, 2}}, e.Bins); diff != "" {
		t.Errorf("FromDurations (-want +got):\n%s", diff)
	}
	bad := sample()
	bad.Kind, bad.SchemaVersion = Kind, SchemaVersion
	bad.Phases[0].Streams[0].Latency.Histogram.Bins = []Bin{{20, 1}, {10, 1}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "ascending") {
		t.Errorf("Validate = %v", err)
	}
}

func FuzzRead(f *testing.F) {
	var good bytes.Buffer
	if err := Write(&good, sample()); err != nil {
		f.Fatal(err)
	}
	f.Add(good.Bytes())
	f.Add([]byte(`{"kind": "slowpath-bench-result", "schema_version": 1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Read(bytes.NewReader(b))
		if err == nil {
			if r == nil {
				t.Fatal("nil result without error")
			}
			for _, p := range r.Phases {
				for _, s := range p.Streams {
					if s.Latency != nil && s.Latency.Histogram != nil {
						s.Latency.Histogram.Percentile(99)
					}
				}
			}
		}
	})
}

// TestReadRefusesHostileEnvironment: a result's host and cloud sections
// obey the snapshot's rules (they come from another machine and reach
// compare's reports).
func TestReadRefusesHostileEnvironment(t *testing.T) {
	for _, tc := range []struct {
		path string
		set  func(*Result)
	}{
		{"environment.host.kernel_release", func(r *Result) { r.Environment.Host.KernelRelease = "6.1\x1b[2J" }},
		{"environment.cloud.provider", func(r *Result) { r.Environment.Cloud = &snapshot.Cloud{Provider: "x;y", DetectedBy: "dmi"} }},
	} {
		r := sample()
		tc.set(r)
		// Write refuses it too (it validates); encode by hand to test Read.
		var b bytes.Buffer
		r.Kind, r.SchemaVersion = Kind, SchemaVersion
		if err := json.NewEncoder(&b).Encode(r); err != nil {
			t.Fatal(err)
		}
		_, err := Read(&b)
		var ve *snapshot.ValidationError
		if !errors.As(err, &ve) || ve.Path != tc.path {
			t.Errorf("%s: Read error %v; want a validation error at that path", tc.path, err)
		}
	}
}
