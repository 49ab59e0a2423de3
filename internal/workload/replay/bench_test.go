package replay

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/testing/testenv"
	"github.com/slowpath/slowpath/internal/workload/fio"
)

// schedules are docs/replay.md's timing measurements: one thread issuing
// at a fixed interval, so that the replay's span should equal the
// schedule's.
var schedules = []struct {
	name     string
	kind     Kind
	direct   bool
	interval time.Duration
	n        int
}{
	{"cached-read-1ms", Read, false, time.Millisecond, 3000},
	{"cached-read-100us", Read, false, 100 * time.Microsecond, 20000},
	{"buffered-write-1ms", Write, false, time.Millisecond, 3000},
	{"direct-read-200us", Read, true, 200 * time.Microsecond, 10000},
}

func scheduleTrace(kind Kind, direct bool, interval time.Duration, n int) *Trace {
	rng := rand.New(rand.NewPCG(3, 4))
	tr := &Trace{Files: []File{{Name: "f0001", Size: 64 << 20, Resident: []Range{{0, 64 << 20}}}}}
	th := Thread{Name: "t0001"}
	for i := range n {
		th.Ops = append(th.Ops, Op{Kind: kind, Offset: rng.Int64N(16384) * 4096, Length: 4096, At: time.Duration(i) * interval, Direct: direct})
	}
	tr.Threads = []Thread{th}
	return tr
}

// BenchmarkScheduleFidelity replays each schedule with slowpath's timed
// replayer and with fio's own timed replay (read_iolog without
// replay_no_stall) and reports span-ratio: the replay's span over the
// schedule's (1 is faithful); for the replayer also the issue lateness.
//
//	go test -run '^$' -bench ScheduleFidelity -benchtime 1x ./internal/workload/replay
func BenchmarkScheduleFidelity(b *testing.B) {
	for _, sc := range schedules {
		tr := scheduleTrace(sc.kind, sc.direct, sc.interval, sc.n)
		span := tr.Span()
		b.Run(sc.name+"/slowpath", func(b *testing.B) {
			for b.Loop() {
				dir := b.TempDir()
				if err := Layout(context.Background(), dir, tr); err != nil {
					b.Fatal(err)
				}
				out, err := Replay(context.Background(), dir, tr)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(out.Elapsed)/float64(span), "span-ratio")
				b.ReportMetric(float64(out.Timing.LateP50NS)/1e3, "late-p50-us")
				b.ReportMetric(float64(out.Timing.LateP99NS)/1e3, "late-p99-us")
				b.ReportMetric(float64(out.Timing.LateMaxNS)/1e3, "late-max-us")
			}
		})
		b.Run(sc.name+"/fio", func(b *testing.B) {
			testenv.RequireTool(b, "fio", "fio")
			for b.Loop() {
				dir := b.TempDir()
				if err := Layout(context.Background(), dir, tr); err != nil {
					b.Fatal(err)
				}
				streams, err := WriteIologs(dir, tr, FioTimed)
				if err != nil {
					b.Fatal(err)
				}
				job, err := JobFile(streams, FioTimed)
				if err != nil {
					b.Fatal(err)
				}
				res, err := fio.Invocation{JobFile: job, Dir: filepath.Clean(dir)}.Run(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(res.Jobs[0].Runtime)/float64(span), "span-ratio")
			}
		})
	}
}
