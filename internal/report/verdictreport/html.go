package verdictreport

import (
	"fmt"
	"io"
	"math"

	"github.com/slowpath/slowpath/internal/fleetverdict"
	"github.com/slowpath/slowpath/internal/report/htmlpage"
	"github.com/slowpath/slowpath/internal/units"
)

// WriteHTML renders the verdict as one self-contained page: per group the
// outcome, the series' tests, and per series every node's mean before and
// after the change (a chart with a point per node, canaries apart, and the
// same as a table).
func WriteHTML(w io.Writer, r *fleetverdict.Report) error {
	p := htmlpage.Page{
		Title:    "slowpath fleet verdict: " + r.Change,
		Subtitle: fmt.Sprintf("canaries against the other nodes of each %s, %s before and after the change, alpha %g, evaluated %s", r.By, r.Window, r.Alpha, r.EvaluatedAt.Format("2006-01-02 15:04:05 MST")),
	}
	for _, g := range r.Groups {
		class := "muted"
		switch g.Outcome {
		case "promote":
			class = "good"
		case "roll back":
			class = "bad"
		}
		s := htmlpage.Section{Heading: fmt.Sprintf("%s: %s", fleetverdict.GroupName(r.By, g.Value), g.Outcome)}
		item := htmlpage.Item{Title: g.Outcome + ": " + g.Reason, Class: class,
			Lines: []string{fmt.Sprintf("%s, %s; changed %s; before %s, after %s", units.Plural(g.Nodes, "node"), units.Plural(len(g.Canaries), "canary"), changed(g), span(g.Before), span(g.After))}}
		for _, a := range g.Actions {
			item.Code = append(item.Code, a.Command)
		}
		s.Blocks = append(s.Blocks, htmlpage.Block{Items: []htmlpage.Item{item}})
		if len(g.Metrics) > 0 {
			t := &htmlpage.Table{Header: []string{"series", "role", "better", "canaries", "others", "canary change", "others' change", "effect", "p", "verdict"}}
			for _, m := range g.Metrics {
				vc := ""
				switch m.Change {
				case "better":
					vc = "good"
				case "worse":
					vc = "bad"
				}
				t.Rows = append(t.Rows, []htmlpage.Cell{{Text: m.Name}, {Text: m.Role}, {Text: m.Better},
					{Text: fmt.Sprint(m.Canaries), Class: "num"}, {Text: fmt.Sprint(m.Controls), Class: "num"},
					{Text: share(m.CanaryChange), Class: "num"}, {Text: share(m.ControlChange), Class: "num"}, {Text: points(m.Effect), Class: "num"},
					{Text: pText(m), Class: "num"}, {Text: verdictText(m), Class: vc}})
			}
			s.Blocks = append(s.Blocks, htmlpage.Block{Table: t})
		}
		for _, m := range g.Metrics {
			s.Blocks = append(s.Blocks, nodeBlocks(m)...)
		}
		p.Sections = append(p.Sections, s)
	}
	return htmlpage.Render(w, p)
}

// nodeBlocks are one series' per-node means: a point per node at (before,
// after), so a node on the diagonal did not change, and the table.
func nodeBlocks(m fleetverdict.Metric) []htmlpage.Block {
	var canaries, others [][]any
	t := &htmlpage.Table{Header: []string{"node", "", "before", "after", "change"}}
	for _, n := range m.Nodes {
		role := "other"
		if n.Canary {
			role = "canary"
		}
		row := []htmlpage.Cell{{Text: n.Name}, {Text: role, Class: "muted"}, {Text: opt(n.Before), Class: "num"}, {Text: opt(n.After), Class: "num"}, {Text: "-", Class: "num"}}
		if n.Before != nil && n.After != nil {
			row[4].Text = num(*n.After - *n.Before)
			if *n.Before != 0 {
				row[4].Text += " (" + share(ptr((*n.After-*n.Before)/math.Abs(*n.Before))) + ")"
			}
			pt := []any{*n.Before, *n.After, n.Name}
			if n.Canary {
				canaries = append(canaries, pt)
			} else {
				others = append(others, pt)
			}
		}
		t.Rows = append(t.Rows, row)
	}
	scatter := func(name string, data [][]any) map[string]any {
		return map[string]any{"name": name, "type": "scatter", "data": data, "symbolSize": 10}
	}
	return []htmlpage.Block{
		{Text: m.Name + " (" + m.Better + " is better): each node's mean before the change against after it; the diagonal is no change."},
		{Chart: &htmlpage.Chart{Height: 320, Option: map[string]any{
			"tooltip": map[string]any{"trigger": "item"},
			"legend":  map[string]any{"top": 0},
			"grid":    map[string]any{"left": 64, "right": 32, "top": 40, "bottom": 48},
			"xAxis":   map[string]any{"type": "value", "name": "before", "nameLocation": "middle", "nameGap": 28, "scale": true},
			"yAxis":   map[string]any{"type": "value", "name": "after", "scale": true},
			"series":  []any{scatter("canaries", canaries), scatter("others", others)},
		}}},
		{Table: t},
	}
}

func opt(v *float64) string {
	if v == nil {
		return "-"
	}
	return num(*v)
}

func ptr(v float64) *float64 { return &v }
