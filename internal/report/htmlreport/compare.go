package htmlreport

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/report/htmlpage"
	"github.com/slowpath/slowpath/internal/stats"
	"github.com/slowpath/slowpath/internal/stdfile"
	"github.com/slowpath/slowpath/internal/units"
)

// maxCDFPoints bounds each CDF series: a run's histogram may hold thousands
// of buckets, and the 2 MB budget for a report of 10+10 runs must hold.
const maxCDFPoints = 240

// WriteCompare renders `slowpath compare --html`.
func WriteCompare(w io.Writer, r *comparison.Result, sides []comparison.Side) error {
	return htmlpage.Render(w, ComparePage(r, sides))
}

// WriteCompareFile writes the page to path through a temporary file in the
// same directory, so a failed render never leaves half a report under the
// requested name (compare, lab crypt and fix --prove --html).
func WriteCompareFile(path string, r *comparison.Result, sides []comparison.Side) error {
	return stdfile.WriteFile(path, func(w io.Writer) error { return WriteCompare(w, r, sides) })
}

// ComparePage lays out a comparison: the table, the latency CDFs per side,
// the per-second timelines, the slow-load scatter, the environment
// differences and each side's storage path.
func ComparePage(r *comparison.Result, sides []comparison.Side) htmlpage.Page {
	var names []string
	for _, s := range r.Sides {
		names = append(names, fmt.Sprintf("%s (%d runs)", s.Name, s.Runs))
	}
	title := "slowpath compare"
	if r.Title != "" {
		title = r.Title
	}
	p := htmlpage.Page{Title: title, Subtitle: strings.Join(names, " vs ")}
	results := setupBlocks(r)
	for _, l := range comparison.Verdicts(r) {
		results = append(results, htmlpage.Block{Text: "Verdict: " + l})
	}
	results = append(results, htmlpage.Block{Table: resultTable(r)})
	for _, l := range comparison.Legend(r) {
		results = append(results, htmlpage.Block{Text: l})
	}
	p.Sections = append(p.Sections, htmlpage.Section{Heading: "Results", Blocks: results})
	if cdfs := cdfBlocks(sides); len(cdfs) > 0 {
		p.Sections = append(p.Sections, htmlpage.Section{Heading: "Latency distributions", Blocks: cdfs})
	}
	if tl := timelineBlocks(sides); len(tl) > 0 {
		p.Sections = append(p.Sections, htmlpage.Section{Heading: "Per-second timelines", Blocks: tl})
	}
	if sc := loadScatter(sides); sc != nil {
		p.Sections = append(p.Sections, htmlpage.Section{Heading: "Index loads", Blocks: sc})
	}
	env := []htmlpage.Block{{Text: "None found."}}
	if len(r.Environment) > 0 {
		t := &htmlpage.Table{Header: append([]string{"fact"}, sideNames(r)...)}
		for _, d := range r.Environment {
			row := []htmlpage.Cell{{Text: d.Key}}
			for _, v := range d.Values {
				row = append(row, htmlpage.Cell{Text: v})
			}
			t.Rows = append(t.Rows, row)
		}
		env = []htmlpage.Block{{Table: t}}
	}
	p.Sections = append(p.Sections, htmlpage.Section{Heading: "Environment differences", Blocks: env})
	p.Sections = append(p.Sections, tailSections(r)...)
	for _, s := range sides {
		if len(s.Storage) == 0 {
			continue
		}
		p.Sections = append(p.Sections, htmlpage.Section{Heading: "Storage path: " + s.Name, Blocks: storageBlocks(s.Storage)})
	}
	return p
}

func sideNames(r *comparison.Result) []string {
	var n []string
	for _, s := range r.Sides {
		n = append(n, s.Name)
	}
	return n
}

