package profile

import "github.com/slowpath/slowpath/internal/benchresult"

// figures collects a run's figures; each profile's Figures fills one.
type figures []benchresult.Figure

func (f *figures) add(phase, name string, v float64, unit, better string) {
	*f = append(*f, benchresult.Figure{Name: name, Phase: phase, Value: v, Unit: unit, Better: better})
}

// addPct adds percentile p of s's latency, when s has it.
func (f *figures) addPct(phase, name string, s *benchresult.Stream, p float64) {
	if v, ok := pct(s, p); ok {
		f.add(phase, name, v, benchresult.UnitNanoseconds, benchresult.LowerIsBetter)
	}
}

func pct(s *benchresult.Stream, p float64) (float64, bool) {
	if s == nil || s.Latency == nil {
		return 0, false
	}
	for _, q := range s.Latency.Percentiles {
		if q.P == p {
			return float64(q.ValueNS), true
		}
	}
	if s.Latency.Histogram != nil {
		v, ok := s.Latency.Histogram.Percentile(p)
		return float64(v), ok
	}
	return 0, false
}

// find returns ph's stream of job name and op, nil when there is none.
func find(ph benchresult.Phase, name, op string) *benchresult.Stream {
	for i := range ph.Streams {
		if ph.Streams[i].Name == name && ph.Streams[i].Op == op {
			return &ph.Streams[i]
		}
	}
	return nil
}

// jobFigures are the figures of a job file's run (fio:FILE, the lab jobs,
// replays): every read and write group by its name, then the totals.
func jobFigures(phases []benchresult.Phase) []benchresult.Figure {
	var f figures
	for _, ph := range phases {
		for _, s := range ph.Streams {
			if s.Op != "read" && s.Op != "write" {
				continue
			}
			p := s.Name
			f.add(p, s.Op+"_iops", s.OpsPerSec, benchresult.UnitIOPS, benchresult.HigherIsBetter)
			f.add(p, s.Op+"_bytes_per_sec", s.BytesPerSec, benchresult.UnitBytesPerSec, benchresult.HigherIsBetter)
			f.addPct(p, s.Op+"_p99", &s, 99)
		}
	}
	return append(f, fioTotals(phases)...)
}

// totalMetrics are the declared metrics of a job file (fioTotals).
var totalMetrics = Metrics{Primary: []Metric{{Figure: "total_iops"}, {Figure: "total_p99"}}, Guards: []Metric{{Figure: "total_p999"}, {Figure: CPUPerIO}}}

// fioTotals are a job file's declared primary and guard figures (MetricsOf):
// IOPS summed over every read and write stream, and the p99 and p99.9 of
// all their I/Os merged. They carry no phase, so their row names do not
// depend on the job file's group names.
func fioTotals(phases []benchresult.Phase) []benchresult.Figure {
	var iops float64
	var hs []*benchresult.Histogram
	n := 0
	for _, ph := range phases {
		for _, s := range ph.Streams {
			if s.Op != "read" && s.Op != "write" {
				continue
			}
			n++
			iops += s.OpsPerSec
			if s.Latency != nil && s.Latency.Histogram != nil {
				hs = append(hs, s.Latency.Histogram)
			}
		}
	}
	if n == 0 {
		return nil
	}
	out := []benchresult.Figure{{Name: "total_iops", Value: iops, Unit: benchresult.UnitIOPS, Better: benchresult.HigherIsBetter}}
	if len(hs) == n {
		h := benchresult.Merge(hs...)
		for _, q := range []struct {
			name string
			p    float64
		}{{"total_p99", 99}, {"total_p999", 99.9}} {
			if v, ok := h.Percentile(q.p); ok {
				out = append(out, benchresult.Figure{Name: q.name, Value: float64(v), Unit: benchresult.UnitNanoseconds, Better: benchresult.LowerIsBetter})
			}
		}
	}
	return out
}
