// Package verdictreport renders `slowpath fleet verdict`'s report
// (fleetverdict.Report: each node group's canary verdict) as text,
// Markdown and an HTML page.
package verdictreport

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/fleetverdict"
	"github.com/slowpath/slowpath/internal/report/table"
	"github.com/slowpath/slowpath/internal/safetext"
	"github.com/slowpath/slowpath/internal/units"
)

// WriteText prints one block per group: the outcome and why, the windows,
// one row per series and the label changes.
//
//	pool-a (8 nodes, 4 canaries): promote: backlog_drops_per_second significantly better on the canaries, no guard worse
func WriteText(w io.Writer, r *fleetverdict.Report) error {
	fmt.Fprintf(w, "%s: canaries against the other nodes of each %s, %s before and after the change (alpha %g)\n",
		r.Change, r.By, r.Window, r.Alpha)
	for _, g := range r.Groups {
		fmt.Fprintf(w, "\n%s (%s, %s): %s: %s\n", clean(fleetverdict.GroupName(r.By, g.Value)), units.Plural(g.Nodes, "node"), units.Plural(len(g.Canaries), "canary"), g.Outcome, clean(g.Reason))
		fmt.Fprintf(w, "  changed %s; before %s, after %s\n", changed(g), span(g.Before), span(g.After))
		if len(g.Metrics) > 0 {
			t := table.New(w)
			t.Row("  series", "role", "better", "canaries", "others", "canary change", "others' change", "effect", "p", "verdict")
			for _, m := range g.Metrics {
				t.Row("  "+m.Name, m.Role, m.Better, strconv.Itoa(m.Canaries), strconv.Itoa(m.Controls),
					share(m.CanaryChange), share(m.ControlChange), points(m.Effect), pText(m), verdictText(m))
			}
			if err := t.Flush(); err != nil {
				return err
			}
		}
		for _, a := range g.Actions {
			fmt.Fprintf(w, "  %s: %s\n", a.Verb, a.Command)
		}
	}
	if len(r.Unchanged) > 0 {
		names := make([]string, len(r.Unchanged))
		for i, v := range r.Unchanged {
			names[i] = clean(fleetverdict.GroupName(r.By, v))
		}
		fmt.Fprintf(w, "\nno canary in: %s\n", strings.Join(names, ", "))
	}
	return nil
}

// WriteMarkdown is one table row per group and series, for a pull request
// or a change ticket.
func WriteMarkdown(w io.Writer, r *fleetverdict.Report) error {
	fmt.Fprintf(w, "**%s**: canaries against the other nodes of each `%s`, %s before and after the change (alpha %g)\n\n",
		table.MarkdownCell(r.Change), table.MarkdownCell(r.By), r.Window, r.Alpha)
	t := table.NewMarkdown(w)
	t.Row(r.By, "nodes", "canaries", "outcome", "series", "role", "canary change", "others' change", "effect", "p", "verdict")
	for _, g := range r.Groups {
		if len(g.Metrics) == 0 {
			t.Row(fleetverdict.GroupName(r.By, g.Value), strconv.Itoa(g.Nodes), strconv.Itoa(len(g.Canaries)), g.Outcome+": "+g.Reason, "", "", "", "", "", "", "")
		}
		for i, m := range g.Metrics {
			outcome := ""
			if i == 0 {
				outcome = g.Outcome
			}
			t.Row(fleetverdict.GroupName(r.By, g.Value), strconv.Itoa(g.Nodes), strconv.Itoa(len(g.Canaries)), outcome, m.Name, m.Role,
				share(m.CanaryChange), share(m.ControlChange), points(m.Effect), pText(m), verdictText(m))
		}
	}
	if err := t.Flush(); err != nil {
		return err
	}
	for _, g := range r.Groups {
		fmt.Fprintf(w, "\n- **%s**: %s: %s", table.MarkdownCell(fleetverdict.GroupName(r.By, g.Value)), g.Outcome, table.MarkdownCell(g.Reason))
		if len(g.Actions) > 0 {
			fmt.Fprintf(w, " (%d label changes: `%s` ...)", len(g.Actions), strings.ReplaceAll(g.Actions[0].Command, "`", ""))
		}
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// clean replaces what a terminal would act on in text from Prometheus
// labels (escape sequences, line breaks).
func clean(s string) string { return safetext.Clean(s) }

func changed(g fleetverdict.Group) string {
	if g.FirstChange.Equal(g.LastChange) {
		return g.FirstChange.Format(time.RFC3339)
	}
	return g.FirstChange.Format(time.RFC3339) + " to " + g.LastChange.Format(time.RFC3339)
}

func span(s fleetverdict.Span) string {
	return s.From.Format("15:04:05") + "-" + s.To.Format("15:04:05")
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }

// share prints a relative change as a signed percentage; "-" where it is
// not a finite number.
func share(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v*100, 'f', 1, 64) + "%"
}

// points prints a difference of two shares in percentage points.
func points(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v*100, 'f', 1, 64) + " pts"
}

func pText(m fleetverdict.Metric) string {
	// Too few nodes: no arrangement could reach alpha, so no p is shown
	// (the exact distribution with ties can give a meaningless small one).
	if m.AdjustedP == nil || m.Test == "too few runs" || m.Test == "no data" {
		return "-"
	}
	return strconv.FormatFloat(*m.AdjustedP, 'g', 2, 64)
}

func verdictText(m fleetverdict.Metric) string {
	switch {
	case m.Change != "":
		return m.Change
	case m.Test == fleetverdict.NotTested:
		// The fixed sequence stopped before it: its p tests nothing.
		return "not tested: an earlier primary was not significant"
	}
	return m.Test
}
