package dbserver

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/stats"
)

// Sysbench is what sysbench 1.0's run prints (src/sysbench.c
// report_cumulative, and the histogram of --histogram=on,
// https://github.com/akopytov/sysbench#general-command-line-options).
type Sysbench struct {
	Transactions uint64
	TPS          float64
	Queries      uint64
	QPS          float64
	Errors       uint64        // "ignored errors"
	TotalTime    time.Duration // "total time"
	// Histogram is the latency histogram in nanoseconds (sysbench prints
	// each bucket's value in milliseconds).
	Histogram stats.Histogram
	// Interim are the --report-interval lines: transactions per second
	// at each reported second.
	Interim []benchresult.Point
}

// ParseSysbench reads a run's output; it must hold the transactions, the
// queries and the total time.
func ParseSysbench(out []byte) (*Sysbench, error) {
	r := &Sysbench{}
	var haveTxn, haveQ, haveTime, inHist bool
	var vals []float64
	var counts []uint64
	for _, raw := range strings.Split(string(out), "\n") {
		line := strings.TrimSpace(raw)
		switch {
		case strings.HasPrefix(line, "Latency histogram"):
			inHist = true
			continue
		case inHist && strings.HasPrefix(line, "value"):
			continue
		case inHist && strings.Contains(line, "|"):
			// "       2.106 |****                      12"
			v, rest, _ := strings.Cut(line, "|")
			f := strings.Fields(rest)
			ms, err1 := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if len(f) == 0 || err1 != nil || !(ms >= 0) || ms > 1e9 {
				return nil, fmt.Errorf("sysbench histogram: %q: want VALUE |*** COUNT", line)
			}
			n, err := strconv.ParseUint(f[len(f)-1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("sysbench histogram: %q: %w", line, err)
			}
			ns := math.Round(ms * 1e6)
			if len(vals) > 0 && ns <= vals[len(vals)-1] {
				return nil, fmt.Errorf("sysbench histogram: %q: values not ascending", line)
			}
			if n > 0 {
				vals, counts = append(vals, ns), append(counts, n)
			}
			continue
		case inHist:
			inHist = false
		}
		if strings.HasPrefix(line, "[") {
			// "[ 1s ] thds: 2 tps: 123.45 qps: 2480.01 (r/w/o: ...) lat (ms,99%): 20.00 ..."
			t, rest, ok := strings.Cut(strings.TrimPrefix(line, "["), "]")
			sec, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(t), "s"), 64)
			if !ok || err != nil || !(sec >= 0) || sec > 1e7 {
				continue
			}
			f := strings.Fields(rest)
			for i := 0; i+1 < len(f); i++ {
				if f[i] == "tps:" {
					if v, err := strconv.ParseFloat(f[i+1], 64); err == nil && v >= 0 && !math.IsInf(v, 0) {
						r.Interim = append(r.Interim, benchresult.Point{TMS: int64(sec * 1000), Value: v, Unit: benchresult.UnitOpsPerSec})
					}
				}
			}
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		switch k {
		case "transactions", "queries", "ignored errors":
			n, err := strconv.ParseUint(f[0], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("sysbench output: %q: %w", line, err)
			}
			rate := 0.0
			if len(f) > 1 {
				// "(9.87 per sec.)"
				rate, err = strconv.ParseFloat(strings.TrimPrefix(f[1], "("), 64)
				if err != nil || !(rate >= 0) || math.IsInf(rate, 0) {
					return nil, fmt.Errorf("sysbench output: %q: not a rate", line)
				}
			}
			switch k {
			case "transactions":
				r.Transactions, r.TPS, haveTxn = n, rate, true
			case "queries":
				r.Queries, r.QPS, haveQ = n, rate, true
			default:
				r.Errors = n
			}
		case "total time":
			s, err := strconv.ParseFloat(strings.TrimSuffix(f[0], "s"), 64)
			if err != nil || !(s >= 0) || s > 1e7 {
				return nil, fmt.Errorf("sysbench output: %q: not a time", line)
			}
			r.TotalTime, haveTime = time.Duration(s*float64(time.Second)), true
		}
	}
	if !haveTxn || !haveQ || !haveTime {
		return nil, fmt.Errorf("sysbench output has no transactions, queries or total time: %s", tail(out))
	}
	r.Histogram = stats.Histogram{Values: vals, Counts: counts}
	return r, nil
}

// Streams are the run's transactions (with the histogram's latency and
// the per-second rates) and its queries.
func (r *Sysbench) Streams(name string) []benchresult.Stream {
	txn := benchresult.Stream{Name: name, Op: OpTransaction, Ops: r.Transactions, RuntimeNS: int64(r.TotalTime), OpsPerSec: r.TPS,
		Latency: latencyOf(r.Histogram), Timeline: r.Interim}
	q := benchresult.Stream{Name: name, Op: OpQuery, Ops: r.Queries, RuntimeNS: int64(r.TotalTime), OpsPerSec: r.QPS}
	return []benchresult.Stream{txn, q}
}
