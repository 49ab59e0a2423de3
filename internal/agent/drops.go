package agent

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slowpath/slowpath/internal/dropreport"
)

var descSkbDrops = newDesc(ns+"_skb_drops_total",
	"Packets the kernel freed as dropped (skb:kfree_skb), by drop reason (enum skb_drop_reason) and the data-path layer it belongs to; NOT_SPECIFIED frees are left out (mostly not drops, see docs/drops.md).",
	[]string{"reason", "layer"})

// DropsReader is what --collector.drops reads: the agent's per-reason
// eBPF counter (reasoncounter.Counter), or recorded captures in tests.
type DropsReader interface {
	Read() (*dropreport.Capture, error)
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

// emitDrops exports the counts as read, as node_exporter exports the
// kernel's counters: no state is kept between scrapes. The agent's counter
// is a per-CPU array whose slots only grow while it is loaded, and a read
// sums every possible CPU's slot (kernel/bpf/arraymap.c,
// bpf_percpu_array_copy), so a read is never lower than the one before
// while the map lives. A lower value means the map was created anew (the
// agent restarted): that is a counter reset, which Prometheus' rate() and
// increase() handle. Holding the old maximum instead would hide every
// drop after a reset until the new count passed it.
func emitDrops(out *sink, d DropsReader) bool {
	c, err := d.Read()
	if err != nil {
		return false
	}
	counts := DropCounts(c)
	reasons := make([]string, 0, len(counts))
	for r := range counts {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		out.add(descSkbDrops, prometheus.CounterValue, float64(counts[r]), r, dropreport.MeaningOf(r).Layer)
	}
	return true
}
