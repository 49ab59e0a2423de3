package units

import (
	"math"
	"testing"

	"github.com/slowpath/slowpath/internal/benchresult"
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

// TestFigureAndFromWire: one figure as bench's summary prints it, and as
// compare does after FromWire.
func TestFigureAndFromWire(t *testing.T) {
	for _, tc := range []struct {
		v             float64
		unit          string
		figure, shown string
	}{
		{18e6, benchresult.UnitNanoseconds, "18ms", "18.0 ms"},
		{450e3, benchresult.UnitNanoseconds, "450µs", "450 µs"},
		{100, benchresult.UnitIOPS, "100 IOPS", "100"},
		{12.5 * (1 << 20), benchresult.UnitBytesPerSec, "12.5 MiB/s", "12.5 MiB/s"},
		{0.38, benchresult.UnitCPUs, "38% of a CPU", "38.0% CPU"},
		{3, benchresult.UnitCount, "3", "3"},
	} {
		if got := Figure(tc.v, tc.unit); got != tc.figure {
			t.Errorf("Figure(%v, %q) = %q, want %q", tc.v, tc.unit, got, tc.figure)
		}
		u, f := FromWire(tc.unit)
		if got := Format(tc.v*f, u); got != tc.shown {
			t.Errorf("Format(FromWire(%v %q)) = %q, want %q", tc.v, tc.unit, got, tc.shown)
		}
	}
}
