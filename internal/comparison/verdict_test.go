package comparison

import (
	"slices"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/stats"
	"github.com/slowpath/slowpath/internal/units"
)

// sideOf makes a side whose runs carry the given values per metric
// (every metric lower-is-better seconds unless named "...ops").
func sideOf(name string, vals map[string][]float64) Side {
	n := 0
	for _, v := range vals {
		n = max(n, len(v))
	}
	s := Side{Name: name}
	for i := range n {
		run := Run{Metrics: map[string]Measure{}}
		for m, v := range vals {
			if i >= len(v) {
				continue
			}
			b, u := LowerIsBetter, units.Seconds
			if strings.HasSuffix(m, "ops") {
				b, u = HigherIsBetter, units.OpsPerSec
			}
			run.Metrics[m] = Measure{Unit: u, Better: b, Value: v[i]}
		}
		s.Runs = append(s.Runs, run)
	}
	return s
}

// Five runs per side entirely separated give p = 2/C(10,5) = 0.0079.
var (
	low  = []float64{1, 2, 3, 4, 5}
	high = []float64{11, 12, 13, 14, 15}
	mid  = []float64{2.5, 3.5, 1.5, 4.5, 0.5} // interleaves low: p = 1
)

func rowOf(t *testing.T, r *Result, m string) Row {
	t.Helper()
	for _, row := range r.Rows {
		if row.Metric == m {
			return row
		}
	}
	t.Fatalf("no row %q", m)
	return Row{}
}

func TestPrimaryVerdict(t *testing.T) {
	for _, tc := range []struct {
		name      string
		a, b      map[string][]float64
		outcome   string
		decided   []string
		guards    []string
		proven    bool
		secondary stats.Verdict // of "other"
	}{
		{name: "both primaries better",
			a:       map[string][]float64{"lat": high, "commit ops": low, "tail": low, "other": low},
			b:       map[string][]float64{"lat": low, "commit ops": high, "tail": mid, "other": mid},
			outcome: OutcomeBetter, decided: []string{"lat", "commit ops"}, proven: true, secondary: stats.NoDifference},
		{name: "better but a guard worse",
			a:       map[string][]float64{"lat": high, "commit ops": low, "tail": low, "other": low},
			b:       map[string][]float64{"lat": low, "commit ops": high, "tail": high, "other": mid},
			outcome: OutcomeBetter, decided: []string{"lat", "commit ops"}, guards: []string{"tail"}, secondary: stats.NoDifference},
		{name: "first primary not significant stops the sequence",
			a:       map[string][]float64{"lat": low, "commit ops": low, "tail": low, "other": low},
			b:       map[string][]float64{"lat": mid, "commit ops": high, "tail": low, "other": high},
			outcome: OutcomeNoDifference, secondary: stats.Significant},
		{name: "primaries disagree",
			a:       map[string][]float64{"lat": high, "commit ops": high, "tail": low, "other": low},
			b:       map[string][]float64{"lat": low, "commit ops": low, "tail": low, "other": low},
			outcome: OutcomeMixed, decided: []string{"lat", "commit ops"}, secondary: stats.NoDifference},
		{name: "worse",
			a:       map[string][]float64{"lat": low, "commit ops": low, "tail": low, "other": low},
			b:       map[string][]float64{"lat": high, "commit ops": mid, "tail": low, "other": low},
			outcome: OutcomeWorse, decided: []string{"lat"}, secondary: stats.NoDifference},
		{name: "too few runs",
			a:       map[string][]float64{"lat": low[:2], "commit ops": low[:2], "tail": low[:2], "other": low[:2]},
			b:       map[string][]float64{"lat": high[:2], "commit ops": high[:2], "tail": low[:2], "other": low[:2]},
			outcome: OutcomeTooFewRuns, secondary: stats.TooFewRuns},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Compare([]Side{sideOf("a", tc.a), sideOf("b", tc.b)},
				Options{Primary: []string{"lat", "commit ops", "not measured"}, Guards: []string{"tail"}})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r.Primary, []string{"lat", "commit ops"}) || !slices.Equal(r.Guards, []string{"tail"}) {
				t.Errorf("declared rows %v %v", r.Primary, r.Guards)
			}
			v := r.Verdicts[0]
			if v.Outcome != tc.outcome || !slices.Equal(v.Decided, tc.decided) || !slices.Equal(v.GuardsWorse, tc.guards) || v.Proven() != tc.proven {
				t.Errorf("verdict %+v proven %v, want %s decided %v guards worse %v proven %v", v, v.Proven(), tc.outcome, tc.decided, tc.guards, tc.proven)
			}
			for m, role := range map[string]string{"lat": RolePrimary, "commit ops": RolePrimary, "tail": RoleGuard, "other": RoleSecondary} {
				if got := rowOf(t, r, m).Role; got != role {
					t.Errorf("%s: role %q, want %q", m, got, role)
				}
			}
			o := rowOf(t, r, "other").Cells[1]
			got := o.Comparison.Verdict
			if o.Verdict != nil {
				got = *o.Verdict
			}
			if got != tc.secondary {
				t.Errorf("other: verdict %v, want %v", got, tc.secondary)
			}
		})
	}
}

