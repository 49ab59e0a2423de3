package htmlreport

import (
	"fmt"
	"io"
	"strconv"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/netmodel"
	"github.com/slowpath/slowpath/internal/report/htmlpage"
)

func itoa(i int) string { return strconv.Itoa(i) }

// WriteDoctor renders `slowpath doctor --format html`.
func WriteDoctor(w io.Writer, r *analyze.Report) error {
	return htmlpage.Render(w, DoctorPage(r))
}

// DoctorPage lays out the doctor report: the storage data paths as diagrams,
// the network drop rates by layer, the findings with evidence and fixes.
func DoctorPage(r *analyze.Report) htmlpage.Page {
	sub := ""
	if r.Kernel != "" {
		sub = "kernel " + r.Kernel
	}
	if r.Cloud != "" {
		if sub != "" {
			sub += " — "
		}
		sub += r.Cloud
	}
	p := htmlpage.Page{Title: "slowpath doctor", Subtitle: sub}
	p.Sections = append(p.Sections,
		htmlpage.Section{Heading: "Findings", Blocks: findingBlocks(r.Findings)},
		htmlpage.Section{Heading: "Storage data paths", Blocks: storageBlocks(r.Storage)},
	)
	if r.Network != nil {
		p.Sections = append(p.Sections, htmlpage.Section{Heading: "Network drops by layer", Blocks: networkBlocks(r.Network)})
	}
	if len(r.NotCollected) > 0 {
		var items []htmlpage.Item
		for _, e := range r.NotCollected {
			items = append(items, htmlpage.Item{Title: e.Collector, Class: "muted", Lines: []string{fmt.Sprintf("%s: %s (%s)", e.Path, e.Message, e.Kind)}})
		}
		p.Sections = append(p.Sections, htmlpage.Section{Heading: "Not collected", Blocks: []htmlpage.Block{{Items: items}}})
	}
	return p
}

func findingBlocks(fs []check.Finding) []htmlpage.Block {
	var items []htmlpage.Item
	for _, f := range fs {
		title := fmt.Sprintf("%s %s — %s", f.Severity, f.ID, f.Subject)
		if f.Status != check.Fail {
			title = fmt.Sprintf("%s %s (%s) — %s", f.Severity, f.ID, f.Status, f.Subject)
		}
		it := htmlpage.Item{Title: title, Class: f.Severity.String(), Lines: []string{f.Summary}}
		for _, e := range f.Evidence {
			ev := "evidence: " + e.Source
			if e.Key != "" {
				ev += " " + e.Key
			}
			ev += ": " + e.Observed
			if e.Expected != "" {
				ev += " (expected " + e.Expected + ")"
			}
			it.Lines = append(it.Lines, ev)
		}
		if f.Remediation != "" {
			it.Code = append(it.Code, f.Remediation)
		}
		for _, ref := range f.References {
			it.Lines = append(it.Lines, "source: "+ref)
		}
		items = append(items, it)
	}
	if len(items) == 0 {
		return []htmlpage.Block{{Text: "No findings."}}
	}
	return []htmlpage.Block{{Items: items}}
}

// networkBlocks charts drops per layer: rates when doctor sampled twice,
// totals since boot otherwise (and says which).
func networkBlocks(m *netmodel.Model) []htmlpage.Block {
	rates := m.IntervalSeconds > 0
	var layers []string
	var values []float64
	t := &htmlpage.Table{Header: []string{"layer", "per second", "total since boot"}}
	for _, s := range m.Summary {
		layers = append(layers, string(s.Layer))
		rate := "-"
		v := float64(s.Total)
		if s.PerSecond != nil {
			rate = strconv.FormatFloat(*s.PerSecond, 'f', 1, 64)
			v = *s.PerSecond
		}
		values = append(values, v)
		cls := ""
		if v > 0 {
			cls = "bad"
		}
		t.Rows = append(t.Rows, []htmlpage.Cell{{Text: string(s.Layer)}, {Text: rate, Class: "num " + cls}, {Text: strconv.FormatUint(s.Total, 10), Class: "num"}})
	}
	what := "drops per second over " + strconv.FormatFloat(m.IntervalSeconds, 'f', 1, 64) + " s"
	if !rates {
		what = "drops since boot (rates unknown: " + m.RatesUnknown + ")"
	}
	out := []htmlpage.Block{{Text: what}, {Chart: &htmlpage.Chart{Height: 300, Option: map[string]any{
		"tooltip": map[string]any{"trigger": "axis"},
		"grid":    map[string]any{"left": 80, "right": 24, "top": 24, "bottom": 40},
		"xAxis":   map[string]any{"type": "category", "data": layers},
		"yAxis":   map[string]any{"type": "value", "name": map[bool]string{true: "drops/s", false: "drops"}[rates]},
		"series":  []any{map[string]any{"type": "bar", "data": values, "itemStyle": map[string]any{"color": "#c62828"}, "label": map[string]any{"show": true, "position": "top"}}},
	}}}, {Table: t}}
	if top, ok := netmodel.Top(m.Counters); ok {
		out = append(out, htmlpage.Block{Text: fmt.Sprintf("Top offender: %s %s on %s, %.1f/s.", top.Layer, top.Counter, top.Subject, *top.PerSecond)})
	}
	return out
}
