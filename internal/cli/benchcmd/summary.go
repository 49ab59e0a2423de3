package benchcmd

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jedib0t/go-pretty/v6/table"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
)

// formatValue prints a figure in a human unit.
func formatValue(v float64, unit string) string {
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

// printSummary writes the result's headline: a table on a terminal,
// tab-separated lines when piped.
func printSummary(env *clienv.Env, r *benchresult.Result) {
	w := env.Stdout
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
		rows = append(rows, []string{f.Phase, f.Name, formatValue(f.Value, f.Unit)})
	}
	if env.StdoutTTY {
		tw := table.NewWriter()
		tw.SetOutputMirror(w)
		tw.AppendHeader(table.Row{"phase", "figure", "value"})
		for _, r := range rows {
			tw.AppendRow(table.Row{r[0], r[1], r[2]})
		}
		tw.SetStyle(table.StyleLight)
		tw.Render()
	} else {
		writeTSV(w, append([][]string{{"phase", "figure", "value"}}, rows...))
	}
	if wt := r.WhereTime; wt != nil {
		fmt.Fprintf(w, "where the time went: %s\n", wt.Summary)
		for _, d := range wt.Devices {
			await := "-"
			if d.AwaitNS >= 0 {
				await = formatValue(d.AwaitNS, benchresult.UnitNanoseconds)
			}
			fmt.Fprintf(w, "  %-10s %-10s await %-10s util %3.0f%%  queue %.2f  r %.0f/s %s/s  w %.0f/s %s/s\n", d.Device, d.Layer, await, d.UtilPercent, d.QueueDepth,
				d.ReadIOPS, storagemodel.FormatBytes(uint64(d.ReadBytesPerSec)), d.WriteIOPS, storagemodel.FormatBytes(uint64(d.WriteBytesPerSec)))
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
	}
}

func writeTSV(w io.Writer, rows [][]string) {
	for _, r := range rows {
		fmt.Fprintln(w, strings.Join(r, "\t"))
	}
}

func pathLine(p *storagemodel.Path) string {
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
