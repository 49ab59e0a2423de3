package agent

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slowpath/slowpath/internal/dropreport"
)

var descSkbDrops = prometheus.NewDesc(ns+"_skb_drops_total",
	"Packets the kernel freed as dropped (skb:kfree_skb), by drop reason (enum skb_drop_reason) and the data-path layer it belongs to; NOT_SPECIFIED frees are left out (mostly not drops, see docs/drops.md).",
	[]string{"reason", "layer"}, nil)

// DropsReader is what --collector.drops reads: the eBPF drop counter of
// `slowpath net drops` (dropcounter.Tracer), or a recorded capture in tests.
type DropsReader interface {
	Read() (*dropreport.Capture, error)
}

// dropTotals keeps the exported counters monotonic: the tracer reads its
// maps while attached, and a drop moving from the per-CPU run to the hash
// during a read can be seen twice, then once. A counter going backwards
// would read as a reset in Prometheus.
type dropTotals struct {
	mu   sync.Mutex
	last map[[2]string]uint64
}

// DropCounts sums a capture by reason name, leaving out what is not a drop. A
// kernel without drop reasons (before 5.17) gives nothing: there only the
// location tells drops apart, and locations are not bounded labels.
func DropCounts(c *dropreport.Capture) map[string]uint64 {
	out := map[string]uint64{}
	if !c.Kernel.HasReasons {
		return out
	}
	for _, r := range c.Records {
		name := c.Kernel.Name(r.Reason)
		// NOT_SPECIFIED frees are mostly not drops (docs/drops.md);
		// NOT_DROPPED_YET and CONSUMED are not drops at all (a counter
		// attached to the drop function, not the tracepoint, sees them).
		if name == "NOT_SPECIFIED" || name == "NOT_DROPPED_YET" || name == "CONSUMED" {
			continue
		}
		out[name] += r.Count
	}
	return out
}

func (totals *dropTotals) emit(ch chan<- prometheus.Metric, d DropsReader) bool {
	c, err := d.Read()
	if err != nil {
		return false
	}
	counts := DropCounts(c)
	totals.mu.Lock()
	defer totals.mu.Unlock()
	if totals.last == nil {
		totals.last = map[[2]string]uint64{}
	}
	for reason, n := range counts {
		k := [2]string{reason, dropreport.MeaningOf(reason).Layer}
		if n > totals.last[k] {
			totals.last[k] = n
		}
	}
	keys := make([][2]string, 0, len(totals.last))
	for k := range totals.last {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0] < keys[j][0] })
	for _, k := range keys {
		ch <- prometheus.MustNewConstMetric(descSkbDrops, prometheus.CounterValue, float64(totals.last[k]), k[0], k[1])
	}
	return true
}
