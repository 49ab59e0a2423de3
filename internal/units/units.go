// Package units owns how slowpath prints measured values for people: the
// display units a comparison row carries, the mapping from a bench
// figure's unit to them, and the formatters of every report (compare's
// tables, bench's summary, sizes). One place, so a figure does not print
// one way here and another there by accident.
package units

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
)

// Display units: what a comparison row (compare's JSON "unit") carries.
const (
	OpsPerSec   = "ops/s" // IOPS, ingest ops
	BytesPerSec = "B/s"
	Seconds     = "s"     // latencies and durations
	Count       = "count" // e.g. slow loads
	CPU         = "cpu"   // CPUs busy: 1 is one whole CPU
	Bytes       = "bytes"
	Percent     = "%"
)

// sig3 prints v with three significant digits, no exponent.
func sig3(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// Format prints v in a display unit the way compare's tables (text,
// Markdown, HTML) show it: three significant digits and a spaced unit.
func Format(v float64, unit string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "?"
	}
	a := math.Abs(v)
	switch unit {
	case OpsPerSec:
		switch {
		case a >= 1e6:
			return sig3(v/1e6) + "M"
		case a >= 1e3:
			return sig3(v/1e3) + "k"
		default:
			return sig3(v)
		}
	case BytesPerSec:
		return binary(v, "/s")
	case Seconds:
		switch {
		case a >= 1:
			return sig3(v) + " s"
		case a >= 1e-3:
			return sig3(v*1e3) + " ms"
		case a >= 1e-6 || a == 0:
			return sig3(v*1e6) + " µs"
		default:
			return sig3(v*1e9) + " ns"
		}
	case Count:
		if v == math.Trunc(v) {
			return strconv.FormatFloat(v, 'f', 0, 64)
		}
		return sig3(v)
	case CPU:
		return sig3(v*100) + "% CPU"
	case Percent:
		return sig3(v) + "%"
	case Bytes:
		return binary(v, "")
	default:
		if unit == "" {
			return sig3(v)
		}
		return sig3(v) + " " + unit
	}
}

// binary prints bytes (per suffix) in the largest binary unit they reach.
func binary(v float64, suffix string) string {
	for _, u := range []struct {
		div  float64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if math.Abs(v) >= u.div {
			return sig3(v/u.div) + " " + u.name + suffix
		}
	}
	return sig3(v) + " B" + suffix
}

// FromWire maps the unit of a bench figure (benchresult.Unit*) to its
// display unit and the factor to apply.
func FromWire(unit string) (string, float64) {
	switch unit {
	case benchresult.UnitIOPS, benchresult.UnitOpsPerSec:
		return OpsPerSec, 1
	case benchresult.UnitBytesPerSec:
		return BytesPerSec, 1
	case benchresult.UnitNanoseconds:
		return Seconds, 1e-9
	case benchresult.UnitMilliseconds:
		return Seconds, 1e-3
	case benchresult.UnitSeconds:
		return Seconds, 1
	case benchresult.UnitCPUs:
		return CPU, 1
	case benchresult.UnitBytes:
		return Bytes, 1
	case benchresult.UnitPercent:
		return Percent, 1
	default: // count, requests, fraction: shown as numbers with their unit
		return unit, 1
	}
}

// Figure prints a bench figure in its own unit (benchresult.Unit*) the way
// bench's summary shows it: Go durations ("18ms"), sizes in binary units
// with one decimal, IOPS and ops/s whole. It predates Format and keeps
// bench's output (and its golden file) as it was; compare converts with
// FromWire and prints with Format.
func Figure(v float64, unit string) string {
	switch unit {
	case benchresult.UnitNanoseconds:
		return time.Duration(v).Round(durRound(v)).String()
	case benchresult.UnitBytesPerSec:
		return storagemodel.FormatBytes(uint64(v)) + "/s"
	case benchresult.UnitBytes:
		return storagemodel.FormatBytes(uint64(v))
	case benchresult.UnitIOPS:
		return fmt.Sprintf("%.0f IOPS", v)
	case benchresult.UnitOpsPerSec:
		return fmt.Sprintf("%.0f ops/s", v)
	case benchresult.UnitCount:
		return fmt.Sprintf("%.0f", v)
	case benchresult.UnitPercent:
		return fmt.Sprintf("%.0f%%", v)
	case benchresult.UnitCPUs:
		return fmt.Sprintf("%.0f%% of a CPU", v*100)
	case benchresult.UnitRequests:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%g %s", v, unit)
}

func durRound(ns float64) time.Duration {
	switch {
	case ns >= 1e9:
		return time.Millisecond
	case ns >= 1e6:
		return 10 * time.Microsecond
	case ns >= 1e3:
		return 10 * time.Nanosecond
	}
	return 1
}
