package profile

import (
	"slices"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/comparison"
)

// TestDeclaredMetricsAreRows checks that every declared primary and guard
// metric is a row compare makes of the profile's own figures: a name that
// drifted from Figures (or from compare's "PHASE figure" naming) would
// silently leave a profile without a verdict.
func TestDeclaredMetricsAreRows(t *testing.T) {
	lat := &benchresult.Latency{Count: 100, Percentiles: []benchresult.Percentile{{P: 50, ValueNS: 1000}, {P: 99, ValueNS: 5000}, {P: 99.9, ValueNS: 9000}},
		Histogram: &benchresult.Histogram{Bins: []benchresult.Bin{{ValueNS: 1000, Count: 90}, {ValueNS: 9000, Count: 10}}}}
	stream := func(name, op string) benchresult.Stream {
		return benchresult.Stream{Name: name, Op: op, Ops: 100, OpsPerSec: 100, BytesPerSec: 4096, Latency: lat}
	}
	for _, tc := range []struct {
		name    string
		jobFile []byte
		phases  []benchresult.Phase
		loads   *benchresult.LoadTimes
	}{
		{name: SearchIndex, phases: []benchresult.Phase{{Name: "pair", Streams: []benchresult.Stream{stream("readers", "read"), stream("writers", "write")}}},
			loads: &benchresult.LoadTimes{Count: 3, Slow: 1, P50NS: 1, P99NS: 2, MaxNS: 3}},
		{name: DBCommit, phases: []benchresult.Phase{
			{Name: "direct-4k", Streams: []benchresult.Stream{stream("direct", "read"), stream("direct", "write")}},
			{Name: "commit-1", Streams: []benchresult.Stream{stream("commit", "write"), stream("commit", "sync")}},
			{Name: "commit-N", Streams: []benchresult.Stream{stream("commit", "write"), stream("commit", "sync")}}}},
		{name: TelemetryIngest, phases: []benchresult.Phase{{Name: "ingest", Streams: []benchresult.Stream{stream("ingest", "write"), stream("ingest", "sync")}}}},
		{name: FioPrefix + "job.fio", jobFile: []byte("[a]\nrw=randread\nfilename=f\nsize=1m\n[b]\nrw=randwrite\nfilename=g\nsize=1m\n"),
			phases: []benchresult.Phase{{Name: "fio", Streams: []benchresult.Stream{stream("a", "read"), stream("b", "write")}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, err := New(tc.name, Params{Scale: 1, Runtime: time.Second, Dir: t.TempDir(), JobFile: tc.jobFile, SlowLoad: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			r := &benchresult.Result{Kind: benchresult.Kind, SchemaVersion: benchresult.SchemaVersion, Profile: tc.name, Status: benchresult.StatusComplete,
				Phases: tc.phases, LoadTimes: tc.loads, Figures: pl.Figures(tc.phases, tc.loads),
				WhereTime: &benchresult.WhereTime{Threads: []benchresult.ThreadGroup{{Group: "workload", CPUNS: 1e6}}}}
			side, err := comparison.FromResults("a", nil, []*benchresult.Result{r})
			if err != nil {
				t.Fatal(err)
			}
			m, ok := MetricsOf(tc.name)
			if !ok || len(m.Primary) == 0 || len(m.Guards) == 0 {
				t.Fatalf("MetricsOf(%q) = %+v, %v", tc.name, m, ok)
			}
			for _, name := range slices.Concat(m.Primary, m.Guards) {
				if _, ok := side.Runs[0].Metrics[name.Row()]; !ok {
					t.Errorf("declared metric %q is not a row; rows: %v", name, side.Runs[0].Order)
				}
			}
		})
	}
	if _, ok := MetricsOf("no-such-profile"); ok {
		t.Error("MetricsOf knows an unknown profile")
	}
}
