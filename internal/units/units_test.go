package units

import (
	"go/parser"
	"go/token"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		unit string
		want string
	}{
		{171000, OpsPerSec, "171k"}, {26600, OpsPerSec, "26.6k"}, {4, OpsPerSec, "4.00"}, {1.5e6, OpsPerSec, "1.50M"},
		{0.25, Seconds, "250 ms"}, {0.0004, Seconds, "400 µs"}, {2.5, Seconds, "2.50 s"},
		{200 << 20, BytesPerSec, "200 MiB/s"}, {1536, Bytes, "1.50 KiB"}, {512, Bytes, "512 B"}, {3, Count, "3"}, {0.38, CPU, "38.0% CPU"}, {math.NaN(), Count, "?"},
	} {
		if got := Format(tc.v, tc.unit); got != tc.want {
			t.Errorf("Format(%v, %q) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
}

func TestSize(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"}, {3 << 30, "3.0 GiB"}, {5 << 50, "5.0 PiB"}, {1 << 62, "4096.0 PiB"}} {
		if got := Size(tc.n); got != tc.want {
			t.Errorf("Size(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0.01755, "17.6 ms"},
		{0.018 - 0.00045, "17.6 ms"}, // 0.017549999999999996 as computed
		{0.01755000000000001, "17.6 ms"},
		{7e-6, "7 µs"},
		{6.999999999999e-6, "7 µs"},
		{6.5536e-6, "6.55 µs"},
		{1.5, "1.5 s"},
		{4e-7, "400 ns"},
		{0, "0 ns"},
		{-2e-5, "-20 µs"},
	} {
		if got := Duration(tc.in); got != tc.want {
			t.Errorf("Duration(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestFixedSteps: the rates, milliseconds and throughputs of the reports,
// each at the edges of its steps.
func TestFixedSteps(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Rate(0), "0.00"}, {Rate(0.25), "0.25"}, {Rate(1), "1.0"}, {Rate(99.94), "99.9"}, {Rate(100), "100"}, {Rate(1234.5), "1234"},
		{Milliseconds(450e3), "0.45 ms"}, {Milliseconds(2.5e6), "2.5 ms"}, {Milliseconds(18e6), "18 ms"},
		{Throughput(1.5e9), "1.50 GB/s"}, {Throughput(850e6), "850 MB/s"},
		{GoDuration(18e6), "18ms"}, {GoDuration(1234567890), "1.235s"}, {GoDuration(450e3), "450µs"}, {GoDuration(999), "999ns"},
		{RoundDuration(17654321 * time.Nanosecond).String(), "17.7ms"}, {RoundDuration(2734 * time.Nanosecond).String(), "2.7µs"},
		{RoundDuration(1234567 * time.Nanosecond).String(), "1.23ms"}, {RoundDuration(999 * time.Nanosecond).String(), "999ns"},
		{RoundDurationBench(17654321 * time.Nanosecond).String(), "17.65ms"}, {RoundDurationBench(123456 * time.Nanosecond).String(), "123µs"},
		{RoundDurationBench(-123456 * time.Nanosecond).String(), "-123µs"}, {RoundDurationBench(2734 * time.Nanosecond).String(), "2.7µs"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n         int
		one, want string
	}{{1, "node", "1 node"}, {0, "node", "0 nodes"}, {2, "canary", "2 canaries"}, {1, "canary", "1 canary"}, {2, "key", "2 keys"},
		{3, "encryption layer", "3 encryption layers"}, {2, "frame name", "2 frame names"}} {
		if got := Plural(tc.n, tc.one); got != tc.want {
			t.Errorf("Plural(%d, %q) = %q, want %q", tc.n, tc.one, got, tc.want)
		}
	}
}

// TestLeaf: units imports only the standard library, so model, check and
// benchresult can all print with it without an import cycle.
func TestLeaf(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
				t.Errorf("%s imports %s: units must import only the standard library", f, p)
			}
		}
	}
}
