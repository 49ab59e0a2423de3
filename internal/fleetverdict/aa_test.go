package fleetverdict

import (
	"encoding/csv"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/slowpath/slowpath/internal/canary"
	"github.com/slowpath/slowpath/internal/stats"
	"github.com/slowpath/slowpath/internal/testing/golden"
)

// aaFile holds 200 windows of a group of 12 nodes with no change at all:
// per node its backlog drops per second and its service's documents per
// second, each a mean over the window before and the window after a
// pretended change, and which 4 nodes were the canaries. Written once by
// writeAAWindows (the A/A test with SLOWPATH_UPDATE=1, as goldens) and
// committed, so the A/A test runs on fixed data rather than on whatever a
// generator gives today.
const aaFile = "testdata/aa-windows.csv"

const (
	aaWindows  = 200
	aaNodes    = 12
	aaCanaries = 4
	// aaMaxRate is the stated share of no-change windows in which fleet
	// verdict claims a difference (promote or roll back): at alpha 0.05 a
	// two-sided U test is significant at most 5% of the time, half of it
	// in each direction, so the primary promotes by chance in at most
	// 2.5% and rolls back in 2.5%, and the guard rolls back in 2.5%.
	aaMaxRate = 0.075
)

var aaSeries = []Series{
	{Name: "backlog_drops_per_second", Role: canary.RolePrimary, Better: Lower},
	{Name: "indexing_docs_per_second", Role: canary.RoleGuard, Better: Higher},
}

// aaWindow is one window of the committed file.
type aaWindow struct {
	nodes    []string
	canaries map[string]bool
	series   []Windows
}

func readAAWindows(t *testing.T) []aaWindow {
	t.Helper()
	f, err := os.Open(aaFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+aaWindows*aaNodes {
		t.Fatalf("%s: %d rows, want a header and %d", aaFile, len(rows), aaWindows*aaNodes)
	}
	var out []aaWindow
	for _, r := range rows[1:] {
		w, err := strconv.Atoi(r[0])
		if err != nil || w != len(out) && w != len(out)-1 {
			t.Fatalf("%s: window %q out of order", aaFile, r[0])
		}
		if w == len(out) {
			out = append(out, aaWindow{canaries: map[string]bool{}, series: []Windows{
				{map[string]float64{}, map[string]float64{}}, {map[string]float64{}, map[string]float64{}}}})
		}
		win := &out[w]
		win.nodes = append(win.nodes, r[1])
		if r[2] == "1" {
			win.canaries[r[1]] = true
		}
		for i := range aaSeries {
			b, err1 := strconv.ParseFloat(r[3+2*i], 64)
			a, err2 := strconv.ParseFloat(r[4+2*i], 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: row %v", aaFile, r)
			}
			win.series[i].Before[r[1]], win.series[i].After[r[1]] = b, a
		}
	}
	for i, w := range out {
		if len(w.nodes) != aaNodes || len(w.canaries) != aaCanaries {
			t.Fatalf("%s: window %d has %d nodes and %d canaries", aaFile, i, len(w.nodes), len(w.canaries))
		}
	}
	return out
}

// TestAAOnCommittedWindows: with no change at all, the verdict claims a
// difference in no more than the stated share of the 200 windows (at the
// 99% upper bound of a binomial at that rate); and on the same windows
// with the canaries' drops cut to a third after the change it promotes
// nearly always, so the bound is not met by never deciding.
func TestAAOnCommittedWindows(t *testing.T) {
	if golden.Update() {
		writeAAWindows(t)
	}
	windows := readAAWindows(t)
	claims, promoted := 0, 0
	for i, w := range windows {
		g := Group{Value: fmt.Sprint("window-", i)}
		if err := Decide(&g, w.nodes, w.canaries, aaSeries, w.series, stats.DefaultAlpha); err != nil {
			t.Fatal(err)
		}
		if g.Outcome != canary.Hold {
			claims++
		}
		effect := []Windows{{w.series[0].Before, map[string]float64{}}, w.series[1]}
		for n, v := range w.series[0].After {
			if _, ok := w.canaries[n]; ok {
				v /= 3
			}
			effect[0].After[n] = v
		}
		g = Group{Value: fmt.Sprint("effect-", i)}
		if err := Decide(&g, w.nodes, w.canaries, aaSeries, effect, stats.DefaultAlpha); err != nil {
			t.Fatal(err)
		}
		if g.Outcome == canary.Promote {
			promoted++
		}
	}
	limit := int(aaWindows*aaMaxRate + 2.33*math.Sqrt(aaWindows*aaMaxRate*(1-aaMaxRate)) + 0.5)
	t.Logf("A/A: %d of %d no-change windows claimed a difference (stated rate %.3f, limit %d); %d promoted with the canaries' drops cut to a third", claims, aaWindows, aaMaxRate, limit, promoted)
	if claims > limit {
		t.Errorf("%d of %d no-change windows claimed a difference, more than %d", claims, aaWindows, limit)
	}
	if promoted < aaWindows*95/100 {
		t.Errorf("promoted %d of %d windows with a real effect, want at least 95%%", promoted, aaWindows)
	}
}

// writeAAWindows writes aaFile. Each window is a
// group of 12 nodes: every node's level is log-normal (drops around 200/s
// with a spread of 0.8 in log, as nodes under different load; documents
// around 2000/s, 0.3), a fleet-wide drift moves every node's after-window
// (a traffic peak: drops by a log-normal of 0.3, documents by 0.1, the same
// for all nodes of the window), and each mean has its own noise (0.1 and
// 0.03 in log). 4 nodes are the canaries, chosen at random. Nothing
// changes on them.
func writeAAWindows(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 20261127))
	logn := func(mu, sigma float64) float64 { return math.Exp(mu + sigma*rng.NormFloat64()) }
	f, err := os.Create(aaFile)
	if err != nil {
		t.Fatal(err)
	}
	w := csv.NewWriter(f)
	w.Write([]string{"window", "node", "canary", "drops_before", "drops_after", "docs_before", "docs_after"})
	for win := range aaWindows {
		dropDrift, docDrift := logn(0, 0.3), logn(0, 0.1)
		canaries := rng.Perm(aaNodes)[:aaCanaries]
		for n := range aaNodes {
			drops, docs := logn(math.Log(200), 0.8), logn(math.Log(2000), 0.3)
			c := "0"
			for _, k := range canaries {
				if k == n {
					c = "1"
				}
			}
			g := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
			w.Write([]string{strconv.Itoa(win), fmt.Sprintf("node-%02d", n), c,
				g(drops * logn(0, 0.1)), g(drops * dropDrift * logn(0, 0.1)),
				g(docs * logn(0, 0.03)), g(docs * docDrift * logn(0, 0.03))})
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
