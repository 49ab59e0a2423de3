package agent

import (
	"bufio"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// desc is a metric family's descriptor: client_golang's, for Collect, and
// what the text writer needs, which a prometheus.Desc does not expose.
type desc struct {
	// pd is client_golang's descriptor, made on first use (prom): only
	// Describe and Collect need it, and making 30 of them in package
	// init cost every command, not only the agent, a hundred allocations.
	pdOnce     sync.Once
	pd         *prometheus.Desc
	name, help string
	labels     []string
	// order is the label indices sorted by label name: the order of the
	// label pairs in the exposition and of the series' sort key, as
	// client_golang's const metrics have them.
	order []int
	// id indexes the family in a sink.
	id int
}

// descs are every desc made, by id.
var descs []*desc

func newDesc(name, help string, labels []string) *desc {
	d := &desc{name: name, help: help, labels: labels, id: len(descs)}
	d.order = make([]int, len(labels))
	for i := range d.order {
		d.order[i] = i
	}
	slices.SortStableFunc(d.order, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	descs = append(descs, d)
	return d
}

// prom is d's client_golang descriptor.
func (d *desc) prom() *prometheus.Desc {
	d.pdOnce.Do(func() { d.pd = prometheus.NewDesc(d.name, d.help, d.labels, nil) })
	return d.pd
}

// sink receives the series of a scrape: as const metrics on ch (Collect),
// or, when ch is nil, kept by family for writeText (Handler), without a
// metric object or label pairs per series.
type sink struct {
	ch   chan<- prometheus.Metric
	fams []*family // by desc id
	// hint is the series per family of the last scrape, by desc id: a
	// family's first add makes room for as many.
	hint []int
}

// family is the series of one desc: values and, len(labels) per series,
// label values in the desc's label order.
type family struct {
	d    *desc
	typ  prometheus.ValueType
	vals []float64
	lvs  []string
	// text, when set, is the family written already (topology.rendered).
	text []byte
}

func newTextSink(hint []int) *sink {
	if len(hint) != len(descs) {
		hint = nil
	}
	return &sink{fams: make([]*family, len(descs)), hint: hint}
}

// counts are the series per family, by desc id: the next scrape's hint.
func (s *sink) counts() []int {
	out := make([]int, len(s.fams))
	for i, f := range s.fams {
		if f != nil {
			out[i] = len(f.vals)
		}
	}
	return out
}

// add sends or keeps one series. Wrong label counts panic, as
// prometheus.MustNewConstMetric does.
func (s *sink) add(d *desc, t prometheus.ValueType, v float64, lvs ...string) {
	if s.ch != nil {
		s.ch <- prometheus.MustNewConstMetric(d.prom(), t, v, slices.Clone(lvs)...)
		return
	}
	if len(lvs) != len(d.labels) {
		panic("agent: " + d.name + ": " + strconv.Itoa(len(lvs)) + " label values for " + strconv.Itoa(len(d.labels)) + " labels")
	}
	f := s.fams[d.id]
	if f == nil {
		f = &family{d: d, typ: t}
		if s.hint != nil && s.hint[d.id] > 0 {
			f.vals = make([]float64, 0, s.hint[d.id])
			f.lvs = make([]string, 0, s.hint[d.id]*len(d.labels))
		}
		s.fams[d.id] = f
	}
	f.vals = append(f.vals, v)
	f.lvs = append(f.lvs, lvs...)
}

// families are the families with series, sorted by name.
func (s *sink) families() []*family {
	out := make([]*family, 0, len(s.fams))
	for _, f := range s.fams {
		if f != nil && (len(f.vals) > 0 || len(f.text) > 0) {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b *family) int { return strings.Compare(a.d.name, b.d.name) })
	return out
}

// writeText writes f in the Prometheus text format (version 0.0.4) as
// expfmt.MetricFamilyToText writes the const metrics Collect makes: HELP
// and TYPE, then the series sorted by their label values in label-name
// order (client_golang's order), label pairs by name. A series whose label
// values repeat an earlier one's is left out (a registry would refuse the
// scrape); label values that are not UTF-8 have U+FFFD for the bad bytes
// (MustNewConstMetric would panic).
func (f *family) writeText(w *bufio.Writer) error {
	if f.text != nil {
		_, err := w.Write(f.text)
		return err
	}
	d := f.d
	w.WriteString("# HELP ")
	w.WriteString(d.name)
	w.WriteByte(' ')
	writeEscaped(w, d.help, false)
	w.WriteString("\n# TYPE ")
	w.WriteString(d.name)
	switch f.typ {
	case prometheus.CounterValue:
		w.WriteString(" counter\n")
	case prometheus.GaugeValue:
		w.WriteString(" gauge\n")
	default:
		w.WriteString(" untyped\n")
	}
	k := len(d.labels)
	n := len(f.vals)
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(i)
	}
	cmp := func(a, b int32) int {
		for _, o := range d.order {
			if c := strings.Compare(f.lvs[int(a)*k+o], f.lvs[int(b)*k+o]); c != 0 {
				return c
			}
		}
		return 0
	}
	if k > 0 {
		slices.SortFunc(idx, cmp)
	}
	var num [32]byte
	for j, i := range idx {
		if j > 0 && cmp(idx[j-1], i) == 0 {
			continue
		}
		w.WriteString(d.name)
		if k > 0 {
			w.WriteByte('{')
			for p, o := range d.order {
				if p > 0 {
					w.WriteByte(',')
				}
				w.WriteString(d.labels[o])
				w.WriteString(`="`)
				writeEscaped(w, f.lvs[int(i)*k+o], true)
				w.WriteByte('"')
			}
			w.WriteByte('}')
		}
		w.WriteByte(' ')
		w.Write(appendFloat(num[:0], f.vals[i]))
		if _, err := w.WriteString("\n"); err != nil {
			return err
		}
	}
	return nil
}

// writeEscaped writes v escaped as the text format wants: backslash and
// newline in HELP, those and the double quote in label values.
func writeEscaped(w *bufio.Writer, v string, quote bool) {
	if !utf8.ValidString(v) {
		v = strings.ToValidUTF8(v, "\uFFFD")
	}
	start := 0
	for i := 0; i < len(v); i++ {
		var esc string
		switch c := v[i]; {
		case c == '\\':
			esc = `\\`
		case c == '\n':
			esc = `\n`
		case c == '"' && quote:
			esc = `\"`
		default:
			continue
		}
		w.WriteString(v[start:i])
		w.WriteString(esc)
		start = i + 1
	}
	w.WriteString(v[start:])
}

// appendFloat formats a sample value as expfmt does.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case f == 1:
		return append(b, '1')
	case f == 0:
		return append(b, '0')
	case f == -1:
		return append(b, "-1"...)
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
