package comparison_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/workload/profile"
)

// FuzzFromResult feeds arbitrary result files through everything compare
// does with them: whatever benchresult.Read accepts must compare without a
// panic, against a real result and against itself.
func FuzzFromResult(f *testing.F) {
	// The committed results are the baseline side; the seeds are small
	// results (the fuzzer mutates 25 KB files too slowly to explore them).
	b, err := os.ReadFile(filepath.Join("../../testdata/results", "plain-1.json"))
	if err != nil {
		f.Fatal(err)
	}
	base, err := benchresult.Read(bytes.NewReader(b))
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"kind":"slowpath-bench-result","schema_version":1,"profile":"x","status":"complete","figures":[{"name":"read_p99","phase":"p","value":1,"unit":"ns"}],"phases":[{"name":"p","streams":[{"op":"read","latency":{"histogram":{"bins":[{"value_ns":5,"count":1}]}}}]}]}`))
	f.Add([]byte(`{"kind":"slowpath-bench-result","schema_version":1,"profile":"search-index","status":"complete","figures":[{"name":"read_iops","phase":"pair","value":100,"unit":"iops","better":"higher"},{"name":"load_p99","phase":"pair","value":2e6,"unit":"ns"},{"name":"slow_loads","phase":"pair","value":2,"unit":"count","better":"lower"}],"where_time":{"interval_ns":1,"summary":"","devices":[],"threads":[{"group":"workload","threads":1,"cpu_ns":5000,"cpus":0.1}]},"phases":[{"name":"pair","streams":[{"op":"read","ops":10,"timeline":[{"t_ms":1000,"value":90,"unit":"iops"},{"t_ms":2000,"value":110,"unit":"iops"}]}]}],"load_times":{"slow_ns":10,"loads":[{"start_ns":1,"duration_ns":20},{"start_ns":2,"duration_ns":5}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := benchresult.Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		a, err := comparison.FromResults("a", []string{"a.json"}, []*benchresult.Result{base})
		if err != nil {
			t.Fatal(err)
		}
		b, err := comparison.FromResults("b", []string{"b.json"}, []*benchresult.Result{r, r})
		if err != nil {
			return
		}
		// With the baseline's declared metrics, so the roles, the fixed
		// sequence and Holm see arbitrary rows too.
		m, _ := profile.MetricsOf(base.Profile)
		res, err := comparison.Compare([]comparison.Side{a, b}, comparison.Options{Primary: profile.Rows(m.Primary), Guards: profile.Rows(m.Guards)})
		if err != nil {
			return
		}
		_ = comparison.Legend(res)
		for _, row := range res.Rows {
			for _, c := range row.Cells {
				_ = comparison.FormatCell(c, row.Unit)
				_ = comparison.FormatDelta(c)
			}
		}
	})
}
