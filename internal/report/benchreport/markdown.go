package benchreport

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/report/table"
	"github.com/slowpath/slowpath/internal/units"
	"github.com/slowpath/slowpath/internal/workload/replay"
)

// WriteMarkdown writes what WriteSummary prints as Markdown, for a pull
// request or a ticket: the same facts, the aligned lines as tables. Text
// from the host (target, devices, thread names, errors) is escaped.
func WriteMarkdown(w io.Writer, r *benchresult.Result) error {
	md := table.MarkdownCell
	fmt.Fprintf(w, "**%s** on %s: %s in %v\n", md(r.Profile), table.Code(r.Parameters.Target), md(r.Status), time.Duration(r.DurationNS).Round(100*time.Millisecond))
	if r.Error != "" {
		fmt.Fprintf(w, "\n%s\n", md(r.Error))
	}
	if t := r.Environment.Target; t != nil && t.Storage != nil {
		fmt.Fprintf(w, "\npath: %s\n", md(pathLine(t.Storage)))
	}
	fmt.Fprintln(w)
	t := table.NewMarkdown(w)
	t.Row("phase", "figure", "value")
	for _, f := range r.Figures {
		if f.Phase != "" {
			t.Row(f.Phase, f.Name, benchresult.FormatValue(f.Value, f.Unit))
		}
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if wt := r.WhereTime; wt != nil {
		fmt.Fprintf(w, "\n**where the time went**: %s\n\n", md(wt.Summary))
		t := table.NewMarkdown(w)
		t.Row("device", "layer", "await", "util", "queue", "reads/s", "read", "writes/s", "written")
		for _, d := range wt.Devices {
			await := "-"
			if d.AwaitNS >= 0 {
				await = benchresult.FormatValue(d.AwaitNS, benchresult.UnitNanoseconds)
			}
			t.Row(d.Device, d.Layer, await, fmt.Sprintf("%.0f%%", d.UtilPercent), fmt.Sprintf("%.2f", d.QueueDepth),
				fmt.Sprintf("%.0f", d.ReadIOPS), units.Size(uint64(d.ReadBytesPerSec))+"/s", fmt.Sprintf("%.0f", d.WriteIOPS), units.Size(uint64(d.WriteBytesPerSec))+"/s")
		}
		if err := t.Flush(); err != nil {
			return err
		}
		if len(wt.Threads) > 0 {
			fmt.Fprintln(w)
			t := table.NewMarkdown(w)
			t.Row("threads", "of a CPU", "count", "busiest")
			for _, g := range wt.Threads {
				var top []string
				for _, c := range g.Top {
					top = append(top, c.Comm)
				}
				t.Row(g.Group, fmt.Sprintf("%.1f%%", g.CPUs*100), strconv.Itoa(g.Threads), strings.Join(top, " "))
			}
			if err := t.Flush(); err != nil {
				return err
			}
		}
	}
	if tax := r.EncryptionTax; tax != nil {
		fmt.Fprintf(w, "\n%s\n", md(tax.Line))
		if tax.Load != nil {
			fmt.Fprintf(w, "\n%s\n", md(tax.Load.Line))
		}
	}
	return writeFidelityMarkdown(w, r.Fidelity)
}

// writeFidelityMarkdown is writeFidelity's Markdown.
func writeFidelityMarkdown(w io.Writer, f *benchresult.Fidelity) error {
	if f == nil {
		return nil
	}
	md := table.MarkdownCell
	fmt.Fprintf(w, "\n**fidelity** (%s replay; block requests on %s, capture vs replay)\n\n", md(f.Mode), table.Code(f.Capture.Device))
	var notes []string
	if f.Replay != nil {
		t := table.NewMarkdown(w)
		t.Row("block requests", "capture", "replay", "change")
		for _, d := range replay.Differences(f.Capture, *f.Replay) {
			name, cv, rv, rel := fidelityRow(d)
			t.Row(name, cv, rv, rel)
		}
		if err := t.Flush(); err != nil {
			return err
		}
		if f.Mode == string(replay.Span) {
			notes = append(notes, spanNote)
		}
	} else {
		notes = append(notes, captureLine(f.Capture))
	}
	if t := f.Timing; t != nil {
		notes = append(notes, timingLine(t))
	}
	for _, k := range slices.Sorted(maps.Keys(f.Skipped)) {
		notes = append(notes, fmt.Sprintf("not replayed: %d %s", f.Skipped[k], k))
	}
	notes = append(notes, f.Problems...)
	if len(notes) > 0 {
		fmt.Fprintln(w)
	}
	for _, n := range notes {
		fmt.Fprintf(w, "- %s\n", md(n))
	}
	return nil
}