// With the first primary not significant, the second is reported with the
// first's p as its adjusted p (fixed sequence) however small its own is.
func TestFixedSequenceAdjustedP(t *testing.T) {
	r, err := Compare([]Side{sideOf("a", map[string][]float64{"lat": low, "commit ops": low}), sideOf("b", map[string][]float64{"lat": mid, "commit ops": high})},
		Options{Primary: []string{"lat", "commit ops"}})
	if err != nil {
		t.Fatal(err)
	}
	first := rowOf(t, r, "lat").Cells[1]
	c := rowOf(t, r, "commit ops").Cells[1]
	if c.Comparison.Verdict != stats.Significant || c.AdjustedP == nil || *c.AdjustedP != first.Comparison.P || *c.Verdict != stats.NoDifference || c.Change != "" {
		t.Errorf("second primary after a non-significant first: %+v adjusted %v change %q, want the first's p %v and no verdict", c.Comparison, c.AdjustedP, c.Change, first.Comparison.P)
	}
	if d := FormatDelta(c); !strings.HasPrefix(d, "~ (p=0.008, adjusted p=") {
		t.Errorf("delta %q, want ~ with both p", d)
	}
	if v := r.Verdicts[0]; !slices.Equal(v.Tested, []string{"lat"}) {
		t.Errorf("tested %v, want only the first", v.Tested)
	}
}

// Holm over ten secondary rows: one separated at p = 0.0079 is adjusted to
// 10·0.0079 = 0.079 and loses its verdict; the table shows both, and that
// 5+5 runs cannot decide any row of a family of ten (6 per side can).
func TestSecondaryRowsHolmCorrected(t *testing.T) {
	a, b := map[string][]float64{}, map[string][]float64{}
	for i := range 10 {
		m := "m" + string(rune('a'+i))
		a[m], b[m] = low, mid
	}
	b["ma"] = high
	r, err := Compare([]Side{sideOf("a", a), sideOf("b", b)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := rowOf(t, r, "ma").Cells[1]
	raw := stats.MinP(5, 5)
	if c.Comparison.Verdict != stats.Significant || c.AdjustedP == nil || *c.AdjustedP < 10*raw-1e-12 || *c.AdjustedP > 10*raw+1e-12 {
		t.Fatalf("ma: raw %+v adjusted %v, want 10×%v", c.Comparison, c.AdjustedP, raw)
	}
	if *c.Verdict != stats.TooFewRuns || c.Change != "" || c.RunsToDecide != 6 {
		t.Errorf("ma: verdict %v change %q runs to decide %d after Holm, want too few runs, 6", *c.Verdict, c.Change, c.RunsToDecide)
	}
	if d := FormatDelta(c); d != "cannot decide: needs 6 runs per side (adjusted p=0.079)" {
		t.Errorf("delta %q", d)
	}
	if r.Verdicts[0].Outcome != OutcomeNoPrimary || r.Correction != CorrectionHolm {
		t.Errorf("verdict %+v correction %q", r.Verdicts[0], r.Correction)
	}
}

// The legend's counts come from the options used, not literals.
func TestLegendIsComputed(t *testing.T) {
	a := sideOf("a", map[string][]float64{"lat": low})
	b := sideOf("b", map[string][]float64{"lat": high[:2]}) // 5+2: smallest p 2/21
	for _, tc := range []struct {
		o    Options
		want []string
	}{
		{Options{Primary: []string{"lat"}}, []string{"Verdict on the primary metrics lat:", "b vs a: too few runs", "with equal sides an uncorrected verdict needs 4 runs per side (here 5 and 2 runs)", "95% confidence interval, which needs 6 runs per side (no side has them)"}},
		{Options{Alpha: 0.1, Confidence: 0.9}, []string{"No primary metric declared", "an uncorrected verdict needs 3 runs per side", "90% confidence interval, which needs 5 runs per side (a only)"}},
		{Options{Alpha: 1e-40}, []string{"an uncorrected verdict needs more than 50 runs per side at this alpha"}},
	} {
		r, err := Compare([]Side{a, b}, tc.o)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(append(Verdicts(r), Legend(r)...), "\n")
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("options %+v: legend lacks %q:\n%s", tc.o, w, got)
			}
		}
	}
}

