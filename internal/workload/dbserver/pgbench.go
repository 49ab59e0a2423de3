package dbserver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/stats"
)

// PgbenchSummary is what pgbench prints at the end of a run
// (https://www.postgresql.org/docs/15/pgbench.html, "Example output").
type PgbenchSummary struct {
	Transactions uint64        // "number of transactions actually processed"
	Failed       uint64        // "number of failed transactions" (15+)
	Duration     time.Duration // "duration: N s"
	TPS          float64       // "tps = X (without initial connection time)"
}

// ParsePgbenchSummary reads pgbench's final report; it must hold the
// transactions processed and the tps.
func ParsePgbenchSummary(out []byte) (PgbenchSummary, error) {
	var s PgbenchSummary
	var haveTxn, haveTPS bool
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			k, v, ok = strings.Cut(line, "=")
		}
		if !ok {
			continue
		}
		k, f, rest := strings.TrimSpace(k), strings.Fields(v), v
		if len(f) == 0 {
			continue
		}
		switch k {
		case "number of transactions actually processed":
			// "1234" or, with -t, "1234/2000".
			n, err := strconv.ParseUint(strings.SplitN(f[0], "/", 2)[0], 10, 64)
			if err != nil {
				return s, fmt.Errorf("pgbench output: %q: %w", line, err)
			}
			s.Transactions, haveTxn = n, true
		case "number of failed transactions":
			n, err := strconv.ParseUint(f[0], 10, 64)
			if err != nil {
				return s, fmt.Errorf("pgbench output: %q: %w", line, err)
			}
			s.Failed = n
		case "duration":
			n, err := strconv.ParseUint(f[0], 10, 32)
			if err != nil {
				return s, fmt.Errorf("pgbench output: %q: %w", line, err)
			}
			s.Duration = time.Duration(n) * time.Second
		case "tps":
			tps, err := strconv.ParseFloat(f[0], 64)
			if err != nil || tps < 0 || math.IsInf(tps, 0) || math.IsNaN(tps) {
				return s, fmt.Errorf("pgbench output: %q: not a rate", line)
			}
			// Before 14 pgbench printed two tps lines; the one without
			// connection time is the run's.
			if !haveTPS || strings.Contains(rest, "without") {
				s.TPS, haveTPS = tps, true
			}
		}
	}
	if !haveTxn || !haveTPS {
		return s, fmt.Errorf("pgbench output has no transaction count or tps: %s", tail(out))
	}
	return s, nil
}

// maxLogLines bounds a per-transaction log: a day at 10^5 tps is more
// than any bench run makes.
const maxLogLines = 50_000_000

// PgbenchLog is pgbench's per-transaction log (-l), one or more files:
//
//	client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries]
//
// time is the transaction's latency in microseconds, or "skipped" /
// "failed" (https://www.postgresql.org/docs/15/pgbench.html,
// "Per-Transaction Logging").
type PgbenchLog struct {
	LatencyUS []float64
	// EndSec counts completions per Unix second.
	EndSec  map[int64]uint64
	Skipped uint64
	Failed  uint64
	lines   int
}

// Read adds one log file's transactions.
func (l *PgbenchLog) Read(r io.Reader) error {
	if l.EndSec == nil {
		l.EndSec = map[int64]uint64{}
	}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		l.lines++
		if l.lines > maxLogLines {
			return fmt.Errorf("more than %d transactions logged", maxLogLines)
		}
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		f := strings.Fields(string(line))
		if len(f) < 6 {
			return fmt.Errorf("line %d: %d fields, want at least 6 (client_id transaction_no time script_no time_epoch time_us)", n, len(f))
		}
		switch f[2] {
		case "skipped":
			l.Skipped++
			continue
		case "failed":
			l.Failed++
			continue
		}
		us, err1 := strconv.ParseUint(f[2], 10, 63)
		epoch, err2 := strconv.ParseInt(f[4], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		l.LatencyUS = append(l.LatencyUS, float64(us))
		l.EndSec[epoch]++
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("line %d: %w", n+1, err)
	}
	return nil
}

// Stream is the log as a bench stream of transactions: the count, the
// summary's rate, every latency (an exact histogram in nanoseconds) and
// completions per second.
func (l *PgbenchLog) Stream(name string, sum PgbenchSummary) benchresult.Stream {
	ns := make([]float64, len(l.LatencyUS))
	for i, v := range l.LatencyUS {
		ns[i] = v * 1e3
	}
	s := benchresult.Stream{Name: name, Op: OpTransaction, Ops: uint64(len(ns)), RuntimeNS: int64(sum.Duration), OpsPerSec: sum.TPS,
		Latency: latencyOf(stats.Exact(ns))}
	secs := make([]int64, 0, len(l.EndSec))
	for s := range l.EndSec {
		secs = append(secs, s)
	}
	sort.Slice(secs, func(i, j int) bool { return secs[i] < secs[j] })
	for _, sec := range secs {
		s.Timeline = append(s.Timeline, benchresult.Point{TMS: (sec - secs[0] + 1) * 1000, Value: float64(l.EndSec[sec]), Unit: benchresult.UnitOpsPerSec})
	}
	return s
}

// OpTransaction is the op of a database client's stream of transactions;
// OpQuery its queries (sysbench counts both).
const (
	OpTransaction = "transaction"
	OpQuery       = "query"
)

// Percentiles are the ones a database stream's latency lists (the
// profiles' figures read them).
var Percentiles = []float64{50, 95, 99, 99.9}

// latencyOf summarises a histogram in nanoseconds; nil when empty.
func latencyOf(h stats.Histogram) *benchresult.Latency {
	wire := benchresult.FromStats(h)
	n := wire.Count()
	if n == 0 {
		return nil
	}
	lat := &benchresult.Latency{Count: n, MinNS: wire.Bins[0].ValueNS, MaxNS: wire.Bins[len(wire.Bins)-1].ValueNS, Histogram: wire}
	var sum float64
	for _, b := range wire.Bins {
		sum += float64(b.ValueNS) * float64(b.Count)
	}
	lat.MeanNS = sum / float64(n)
	for _, p := range Percentiles {
		if v, ok := wire.Percentile(p); ok {
			lat.Percentiles = append(lat.Percentiles, benchresult.Percentile{P: p, ValueNS: v})
		}
	}
	return lat
}