func resultTable(r *comparison.Result) *htmlpage.Table {
	t := &htmlpage.Table{Header: []string{"metric"}}
	for i, s := range r.Sides {
		t.Header = append(t.Header, fmt.Sprintf("%s (%d runs)", s.Name, s.Runs))
		if i > 0 {
			t.Header = append(t.Header, "vs "+r.Sides[0].Name)
		}
	}
	for _, row := range r.Rows {
		cells := []htmlpage.Cell{{Text: comparison.RowLabel(row)}}
		for i, c := range row.Cells {
			cells = append(cells, htmlpage.Cell{Text: comparison.FormatCell(c, row.Unit), Class: "num"})
			if i > 0 {
				cls := "num muted"
				switch c.Change {
				case "better":
					cls = "num good"
				case "worse":
					cls = "num bad"
				}
				cells = append(cells, htmlpage.Cell{Text: comparison.FormatDelta(c), Class: cls})
			}
		}
		t.Rows = append(t.Rows, cells)
	}
	return t
}

// merged sums a side's histograms of one latency over its runs.
func merged(s comparison.Side, name string) (stats.Histogram, bool) {
	var hs []stats.Histogram
	for _, run := range s.Runs {
		h, ok := run.Latencies[name]
		if !ok {
			continue
		}
		hs = append(hs, h)
	}
	h := stats.Merge(hs...)
	return h, len(h.Values) > 0
}

// cdfPoints turns a histogram into [latency ms, cumulative %] pairs, keeping
// the tail: points are thinned evenly in the body but every bucket above the
// 99th percentile stays, because the tail is what these reports are about.
func cdfPoints(h stats.Histogram) [][2]float64 {
	total := float64(h.Total())
	var pts [][2]float64
	for _, p := range h.CDF() {
		pts = append(pts, [2]float64{p.Value * 1e3, 100 * float64(p.Cum) / total})
	}
	if len(pts) <= maxCDFPoints {
		return pts
	}
	var out [][2]float64
	step := float64(len(pts)) / float64(maxCDFPoints/2)
	next := 0.0
	for i, pt := range pts {
		if pt[1] >= 99 || float64(i) >= next || i == len(pts)-1 {
			out = append(out, pt)
			if float64(i) >= next {
				next += step
			}
		}
	}
	if len(out) > maxCDFPoints {
		// Even the tail is long: keep every k-th of it, and the last.
		k := (len(out) + maxCDFPoints - 1) / maxCDFPoints
		var thin [][2]float64
		for i, pt := range out {
			if i%k == 0 || i == len(out)-1 {
				thin = append(thin, pt)
			}
		}
		out = thin
	}
	for i := range out {
		out[i][0] = round4(out[i][0])
		out[i][1] = round4(out[i][1])
	}
	return out
}

// round4 keeps 4 significant digits: plenty for a chart, and it keeps the
// JSON (the bulk of a report besides the library) small.
func round4(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	e := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*e) / e
}

// runKeys is the sorted union of the keys that keys gives for every run
// of every side.
func runKeys[V any](sides []comparison.Side, keys func(comparison.Run) map[string]V) []string {
	seen := map[string]bool{}
	var names []string
	for _, s := range sides {
		for _, run := range s.Runs {
			for n := range keys(run) {
				if !seen[n] {
					seen[n] = true
					names = append(names, n)
				}
			}
		}
	}
	sort.Strings(names)
	return names
}

func cdfBlocks(sides []comparison.Side) []htmlpage.Block {
	var out []htmlpage.Block
	for _, name := range runKeys(sides, func(r comparison.Run) map[string]stats.Histogram { return r.Latencies }) {
		var series []any
		for _, s := range sides {
			h, ok := merged(s, name)
			if !ok || h.Total() == 0 {
				continue
			}
			series = append(series, map[string]any{"type": "line", "name": s.Name, "data": cdfPoints(h), "showSymbol": false, "step": "end"})
		}
		if len(series) == 0 {
			continue
		}
		out = append(out, htmlpage.Block{Text: name + " latency, all runs of each side pooled"}, htmlpage.Block{Chart: &htmlpage.Chart{Height: 340, Option: map[string]any{
			"tooltip": map[string]any{"trigger": "axis"},
			"legend":  map[string]any{"top": 0},
			"grid":    map[string]any{"left": 64, "right": 32, "top": 40, "bottom": 48},
			"xAxis":   map[string]any{"type": "log", "name": "latency (ms)", "nameLocation": "middle", "nameGap": 28},
			"yAxis":   map[string]any{"type": "value", "name": "% of I/Os at or below", "min": 0, "max": 100},
			"series":  series,
		}}})
	}
	return out
}

