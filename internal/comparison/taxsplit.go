package comparison

import (
	"fmt"
	"math"
	"slices"

	"github.com/slowpath/slowpath/internal/stats"
	"github.com/slowpath/slowpath/internal/units"
)

// TaxSplit is the encryption tax measured in parts: each step is the
// difference between two sides that differ in one thing (a null cipher
// against AES, the workqueues against their bypass), on one metric, so
// the parts are measured, not modelled. The front end that ran the sides
// names the steps (lab crypt: cryptbench.SplitSteps).
type TaxSplit struct {
	Metric string      `json:"metric"`
	Unit   string      `json:"unit"`
	Better Better      `json:"better"`
	Note   string      `json:"note,omitempty"` // what the sides are, for the heading
	Steps  []SplitStep `json:"steps"`
}

// StepSpec is one step a front end asks for: the part of the tax that the
// change from side From to side To measures.
type StepSpec struct {
	Part, From, To string
}

// SplitStep is one measured part. DeltaPct is To's median against From's;
// P is the U test of their runs, AdjustedP Holm's over the split's steps,
// Verdict the verdict at the comparison's alpha after it, Change "better"
// or "worse" when significant.
type SplitStep struct {
	Part       string        `json:"part"`
	From       string        `json:"from"`
	To         string        `json:"to"`
	FromMedian float64       `json:"from_median"`
	ToMedian   float64       `json:"to_median"`
	DeltaPct   float64       `json:"delta_pct"`
	P          float64       `json:"p"`
	AdjustedP  float64       `json:"p_adjusted"`
	Verdict    stats.Verdict `json:"verdict"`
	Change     string        `json:"change,omitempty"`
}

// Split measures specs on r's row metric: the steps whose two sides both
// ran it, nil when none did.
func Split(r *Result, metric string, specs []StepSpec) *TaxSplit {
	i := slices.IndexFunc(r.Rows, func(row Row) bool { return row.Metric == metric })
	if i < 0 {
		return nil
	}
	row := r.Rows[i]
	side := func(name string) *Cell {
		j := slices.IndexFunc(r.Sides, func(s SideInfo) bool { return s.Name == name })
		if j < 0 || j >= len(row.Cells) || row.Cells[j].N == 0 {
			return nil
		}
		return &row.Cells[j]
	}
	s := &TaxSplit{Metric: metric, Unit: row.Unit, Better: row.Better}
	var ps []float64
	var mins [][2]int // runs of each step's sides
	for _, sp := range specs {
		a, b := side(sp.From), side(sp.To)
		if a == nil || b == nil {
			continue
		}
		c := stats.Compare(a.Values, b.Values, r.Alpha)
		st := SplitStep{Part: sp.Part, From: sp.From, To: sp.To, FromMedian: a.Median, ToMedian: b.Median, P: c.P, Verdict: c.Verdict}
		if a.Median != 0 {
			st.DeltaPct = (b.Median - a.Median) / math.Abs(a.Median) * 100
		}
		s.Steps = append(s.Steps, st)
		ps = append(ps, c.P)
		mins = append(mins, [2]int{len(a.Values), len(b.Values)})
	}
	if len(s.Steps) == 0 {
		return nil
	}
	m := float64(len(ps))
	for k, adj := range stats.Holm(ps) {
		st := &s.Steps[k]
		st.AdjustedP = adj
		switch {
		case st.Verdict == stats.NoData:
		case stats.MinP(mins[k][0], mins[k][1])*m > r.Alpha:
			// No outcome of these runs survives Holm over the steps:
			// say so rather than "no difference" (docs/compare.md).
			st.Verdict = stats.TooFewRuns
		case st.Verdict == stats.Significant && adj > r.Alpha:
			st.Verdict = stats.NoDifference
		}
		if st.Verdict == stats.Significant {
			st.Change = direction(s.Better, st.FromMedian, st.ToMedian)
		}
	}
	return s
}

// Heading is the split's title line.
func (s *TaxSplit) Heading() string {
	h := fmt.Sprintf("Encryption tax in parts (%s, medians; p Holm-adjusted over the steps)", s.Metric)
	if s.Note != "" {
		h += ": " + s.Note
	}
	return h
}

// Columns are the split's table header.
func (s *TaxSplit) Columns() []string {
	return []string{"part", "from → to", "from", "to", "change", "p", "verdict"}
}

// Cells are one step's row.
func (s *TaxSplit) Cells(st SplitStep) []string {
	verdict := st.Verdict.String()
	if st.Change != "" {
		verdict += ", " + st.Change
	}
	return []string{st.Part, st.From + " → " + st.To, units.Format(st.FromMedian, s.Unit), units.Format(st.ToMedian, s.Unit),
		fmt.Sprintf("%+.1f%%", st.DeltaPct), fmt.Sprintf("%.3g", st.AdjustedP), verdict}
}
