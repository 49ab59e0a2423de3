package canary

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/stats"
)

// group builds a metric over canaries and others: each node's before is
// its own level, its after that level plus drift (every node) plus effect
// (canaries only), plus noise from rng.
func group(rng *rand.Rand, name, role string, higher bool, canaries, others int, drift, effect, noise float64) Metric {
	m := Metric{Name: name, Role: role, HigherIsBetter: higher}
	for i := range canaries + others {
		level := 100 + 50*rng.Float64() // nodes differ in load
		c := i < canaries
		after := level + drift + noise*rng.NormFloat64()
		if c {
			after += effect
		}
		m.Nodes = append(m.Nodes, Node{Name: fmt.Sprintf("node-%02d", i), Canary: c, Before: level + noise*rng.NormFloat64(), After: after})
	}
	return m
}

// TestDecide: the three outcomes and why, on groups whose effect is far
// outside their noise (or absent).
func TestDecide(t *testing.T) {
	rng := func() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }
	cases := []struct {
		name    string
		metrics func(*rand.Rand) []Metric
		outcome string
		reason  string
		changes []string // per metric, in order
	}{
		{"drops fall on the canaries: promote",
			func(r *rand.Rand) []Metric {
				// A fleet-wide rise of 30 (a traffic peak) cancels: only the
				// canaries' extra fall of 40 counts.
				return []Metric{group(r, "backlog drops/s", RolePrimary, false, 5, 10, 30, -40, 2),
					group(r, "indexing docs/s", RoleGuard, true, 5, 10, 0, 0, 2)}
			}, Promote, "backlog drops/s significantly better", []string{"better", ""}},
		{"the service's own metric falls: roll back",
			func(r *rand.Rand) []Metric {
				return []Metric{group(r, "backlog drops/s", RolePrimary, false, 5, 10, 0, -40, 2),
					group(r, "indexing docs/s", RoleGuard, true, 5, 10, 0, -30, 2)}
			}, Rollback, "significantly worse on the canaries: indexing docs/s", []string{"better", "worse"}},
		{"a primary worse: roll back",
			func(r *rand.Rand) []Metric {
				return []Metric{group(r, "p99 seconds", RolePrimary, false, 5, 10, 0, 40, 2)}
			}, Rollback, "significantly worse on the canaries: p99 seconds", []string{"worse"}},
		{"two canaries against two others: hold, and how many would decide",
			func(r *rand.Rand) []Metric {
				// 2 against 2: the smallest p is 1/3. Against 2 others, 8
				// canaries give 2/45.
				return []Metric{group(r, "backlog drops/s", RolePrimary, false, 2, 2, 0, -40, 2)}
			}, Hold, "backlog drops/s: 2 canaries and 2 others, which needs at least 8 canaries", []string{""}},
		{"three canaries against ten others decide",
			func(r *rand.Rand) []Metric {
				// Unequal sizes: the smallest p of 3 against 10 is 2/286.
				return []Metric{group(r, "backlog drops/s", RolePrimary, false, 3, 10, 0, -40, 2)}
			}, Promote, "backlog drops/s significantly better", []string{"better"}},
		{"a guard with too few nodes holds a promotion",
			func(r *rand.Rand) []Metric {
				return []Metric{group(r, "backlog drops/s", RolePrimary, false, 5, 10, 0, -40, 2),
					group(r, "indexing docs/s", RoleGuard, true, 5, 2, 0, 0, 2)}
			}, Hold, "indexing docs/s: 5 canaries and 2 others, which needs at least 8 canaries", []string{"better", ""}},
		{"no change: hold",
			func(r *rand.Rand) []Metric {
				return []Metric{group(r, "backlog drops/s", RolePrimary, false, 5, 10, 0, 0, 2)}
			}, Hold, "no significant change of backlog drops/s yet", []string{""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Decide("zone-a", tc.metrics(rng()), stats.DefaultAlpha)
			if err != nil {
				t.Fatal(err)
			}
			if v.Outcome != tc.outcome || !strings.Contains(v.Reason, tc.reason) {
				t.Errorf("verdict %q (%s), want %q containing %q", v.Outcome, v.Reason, tc.outcome, tc.reason)
			}
			if strings.Contains(tc.reason, "at least 8 canaries") && v.NeedCanaries != 8 {
				t.Errorf("need %d canaries, want 8", v.NeedCanaries)
			}
			for i, want := range tc.changes {
				if got := v.Metrics[i].Change; got != want {
					t.Errorf("%s: change %q, want %q (%+v)", v.Metrics[i].Metric, got, want, v.Metrics[i])
				}
			}
		})
	}
}