func timelineBlocks(sides []comparison.Side) []htmlpage.Block {
	names := runKeys(sides, func(r comparison.Run) map[string][]comparison.Point { return r.Timeline })
	palette := []string{"#3b78c2", "#d35400", "#1a7f37", "#8e44ad", "#c62828", "#00838f"}
	var out []htmlpage.Block
	for _, name := range names {
		var series []any
		for si, s := range sides {
			for ri, run := range s.Runs {
				pts := run.Timeline[name]
				if len(pts) == 0 {
					continue
				}
				data := make([][2]float64, len(pts))
				for i, p := range pts {
					data[i] = [2]float64{p.T, round4(p.V)}
				}
				label := s.Name
				if run.Label != "" {
					label += " " + run.Label
				} else if len(s.Runs) > 1 {
					label += fmt.Sprintf(" run %d", ri+1)
				}
				series = append(series, map[string]any{
					// Short runs have a few seconds: without symbols a
					// single point would not show at all.
					"type": "line", "name": label, "data": data, "showSymbol": len(data) < 20,
					// One colour per side, so runs of a side read as one band.
					"lineStyle": map[string]any{"width": 1.5, "color": palette[si%len(palette)]},
					"itemStyle": map[string]any{"color": palette[si%len(palette)]},
				})
			}
		}
		if len(series) == 0 {
			continue
		}
		out = append(out, htmlpage.Block{Text: name + " per second, every run"}, htmlpage.Block{Chart: &htmlpage.Chart{Height: 320, Option: map[string]any{
			"tooltip": map[string]any{"trigger": "axis"},
			"legend":  map[string]any{"top": 0, "type": "scroll"},
			"grid":    map[string]any{"left": 72, "right": 32, "top": 40, "bottom": 48},
			"xAxis":   map[string]any{"type": "value", "name": "seconds", "nameLocation": "middle", "nameGap": 28},
			"yAxis":   map[string]any{"type": "value", "name": name},
			"series":  series,
		}}})
	}
	return out
}

// loadScatter is search-index's index loads: when each load happened and how
// long it took, with the slow-load threshold drawn across.
func loadScatter(sides []comparison.Side) []htmlpage.Block {
	var series []any
	threshold := 0.0
	slow := map[string]int{}
	for _, s := range sides {
		var data [][2]float64
		for _, run := range s.Runs {
			for _, l := range run.Loads {
				data = append(data, [2]float64{round4(l.T), round4(l.V * 1e3)})
				if run.SlowLoadThreshold > 0 && l.V > run.SlowLoadThreshold {
					slow[s.Name]++
				}
			}
			threshold = math.Max(threshold, run.SlowLoadThreshold)
		}
		if len(data) > 0 {
			series = append(series, map[string]any{"type": "scatter", "name": s.Name, "data": data, "symbolSize": 6})
		}
	}
	if len(series) == 0 {
		return nil
	}
	if threshold > 0 {
		first := series[0].(map[string]any)
		first["markLine"] = map[string]any{"silent": true, "symbol": "none", "lineStyle": map[string]any{"color": "#c62828", "type": "dashed"},
			"label": map[string]any{"formatter": fmt.Sprintf("slow: %s", units.Format(threshold, units.Seconds))},
			"data":  []any{map[string]any{"yAxis": round4(threshold * 1e3)}}}
	}
	var counts []string
	for _, s := range sides {
		if _, ok := slow[s.Name]; ok || threshold > 0 {
			counts = append(counts, fmt.Sprintf("%s %d slow", s.Name, slow[s.Name]))
		}
	}
	text := "Each index load: when it happened in its run and how long it took."
	if len(counts) > 0 {
		text += " " + strings.Join(counts, ", ") + "."
	}
	return []htmlpage.Block{{Text: text}, {Chart: &htmlpage.Chart{Height: 340, Option: map[string]any{
		"tooltip": map[string]any{"trigger": "item"},
		"legend":  map[string]any{"top": 0},
		"grid":    map[string]any{"left": 64, "right": 32, "top": 40, "bottom": 48},
		"xAxis":   map[string]any{"type": "value", "name": "seconds into the run", "nameLocation": "middle", "nameGap": 28},
		"yAxis":   map[string]any{"type": "log", "name": "load time (ms)"},
		"series":  series,
	}}}}
}
