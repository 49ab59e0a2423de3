// Package benchreport renders a bench result (internal/benchresult): the
// summary bench prints after a run, and the README of the reproduction
// `bench export` writes. The result file itself is the JSON.
package benchreport

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/pathrecord"
	"github.com/slowpath/slowpath/internal/report/table"
	"github.com/slowpath/slowpath/internal/units"
	"github.com/slowpath/slowpath/internal/workload/replay"
)

// SummaryOptions shape WriteSummary.
type SummaryOptions struct {
	// Tabs writes the figures as tab-separated rows without padding, for
	// output that is piped rather than read on a terminal.
	Tabs bool
}

// WriteSummary writes the result's headline: the profile, target and
// status, the storage path, the figures of every phase as a table, where
// the time went, the encryption tax and a replay's fidelity.
func WriteSummary(w io.Writer, r *benchresult.Result, o SummaryOptions) error {
	fmt.Fprintf(w, "%s on %s: %s in %v\n", r.Profile, r.Parameters.Target, r.Status, time.Duration(r.DurationNS).Round(100*time.Millisecond))
	if r.Error != "" {
		fmt.Fprintf(w, "  %s\n", r.Error)
	}
	if t := r.Environment.Target; t != nil && t.Storage != nil {
		fmt.Fprintf(w, "path: %s\n", pathLine(t.Storage))
	}
	rows := [][]string{}
	for _, f := range r.Figures {
		if f.Phase == "" {
			continue // where the time went: below
		}
		rows = append(rows, []string{f.Phase, f.Name, benchresult.FormatValue(f.Value, f.Unit)})
	}
	tw := table.New(w)
	if o.Tabs {
		tw = table.NewTSV(w)
	}
	tw.Row("phase", "figure", "value")
	for _, r := range rows {
		tw.Row(r...)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if wt := r.WhereTime; wt != nil {
		fmt.Fprintf(w, "where the time went: %s\n", wt.Summary)
		for _, d := range wt.Devices {
			await := "-"
			if d.AwaitNS >= 0 {
				await = benchresult.FormatValue(d.AwaitNS, benchresult.UnitNanoseconds)
			}
			fmt.Fprintf(w, "  %-10s %-10s await %-10s util %3.0f%%  queue %.2f  r %.0f/s %s/s  w %.0f/s %s/s\n", d.Device, d.Layer, await, d.UtilPercent, d.QueueDepth,
				d.ReadIOPS, units.Size(uint64(d.ReadBytesPerSec)), d.WriteIOPS, units.Size(uint64(d.WriteBytesPerSec)))
		}
		for _, g := range wt.Threads {
			var top []string
			for _, t := range g.Top {
				top = append(top, t.Comm)
			}
			fmt.Fprintf(w, "  %-14s %5.1f%% of a CPU  %d threads  %s\n", g.Group, g.CPUs*100, g.Threads, strings.Join(top, " "))
		}
	}
	if t := r.EncryptionTax; t != nil {
		fmt.Fprintln(w, t.Line)
		if t.Load != nil {
			fmt.Fprintln(w, t.Load.Line)
		}
	}
	writeFidelity(w, r.Fidelity)
	return nil
}

// writeFidelity shows a replay's block trace against its capture's.
func writeFidelity(w io.Writer, f *benchresult.Fidelity) {
	if f == nil {
		return
	}
	fmt.Fprintf(w, "fidelity (%s replay; block requests on %s, capture vs replay):\n", f.Mode, f.Capture.Device)
	if f.Replay != nil {
		for _, d := range replay.Differences(f.Capture, *f.Replay) {
			name, cv, rv, rel := fidelityRow(d)
			fmt.Fprintf(w, "  %-22s %14s %14s %8s\n", name, cv, rv, rel)
		}
		if f.Mode == string(replay.Span) {
			fmt.Fprintf(w, "  (%s)\n", spanNote)
		}
	} else {
		fmt.Fprintf(w, "  %s\n", captureLine(f.Capture))
	}
	if t := f.Timing; t != nil {
		fmt.Fprintf(w, "  %s\n", timingLine(t))
	}
	for _, k := range slices.Sorted(maps.Keys(f.Skipped)) {
		fmt.Fprintf(w, "  not replayed: %d %s\n", f.Skipped[k], k)
	}
	for _, p := range f.Problems {
		fmt.Fprintf(w, "  %s\n", p)
	}
}

// spanNote says what a span replay's figures are.
const spanNote = "a span replay repeats the threads busy at the capture's end for as long as they were busy: its counts and shares are its own, the mix following the replay's speed as the service's would"

// fidelityRow is one figure of the capture against the replay: its name,
// both values and the change.
func fidelityRow(d replay.Difference) (name, capture, replayed, change string) {
	change = "-"
	if !math.IsNaN(d.Relative) {
		change = fmt.Sprintf("%+.1f%%", d.Relative*100)
	}
	capture, replayed = benchresult.FormatValue(d.Capture, d.Unit), benchresult.FormatValue(d.Replay, d.Unit)
	if d.Unit == benchresult.UnitFraction {
		capture, replayed = fmt.Sprintf("%.3f", d.Capture), fmt.Sprintf("%.3f", d.Replay)
	}
	return d.Name, capture, replayed, change
}

// captureLine is the capture's block requests, for a replay without its own.
func captureLine(c benchresult.BlockTrace) string {
	return fmt.Sprintf("capture: %d requests, %s, %d reads / %d writes / %d flushes, %.0f IOPS, p50 %s p99 %s", c.IOs, units.Size(c.Bytes),
		c.ReadIOs, c.WriteIOs, c.FlushIOs, c.IOPS, benchresult.FormatValue(float64(c.P50NS), benchresult.UnitNanoseconds), benchresult.FormatValue(float64(c.P99NS), benchresult.UnitNanoseconds))
}

// timingLine is how late the replay issued its operations.
func timingLine(t *benchresult.ReplayTiming) string {
	return fmt.Sprintf("schedule: %d operations issued late by p50 %s, p99 %s, max %s", t.Ops, benchresult.FormatValue(float64(t.LateP50NS), benchresult.UnitNanoseconds),
		benchresult.FormatValue(float64(t.LateP99NS), benchresult.UnitNanoseconds), benchresult.FormatValue(float64(t.LateMaxNS), benchresult.UnitNanoseconds))
}

// pathLine is a storage path's layers, top first: "filesystem ext4 →
// dm-crypt dm-0 → disk nvme1n1".
func pathLine(p *pathrecord.Path) string {
	var parts []string
	for _, l := range p.Layers {
		s := l.Kind
		if l.Device != "" {
			s += " " + l.Device
		} else if l.FSType != "" {
			s += " " + l.FSType
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " → ")
}