// TestEffectIsDifferenceInDifferences checks the effect against values
// worked by hand: canaries change -10 and -12 and -14 and -16 (median
// -13), others +5, +6, +7, +8 (median 6.5): effect -19.5, better for a
// metric where lower is better (drops).
func TestEffectIsDifferenceInDifferences(t *testing.T) {
	m := Metric{Name: "x", Role: RolePrimary}
	for i, d := range []float64{-10, -12, -14, -16} {
		m.Nodes = append(m.Nodes, Node{Name: fmt.Sprint("c", i), Canary: true, Before: 100 * float64(i+1), After: 100*float64(i+1) + d})
	}
	for i, d := range []float64{5, 6, 7, 8} {
		m.Nodes = append(m.Nodes, Node{Name: fmt.Sprint("o", i), Before: 7, After: 7 + d})
	}
	v, err := Decide("g", []Metric{m}, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	r := v.Metrics[0]
	// Completely separated 4 against 4: the exact two-sided p is 2/70.
	if r.CanaryChange != -13 || r.ControlChange != 6.5 || r.Effect != -19.5 || math.Abs(r.Comparison.P-2.0/70) > 1e-9 || r.Change != "better" {
		t.Errorf("result %+v", r)
	}
}

func TestDecideRefuses(t *testing.T) {
	primary := Metric{Name: "p", Role: RolePrimary}
	cases := []struct {
		name    string
		metrics []Metric
		alpha   float64
		want    string
	}{
		{"no primary", []Metric{{Name: "g", Role: RoleGuard}}, 0.05, "no primary metric"},
		{"unknown role", []Metric{primary, {Name: "s", Role: "secondary"}}, 0.05, `role "secondary"`},
		{"alpha", []Metric{primary}, 1, "alpha 1 outside"},
		{"a node twice", []Metric{{Name: "p", Role: RolePrimary, Nodes: []Node{{Name: "n"}, {Name: "n"}}}}, 0.05, `node "n" twice`},
	}
	for _, tc := range cases {
		if _, err := Decide("g", tc.metrics, tc.alpha); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	// A node without a value in one window is left out, not a zero.
	m := group(rand.New(rand.NewPCG(3, 4)), "p", RolePrimary, false, 5, 5, 0, -40, 2)
	m.Nodes[0].After = math.NaN()
	v, err := Decide("g", []Metric{m}, 0.05)
	if err != nil || v.Metrics[0].Canaries != 4 || v.Outcome != Promote {
		t.Errorf("a node without an after: %v, %+v", err, v)
	}
}

// aaWindows is how many no-change windows the A/A test simulates, and
// aaMaxRate the share of them allowed to claim a difference: the primary's
// fixed sequence keeps its false claims at alpha, and each guard adds at
// most alpha/2 (only "worse" rolls back): 0.05 + 0.025 for one guard.
const (
	aaWindows = 200
	aaMaxRate = stats.DefaultAlpha * 1.5
)

// TestAA: with no change at all (a fleet-wide drift, nodes at their own
// levels), a group of 5 canaries and 11 others over 200 windows claims a
// difference (promote or roll back) no more often than the stated rate,
// up to the binomial's 99% upper margin; the power check beside it finds
// a 20% fall of drops in every window.
func TestAA(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 2026))
	claims := 0
	for w := range aaWindows {
		drift := 20 * rng.NormFloat64()
		v, err := Decide(fmt.Sprint("window-", w), []Metric{
			group(rng, "backlog drops/s", RolePrimary, false, 5, 11, drift, 0, 5),
			group(rng, "indexing docs/s", RoleGuard, true, 5, 11, -drift, 0, 5),
		}, stats.DefaultAlpha)
		if err != nil {
			t.Fatal(err)
		}
		if v.Outcome != Hold {
			claims++
		}
	}
	// 99% upper bound of a binomial(200, 0.075): mean 15, sd 3.7.
	limit := int(aaWindows*aaMaxRate + 2.33*math.Sqrt(aaWindows*aaMaxRate*(1-aaMaxRate)) + 0.5)
	t.Logf("A/A: %d of %d windows claimed a difference (stated rate %.3f, limit %d)", claims, aaWindows, aaMaxRate, limit)
	if claims > limit {
		t.Errorf("%d of %d no-change windows claimed a difference, more than %d", claims, aaWindows, limit)
	}

	promoted := 0
	for range aaWindows {
		drift := 20 * rng.NormFloat64()
		v, err := Decide("power", []Metric{
			group(rng, "backlog drops/s", RolePrimary, false, 5, 11, drift, -25, 5),
			group(rng, "indexing docs/s", RoleGuard, true, 5, 11, -drift, 0, 5),
		}, stats.DefaultAlpha)
		if err != nil {
			t.Fatal(err)
		}
		if v.Outcome == Promote {
			promoted++
		}
	}
	t.Logf("power: %d of %d windows with the canaries' drops 25 lower (noise sd 5) promoted", promoted, aaWindows)
	if promoted < aaWindows*95/100 {
		t.Errorf("promoted %d of %d windows with a real effect, want at least 95%%", promoted, aaWindows)
	}
}

