package dbserver

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/benchresult"
)

// pgbench 15's report (https://www.postgresql.org/docs/15/pgbench.html).
const pgbenchOut = `pgbench (15.18 (Debian 15.18-0+deb12u1))
starting vacuum...end.
transaction type: <builtin: TPC-B (sort of)>
scaling factor: 1
query mode: simple
number of clients: 4
number of threads: 2
maximum number of tries: 1
duration: 3 s
number of transactions actually processed: 2986
number of failed transactions: 0 (0.000%)
latency average = 4.025 ms
initial connection time = 7.412 ms
tps = 993.543299 (without initial connection time)
`

func TestParsePgbenchSummary(t *testing.T) {
	got, err := ParsePgbenchSummary([]byte(pgbenchOut))
	if err != nil {
		t.Fatal(err)
	}
	want := PgbenchSummary{Transactions: 2986, Duration: 3 * time.Second, TPS: 993.543299}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Before 14: two tps lines, the second without connections.
	old := "number of transactions actually processed: 10/10\ntps = 5.0 (including connections establishing)\ntps = 6.5 (excluding connections establishing)\n"
	if got, err := ParsePgbenchSummary([]byte(old)); err != nil || got.TPS != 5.0 || got.Transactions != 10 {
		// "excluding" is not "without": the first stays, as 14+ prints one.
		t.Errorf("old report: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "tps = 5\n", "number of transactions actually processed: 3\n", "number of transactions actually processed: x\ntps = 1\n",
		"number of transactions actually processed: 3\ntps = NaN (without initial connection time)\n", "number of transactions actually processed: 3\ntps = -1\n"} {
		if _, err := ParsePgbenchSummary([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestPgbenchLog(t *testing.T) {
	var l PgbenchLog
	in := "0 1 2000 0 1700000000 100\n1 1 4000 0 1700000000 900\n0 2 skipped 0 1700000001 5\n1 2 failed 0 1700000001 7 0\n\n0 3 1000 0 1700000001 8 12 0\n"
	if err := l.Read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	if l.Skipped != 1 || l.Failed != 1 || len(l.LatencyUS) != 3 {
		t.Fatalf("log = %+v", l)
	}
	s := l.Stream("pgbench", PgbenchSummary{Transactions: 3, Duration: 2 * time.Second, TPS: 1.5})
	if s.Op != OpTransaction || s.Ops != 3 || s.OpsPerSec != 1.5 || s.Latency == nil || s.Latency.MinNS != 1_000_000 || s.Latency.MaxNS != 4_000_000 {
		t.Errorf("stream = %+v", s)
	}
	want := []benchresult.Point{{TMS: 1000, Value: 2, Unit: benchresult.UnitOpsPerSec}, {TMS: 2000, Value: 1, Unit: benchresult.UnitOpsPerSec}}
	if diff := cmp.Diff(want, s.Timeline); diff != "" {
		t.Errorf("timeline (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"0 1 2000\n", "0 1 x 0 1 2\n", "0 1 -5 0 1 2\n", "0 1 5 0 y 2\n", strings.Repeat("9", 70000) + "\n"} {
		var l PgbenchLog
		if err := l.Read(strings.NewReader(bad)); err == nil {
			t.Errorf("%.40q: no error", bad)
		}
	}
}

// sysbench 1.0.20's run with --report-interval=1 --histogram=on.
const sysbenchOut = `sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)

Running the test with following options:
Number of threads: 4
Report intermediate results every 1 second(s)
Initializing random number generator from current time

Initializing worker threads...

Threads started!

[ 1s ] thds: 4 tps: 650.81 qps: 13056.18 (r/w/o: 9144.34/2606.23/1305.61) lat (ms,99%): 15.83 err/s: 0.00 reconn/s: 0.00
[ 2s ] thds: 4 tps: 661.02 qps: 13220.49 (r/w/o: 9254.34/2644.10/1322.05) lat (ms,99%): 16.12 err/s: 0.00 reconn/s: 0.00
Latency histogram (values are in milliseconds)
       value  ------------- distribution ------------- count
       2.106 |*                                        1
       5.470 |****************************************  980
      15.828 |***                                      20
      24.827 |*                                        1
 
SQL statistics:
    queries performed:
        read:                            27720
        write:                           7920
        other:                           3960
        total:                           39600
    transactions:                        1980   (659.22 per sec.)
    queries:                             39600  (13184.40 per sec.)
    ignored errors:                      0      (0.00 per sec.)
    reconnects:                          0      (0.00 per sec.)

General statistics:
    total time:                          3.0035s
    total number of events:              1980

Latency (ms):
         min:                                    2.11
         avg:                                    6.06
         max:                                   24.83
         99th percentile:                       15.83
         sum:                                11999.87
`

func TestParseSysbench(t *testing.T) {
	r, err := ParseSysbench([]byte(sysbenchOut))
	if err != nil {
		t.Fatal(err)
	}
	if r.Transactions != 1980 || r.TPS != 659.22 || r.Queries != 39600 || r.QPS != 13184.40 || r.TotalTime != 3003500*time.Microsecond {
		t.Errorf("parsed %+v", r)
	}
	if diff := cmp.Diff([]float64{2106000, 5470000, 15828000, 24827000}, r.Histogram.Values); diff != "" {
		t.Errorf("histogram (-want +got):\n%s", diff)
	}
	if len(r.Interim) != 2 || r.Interim[1] != (benchresult.Point{TMS: 2000, Value: 661.02, Unit: benchresult.UnitOpsPerSec}) {
		t.Errorf("interim %+v", r.Interim)
	}
	ss := r.Streams("sysbench")
	if len(ss) != 2 || ss[0].Latency == nil || ss[0].Latency.Count != 1002 || ss[1].Op != OpQuery {
		t.Errorf("streams %+v", ss)
	}
	for _, bad := range []string{"", "transactions: 5 (1.0 per sec.)\n", "transactions: x\nqueries: 1\ntotal time: 1s\n",
		"Latency histogram\n 5.0 |** 3\n 4.0 |* 1\ntransactions: 1 (1 per sec.)\nqueries: 1 (1 per sec.)\ntotal time: 1s\n",
		"Latency histogram\n abc |** 3\n", "transactions: 1 (NaN per sec.)\nqueries: 1\ntotal time: 1s\n", "transactions: 1\nqueries: 1\ntotal time: -1s\n"} {
		if _, err := ParseSysbench([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzParsePgbenchSummary(f *testing.F) {
	f.Add([]byte(pgbenchOut))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParsePgbenchSummary(b)
		if err == nil && !(s.TPS >= 0) {
			t.Errorf("tps %v accepted", s.TPS)
		}
	})
}

func FuzzPgbenchLog(f *testing.F) {
	f.Add([]byte("0 1 2000 0 1700000000 100\n1 1 skipped 0 1700000000 900 3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var l PgbenchLog
		if err := l.Read(strings.NewReader(string(b))); err != nil {
			return
		}
		s := l.Stream("pgbench", PgbenchSummary{Duration: time.Second})
		if s.Latency != nil && s.Latency.Histogram.Count() != s.Ops {
			t.Errorf("histogram holds %d of %d", s.Latency.Histogram.Count(), s.Ops)
		}
	})
}

func FuzzParseSysbench(f *testing.F) {
	f.Add([]byte(sysbenchOut))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseSysbench(b)
		if err != nil {
			return
		}
		if !(r.TPS >= 0) || !(r.QPS >= 0) || r.TotalTime < 0 {
			t.Errorf("parsed %+v", r)
		}
		for _, s := range r.Streams("sysbench") {
			if s.Latency != nil && s.Latency.Histogram != nil {
				res := benchresult.Result{Kind: benchresult.Kind, SchemaVersion: benchresult.SchemaVersion, Profile: "x", Status: benchresult.StatusComplete,
					Phases: []benchresult.Phase{{Name: "oltp", Streams: []benchresult.Stream{s}}}}
				if err := res.Validate(); err != nil {
					t.Errorf("stream does not validate: %v", err)
				}
			}
		}
	})
}
