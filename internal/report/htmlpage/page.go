// Package htmlpage is the page every HTML report is: one file with the
// chart library (Apache ECharts, vendored under third_party/echarts and
// embedded with go:embed), the data and the styles inline, so a report opens
// offline and makes no network request. A Content-Security-Policy in the page
// forbids any fetch, so a regression fails loudly in the browser instead of
// leaking a request.
package htmlpage

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"sync"
)

//go:embed third_party/echarts/echarts.min.js
var echartsJS string

// EChartsVersion is the vendored library's version (third_party/echarts/README.md).
const EChartsVersion = "5.6.0"

// Page is one report.
type Page struct {
	Title    string
	Subtitle string
	Sections []Section
}

// Section is a heading followed by blocks in order.
type Section struct {
	Heading string
	Blocks  []Block
}

// Block is one piece of a section; exactly one field is set.
type Block struct {
	Text  string
	Table *Table
	Chart *Chart
	Items []Item
}

// Table is a plain HTML table.
type Table struct {
	Caption string
	Header  []string
	Rows    [][]Cell
}

// Cell is one table cell; Class is one of the page's styles (good, bad,
// muted, enc, num) or empty.
type Cell struct {
	Text  string
	Class string
}

// Item is an entry of a list such as a finding: a title, a style and lines
// of detail (Code lines are shown as commands).
type Item struct {
	Title string
	Class string
	Lines []string
	Code  []string
}

// Chart is an ECharts option (marshalled to JSON as is) drawn in a box of
// Height pixels. Animation is switched off at render so the first paint
// already shows the data.
type Chart struct {
	Height int
	Option any
}

// Render writes p as one self-contained HTML document.
func Render(w io.Writer, p Page) error {
	type chartRef struct {
		ID     string
		Height int
	}
	type block struct {
		Block
		Chart *chartRef
	}
	type section struct {
		Heading string
		Blocks  []block
	}
	var options []json.RawMessage
	var sections []section
	for _, s := range p.Sections {
		out := section{Heading: s.Heading}
		for _, b := range s.Blocks {
			ob := block{Block: b}
			if b.Chart != nil {
				// encoding/json escapes <, > and &, so the JSON cannot end
				// the script element it is embedded in.
				raw, err := json.Marshal(b.Chart.Option)
				if err != nil {
					return fmt.Errorf("chart %d of %q: %w", len(options), s.Heading, err)
				}
				h := b.Chart.Height
				if h <= 0 {
					h = 360
				}
				ob.Chart = &chartRef{ID: fmt.Sprintf("chart-%d", len(options)), Height: h}
				options = append(options, raw)
			}
			out.Blocks = append(out.Blocks, ob)
		}
		sections = append(sections, out)
	}
	allOptions, err := json.Marshal(options)
	if err != nil {
		return err
	}
	return pageTemplate().Execute(w, map[string]any{
		"Title":    p.Title,
		"Subtitle": p.Subtitle,
		"Sections": sections,
		// The vendored file holds no "</script" (checked by a test), so it
		// can sit inside a script element unescaped.
		"ECharts": template.JS(echartsJS),
		"Options": template.JS(allOptions),
	})
}

// Parsed on first use: only the HTML reports need it, not every command's
// package init.
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1180px;padding:16px 24px;color:#1d232a;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d8dde3;padding-bottom:4px}
.sub{color:#5b6670;margin:0 0 12px}
table{border-collapse:collapse;margin:8px 0;font-variant-numeric:tabular-nums}
th,td{border:1px solid #d8dde3;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f3f5f7}
caption{text-align:left;color:#5b6670;padding:4px 0}
.num{text-align:right}.good{color:#1a7f37}.bad{color:#c62828;font-weight:600}.muted{color:#77818b}.enc{color:#b35c00;font-weight:600}
.chart{width:100%;margin:8px 0}
ul.items{list-style:none;padding:0}ul.items li{border-left:4px solid #d8dde3;padding:4px 10px;margin:8px 0}
ul.items li.critical,ul.items li.bad{border-color:#c62828}ul.items li.warning{border-color:#e08a00}ul.items li.info{border-color:#3b78c2}
.items .t{font-weight:600}.items div{margin:2px 0}code{background:#f3f5f7;padding:1px 4px;display:inline-block}
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{if .Subtitle}}<p class="sub">{{.Subtitle}}</p>{{end}}
{{range .Sections}}<section>
{{if .Heading}}<h2>{{.Heading}}</h2>{{end}}
{{range .Blocks}}{{if .Text}}<p>{{.Text}}</p>
{{end}}{{with .Table}}<table>{{if .Caption}}<caption>{{.Caption}}</caption>{{end}}
<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}<tr>{{range .}}<td{{if .Class}} class="{{.Class}}"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</tbody></table>
{{end}}{{with .Chart}}<div class="chart" id="{{.ID}}" style="height:{{.Height}}px"></div>
{{end}}{{with .Items}}<ul class="items">{{range .}}<li{{if .Class}} class="{{.Class}}"{{end}}><div class="t">{{.Title}}</div>{{range .Lines}}<div>{{.}}</div>{{end}}{{range .Code}}<div><code>{{.}}</code></div>{{end}}</li>
{{end}}</ul>
{{end}}{{end}}</section>
{{end}}
<script>{{.ECharts}}</script>
<script>
(function(){
  var options = {{.Options}};
  var drawn = 0;
  for (var i = 0; i < options.length; i++) {
    var el = document.getElementById("chart-" + i);
    try {
      var o = options[i];
      o.animation = false;
      echarts.init(el, null, {renderer: "canvas"}).setOption(o);
      drawn++;
    } catch (e) {
      console.error("chart " + i + ": " + e);
    }
  }
  window.slowpathCharts = {total: options.length, drawn: drawn};
  window.addEventListener("resize", function(){
    for (var i = 0; i < options.length; i++) {
      var c = echarts.getInstanceByDom(document.getElementById("chart-" + i));
      if (c) c.resize();
    }
  });
})();
</script>
</body>
</html>
`))
})

// ElideLibrary replaces the embedded chart library in a rendered page with
// a comment naming its version, so a golden file of a report holds what
// slowpath wrote (about 1 MB less) and survives a library update.
func ElideLibrary(page []byte) []byte {
	return bytes.Replace(page, []byte(echartsJS), []byte("/* echarts "+EChartsVersion+" */"), 1)
}