// TestRelativeChange: each node's change as a share of its own before,
// worked by hand. Canaries at 50 to 5000 all fall by 90% while a
// fleet-wide drift takes 10% off the others: the absolute changes (-45 to
// -4500 against -1 to -500) overlap, the shares do not. A node from 0 to
// something ranks beyond every finite change, 0 to 0 is no change.
func TestRelativeChange(t *testing.T) {
	m := Metric{Name: "drops", Role: RolePrimary, Relative: true}
	for i, before := range []float64{100, 1000, 5000, 50} {
		m.Nodes = append(m.Nodes, Node{Name: fmt.Sprint("c", i), Canary: true, Before: before, After: before / 10})
	}
	for i, n := range []struct{ before, after float64 }{{100, 90}, {5000, 4500}, {1000, 900}, {10, 9}, {0, 3}, {0, 0}} {
		m.Nodes = append(m.Nodes, Node{Name: fmt.Sprint("o", i), Before: n.before, After: n.after})
	}
	v, err := Decide("g", []Metric{m}, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	r := v.Metrics[0]
	// Canaries -0.9 x4; others -0.1 x4, +Inf, 0 (median -0.1):
	// separated, 4 against 6: 2/210.
	if math.Abs(r.CanaryChange+0.9) > 1e-12 || math.Abs(r.ControlChange+0.1) > 1e-12 || math.Abs(r.Effect+0.8) > 1e-12 ||
		math.Abs(r.Comparison.P-2.0/210) > 1e-9 || r.Change != "better" {
		t.Errorf("relative: %+v", r)
	}
	m.Relative = false
	if v, _ := Decide("g", []Metric{m}, 0.05); v.Metrics[0].Change != "" {
		t.Errorf("absolute changes overlap, yet %+v", v.Metrics[0])
	}
}

// TestNoData: a series without values on a set of the group's nodes holds
// the group for no data, with no change, effect or canaries needed; a
// group whose nodes are all canaries is too few nodes, not missing data.
func TestNoData(t *testing.T) {
	nan := math.NaN()
	rng := rand.New(rand.NewPCG(1, 2))
	drops := group(rng, "drops", RolePrimary, false, 5, 10, 0, -40, 2)
	blank := func(m Metric, canaries, others bool) Metric {
		m.Nodes = append([]Node(nil), m.Nodes...)
		for i, n := range m.Nodes {
			if n.Canary && canaries || !n.Canary && others {
				m.Nodes[i].Before, m.Nodes[i].After = nan, nan
			}
		}
		return m
	}
	allCanaries := group(rng, "docs", RoleGuard, true, 5, 0, 0, 0, 2)
	for _, tc := range []struct {
		name             string
		guard            Metric
		reason           string
		canaries, others bool // the guard's medians that are numbers
		need             int
	}{
		{"nowhere", blank(group(rng, "docs", RoleGuard, true, 5, 10, 0, 0, 2), true, true), "no data: docs has no values on any node of the group", false, false, 0},
		{"not on the canaries", blank(group(rng, "docs", RoleGuard, true, 5, 10, 0, 0, 2), true, false), "no data: docs has no values on the canaries", false, true, 0},
		{"not on the others", blank(group(rng, "docs", RoleGuard, true, 5, 10, 0, 0, 2), false, true), "no data: docs has no values on the other nodes", true, false, 0},
		{"no node listed", Metric{Name: "docs", Role: RoleGuard}, "no data: docs has no values on any node of the group", false, false, 0},
		{"every node a canary", allCanaries, "too few nodes for a verdict at alpha 0.05: docs: 5 canaries and 0 others, which needs more than 50", true, false, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Decide("g", []Metric{drops, tc.guard}, 0.05)
			if err != nil {
				t.Fatal(err)
			}
			g := v.Metrics[1]
			if v.Outcome != Hold || !strings.Contains(v.Reason, tc.reason) || v.NeedCanaries != tc.need {
				t.Errorf("%s (%s), need %d; want hold with %q, need %d", v.Outcome, v.Reason, v.NeedCanaries, tc.reason, tc.need)
			}
			if math.IsNaN(g.CanaryChange) == tc.canaries || math.IsNaN(g.ControlChange) == tc.others || !math.IsNaN(g.Effect) || g.Change != "" {
				t.Errorf("no-data guard: canaries %v others %v effect %v change %q", g.CanaryChange, g.ControlChange, g.Effect, g.Change)
			}
		})
	}
}