// "~" only where the test could have found a difference: the issue's
// example, 4+4 runs and three secondary rows, cannot reach 0.05/3 (the
// smallest p is 0.029), so every secondary row says it cannot decide and
// that 5 per side would; with 5+5 runs (smallest p 0.008, times 3 is 0.024)
// a row that does not differ is "~".
func TestCannotDecideIsNotNoDifference(t *testing.T) {
	four := func(v []float64) []float64 { return v[:4] }
	for _, tc := range []struct {
		name   string
		cut    func([]float64) []float64
		want   stats.Verdict
		runs   int
		prefix string
	}{
		{"4+4", four, stats.TooFewRuns, 5, "cannot decide: needs 5 runs per side (adjusted p=0.086)"},
		{"5+5", func(v []float64) []float64 { return v }, stats.NoDifference, 0, "~ (p="},
	} {
		a := sideOf("a", map[string][]float64{"x": tc.cut(low), "y": tc.cut(low), "z": tc.cut(low)})
		b := sideOf("b", map[string][]float64{"x": tc.cut(high), "y": tc.cut(high), "z": tc.cut(low)})
		r, err := Compare([]Side{a, b}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		row := "x"
		if tc.want == stats.NoDifference {
			row = "z"
		}
		c := rowOf(t, r, row).Cells[1]
		if c.Verdict == nil || *c.Verdict != tc.want || c.RunsToDecide != tc.runs || !strings.HasPrefix(FormatDelta(c), tc.prefix) {
			t.Errorf("%s: row %s verdict %v runs to decide %d delta %q, want %v, %d, %q", tc.name, row, c.Verdict, c.RunsToDecide, FormatDelta(c), tc.want, tc.runs, tc.prefix)
		}
		if r.Verdicts[0].Secondary != 3 {
			t.Errorf("%s: family %d, want 3", tc.name, r.Verdicts[0].Secondary)
		}
	}
}

// Results of different profiles are refused with both names.
func TestDifferentProfilesRefused(t *testing.T) {
	a, b := sideOf("a", map[string][]float64{"x": low}), sideOf("b", map[string][]float64{"x": high})
	a.Profile, b.Profile = "db-commit", "search-index"
	_, err := Compare([]Side{a, b}, Options{})
	if err == nil || !strings.Contains(err.Error(), `"db-commit"`) || !strings.Contains(err.Error(), `"search-index"`) {
		t.Errorf("err %v, want both profiles named", err)
	}
	b.Profile = ""
	if _, err := Compare([]Side{a, b}, Options{}); err != nil {
		t.Errorf("a side of unknown profile: %v", err)
	}
}

// --fail-on: worse trips on a worse verdict or guard, different on either
// direction, and neither on a side that could not be decided.
func TestFailsGate(t *testing.T) {
	a := sideOf("a", map[string][]float64{"lat": low})
	for _, tc := range []struct {
		b                []float64
		worse, different bool
	}{
		{high, true, true},       // latency up: worse
		{low, false, false},      // same
		{high[:2], false, false}, // too few runs: no decided verdict
	} {
		r, err := Compare([]Side{a, sideOf("b", map[string][]float64{"lat": tc.b})}, Options{Primary: []string{"lat"}})
		if err != nil {
			t.Fatal(err)
		}
		for gate, want := range map[string]bool{GateWorse: tc.worse, GateDifferent: tc.different, GateNone: false} {
			got, why, err := r.Fails(gate)
			if err != nil || got != want || (got && !strings.Contains(why, "b vs a")) {
				t.Errorf("b %v gate %s: %v %q %v, want %v", tc.b, gate, got, why, err, want)
			}
		}
	}
	if _, _, err := (&Result{}).Fails("bogus"); err == nil {
		t.Error("unknown gate accepted")
	}
}
