package benchresult

import (
	"fmt"

	"github.com/slowpath/slowpath/internal/units"
)

// DisplayUnit maps the unit of a figure (Unit*) to the display unit
// compare shows it in (units.*) and the factor to apply. The mapping is
// here, with the unit names, so package units knows no result format.
func DisplayUnit(unit string) (string, float64) {
	switch unit {
	case UnitIOPS, UnitOpsPerSec:
		return units.OpsPerSec, 1
	case UnitBytesPerSec:
		return units.BytesPerSec, 1
	case UnitNanoseconds:
		return units.Seconds, 1e-9
	case UnitMilliseconds:
		return units.Seconds, 1e-3
	case UnitSeconds:
		return units.Seconds, 1
	case UnitCPUs:
		return units.CPU, 1
	case UnitBytes:
		return units.Bytes, 1
	case UnitPercent:
		return units.Percent, 1
	default: // count, requests, fraction: shown as numbers with their unit
		return unit, 1
	}
}

// FormatValue prints a figure in its own unit (Unit*) the way bench's
// summary shows it: Go durations ("18ms"), sizes in binary units with one
// decimal, IOPS and ops/s whole. It predates units.Format and keeps
// bench's output (and its golden file) as it was; compare converts with
// DisplayUnit and prints with units.Format.
func FormatValue(v float64, unit string) string {
	switch unit {
	case UnitNanoseconds:
		return units.GoDuration(v)
	case UnitBytesPerSec:
		return units.Size(uint64(v)) + "/s"
	case UnitBytes:
		return units.Size(uint64(v))
	case UnitIOPS:
		return fmt.Sprintf("%.0f IOPS", v)
	case UnitOpsPerSec:
		return fmt.Sprintf("%.0f ops/s", v)
	case UnitCount:
		return fmt.Sprintf("%.0f", v)
	case UnitPercent:
		return fmt.Sprintf("%.0f%%", v)
	case UnitCPUs:
		return fmt.Sprintf("%.0f%% of a CPU", v*100)
	case UnitRequests:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%g %s", v, unit)
}