// TestFixedSequenceStops: a primary after one that was not significant is
// not tested (AdjustedP NaN, no change), however small its own p; one
// after a significant primary is tested.
func TestFixedSequenceStops(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	flat := group(rng, "latency", RolePrimary, false, 5, 10, 0, 0, 2)
	better := group(rng, "drops", RolePrimary, false, 5, 10, 0, -40, 2)
	v, err := Decide("g", []Metric{flat, better}, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	if r := v.Metrics[1]; !math.IsNaN(r.AdjustedP) || r.Change != "" || r.Comparison.P > 0.05 {
		t.Errorf("after a primary that stopped the sequence: adjusted p %v, change %q, p %v; want NaN, none, and a p that alone would be significant", r.AdjustedP, r.Change, r.Comparison.P)
	}
	if v.Outcome != Hold || !strings.Contains(v.Reason, "no significant change of latency") {
		t.Errorf("%s: %s", v.Outcome, v.Reason)
	}
	v, err = Decide("g", []Metric{better, flat}, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	if r := v.Metrics[1]; math.IsNaN(r.AdjustedP) || r.AdjustedP < r.Comparison.P {
		t.Errorf("after a significant primary: adjusted p %v (p %v), want the larger of both primaries' p", r.AdjustedP, r.Comparison.P)
	}
	if v.Outcome != Promote {
		t.Errorf("%s: %s", v.Outcome, v.Reason)
	}
}
