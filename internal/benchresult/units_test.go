package benchresult

import (
	"testing"

	"github.com/slowpath/slowpath/internal/units"
)

// TestFormatValueAndDisplayUnit: one figure as bench's summary prints it,
// and as compare does after DisplayUnit.
func TestFormatValueAndDisplayUnit(t *testing.T) {
	for _, tc := range []struct {
		v             float64
		unit          string
		figure, shown string
	}{
		{18e6, UnitNanoseconds, "18ms", "18.0 ms"},
		{450e3, UnitNanoseconds, "450µs", "450 µs"},
		{100, UnitIOPS, "100 IOPS", "100"},
		{12.5 * (1 << 20), UnitBytesPerSec, "12.5 MiB/s", "12.5 MiB/s"},
		{0.38, UnitCPUs, "38% of a CPU", "38.0% CPU"},
		{3, UnitCount, "3", "3"},
	} {
		if got := FormatValue(tc.v, tc.unit); got != tc.figure {
			t.Errorf("FormatValue(%v, %q) = %q, want %q", tc.v, tc.unit, got, tc.figure)
		}
		u, f := DisplayUnit(tc.unit)
		if got := units.Format(tc.v*f, u); got != tc.shown {
			t.Errorf("units.Format(DisplayUnit(%v %q)) = %q, want %q", tc.v, tc.unit, got, tc.shown)
		}
	}
}
