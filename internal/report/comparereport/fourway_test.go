package comparereport

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/testing/comparisontest"
	"github.com/slowpath/slowpath/internal/testing/golden"
	"github.com/slowpath/slowpath/internal/workload/profile"
)

// TestFourWayGolden is the incident's table on MariaDB: none, the
// engine's own encryption, LUKS (dm-crypt) and both, each against none,
// each side's encryption layers named (docs/bench.md, "The four-way
// comparison"). The figures are synthetic, shaped like the incident's
// (engine -16% throughput, LUKS -24%).
func TestFourWayGolden(t *testing.T) {
	var sides []comparison.Side
	for i, sp := range []comparisontest.MariaDBSpec{
		{Name: "none", TPS: 1000, P99: 12 * time.Millisecond, CPUPerTxn: 1300 * time.Microsecond},
		{Name: "engine", TPS: 840, P99: 14 * time.Millisecond, CPUPerTxn: 1450 * time.Microsecond, Engine: true},
		{Name: "luks", TPS: 760, P99: 16 * time.Millisecond, CPUPerTxn: 1310 * time.Microsecond, Crypt: true},
		{Name: "both", TPS: 650, P99: 19 * time.Millisecond, CPUPerTxn: 1460 * time.Microsecond, Engine: true, Crypt: true},
	} {
		sp.Runs, sp.Noise, sp.Seed = 5, 0.02, uint64(i+1)
		rs := comparisontest.MariaDBResults(sp)
		var names []string
		for n := range rs {
			names = append(names, fmt.Sprintf("%s-%d.json", sp.Name, n+1))
		}
		s, err := comparison.FromResults(sp.Name, names, rs)
		if err != nil {
			t.Fatal(err)
		}
		sides = append(sides, s)
	}
	m, ok := profile.MetricsOf(comparison.CommonProfile(sides))
	if !ok {
		t.Fatal("the four sides are not of one profile")
	}
	r, err := comparison.Compare(sides, comparison.Options{Primary: profile.Rows(m.Primary), Guards: profile.Rows(m.Guards)})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, r, "text"); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, filepath.Join("testdata", "four-way.txt"), buf.Bytes())
	for _, want := range []string{"1: engine mariadb (tables logs temp; service CPU)", "1: dm-crypt (kernel-cpu)", "2: engine mariadb (tables logs temp; service CPU), dm-crypt (kernel-cpu)"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the table does not name the layers %q:\n%s", want, buf.String())
		}
	}
}
