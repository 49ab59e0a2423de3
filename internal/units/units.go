// Package units owns how slowpath prints measured values for people: the
// display units a comparison row carries and the formatters of every
// report (compare's tables, bench's summary, doctor's findings, fleet's
// tax, sizes, rates) and the count of a noun ("3 nodes"). One place, so a figure does not print one way here
// and another there by accident. It imports only the standard library:
// the packages that measure (model, check, benchresult) use it, so it
// must import none of them; benchresult maps its own wire units here.
//
// Some formatters differ on purpose, each fixed by the output (and golden
// files) of the reports that print with it: Format's three significant
// digits with trailing zeros ("7.00 µs") for compare's columns, Duration's
// %.3g ("7 µs") for fleet's tax, GoDuration's Go duration text ("18ms")
// for bench's summary.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
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

// fixed prints v with no decimal once its magnitude m reaches whole, one
// once it reaches tenth, else two: the rounding every figure here shares,
// each with its own steps.
func fixed(v, m, whole, tenth float64) string {
	switch {
	case m >= whole:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case m >= tenth:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// sig3 prints v with three significant digits, no exponent.
func sig3(v float64) string {
	if v == 0 {
		return "0"
	}
	return fixed(v, math.Abs(v), 100, 10)
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

// binaryNames are the binary units, each 1024 of the one before.
var binaryNames = []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}

// inBinary is v in the largest binary unit it reaches, up to
// binaryNames[top]. Dividing by 1024 is exact, so the value is v/1024^i.
func inBinary(v float64, top int) (float64, string) {
	i := 0
	for i < top && math.Abs(v) >= 1024 {
		v /= 1024
		i++
	}
	return v, binaryNames[i]
}

// binary prints bytes (per suffix) in the largest binary unit they reach,
// up to GiB, with three significant digits: compare's columns.
func binary(v float64, suffix string) string {
	f, name := inBinary(v, 3)
	return sig3(f) + " " + name + suffix
}

// Size renders a size for people, one decimal in the largest binary unit
// it reaches: 1.5 GiB, 512 B.
func Size(n uint64) string {
	f, name := inBinary(float64(n), len(binaryNames)-1)
	if name == "B" {
		return strconv.FormatUint(n, 10) + " B"
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " " + name
}

// Throughput renders bytes per second in decimal units, as cipher speeds
// are quoted (cryptsetup benchmark, vendors): 1.50 GB/s, 850 MB/s.
func Throughput(bps float64) string {
	if bps >= 1e9 {
		return fmt.Sprintf("%.2f GB/s", bps/1e9)
	}
	return fmt.Sprintf("%.0f MB/s", bps/1e6)
}

// Rate renders a rate without its unit, with two decimals below 1, one
// below 100: 0.25, 3.5, 1234. Checks print counters' rates with it.
func Rate(r float64) string { return fixed(r, r, 100, 1) }

// Duration renders a duration in seconds with three significant figures in
// the unit that suits it: 17.6 ms, 7 µs. It rounds to whole nanoseconds
// first, so the last bits of a PromQL division (0.01755 computed as a hair
// below or above) never decide the digit shown.
func Duration(s float64) string {
	ns := math.Round(s * 1e9)
	a := math.Abs(ns)
	switch {
	case a >= 1e9:
		return fmt.Sprintf("%.3g s", ns/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.3g ms", ns/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.3g µs", ns/1e3)
	}
	return fmt.Sprintf("%.3g ns", ns)
}

// Milliseconds renders nanoseconds in milliseconds, with two decimals
// below 1 ms, one below 10: 0.45 ms, 2.5 ms, 18 ms.
func Milliseconds(ns float64) string { return fixed(ns/1e6, ns/1e6, 10, 1) + " ms" }

// GoDuration renders nanoseconds as Go prints a time.Duration, rounded to
// a few significant figures: 18ms, 450µs, 1.234s.
func GoDuration(ns float64) string {
	return time.Duration(ns).Round(goRound(ns)).String()
}

func goRound(ns float64) time.Duration {
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

// step: a duration of at least from rounds to a multiple of to.
type step struct{ from, to time.Duration }

// roundSteps rounds d at the first step its magnitude reaches; below
// them all d stays as it is.
func roundSteps(d time.Duration, steps []step) time.Duration {
	a := d.Abs()
	for _, s := range steps {
		if a >= s.from {
			return d.Round(s.to)
		}
	}
	return d
}

// RoundDuration keeps about three significant figures of d, for printing
// with %v in doctor's findings: 17.7ms, 2.7µs.
func RoundDuration(d time.Duration) time.Duration {
	return roundSteps(d, []step{{10 * time.Millisecond, 100 * time.Microsecond}, {time.Millisecond, 10 * time.Microsecond}, {time.Microsecond, 100 * time.Nanosecond}})
}

// RoundDurationBench is RoundDuration's steps as bench's encryption-tax
// line has them (whole microseconds from 10 µs, 10 µs from 1 ms): 123µs,
// 17.65ms.
func RoundDurationBench(d time.Duration) time.Duration {
	return roundSteps(d, []step{{time.Millisecond, 10 * time.Microsecond}, {10 * time.Microsecond, time.Microsecond}, {time.Microsecond, 100 * time.Nanosecond}})
}

// Plural is n and the word for n of it: "1 node", "3 nodes", and a
// consonant's y as "ies" ("2 canaries", "2 keys").
func Plural(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	if l := len(one); l >= 2 && one[l-1] == 'y' && !strings.ContainsRune("aeiou", rune(one[l-2])) {
		return strconv.Itoa(n) + " " + one[:l-1] + "ies"
	}
	return strconv.Itoa(n) + " " + one + "s"
}
