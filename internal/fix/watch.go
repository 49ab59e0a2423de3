package fix

import (
	"fmt"
	"strings"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/netmodel"
)

// watched names the counters each fix should lower: the ones its check
// reads (internal/check/netcheck).
var watched = map[string]struct {
	layer    netmodel.Layer
	counters []string // all of the layer when empty
	perIface bool     // only the entry's subject interface
}{
	"net.backlog-drops":   {layer: netmodel.LayerBacklog, counters: []string{"softnet_dropped"}},
	"net.time-squeeze":    {layer: netmodel.LayerBudget, counters: []string{"softnet_time_squeeze"}},
	"net.socket-rcvbuf":   {layer: netmodel.LayerSocket, counters: []string{"Udp.RcvbufErrors", "Udp6.RcvbufErrors"}},
	"net.ring-undersized": {layer: netmodel.LayerRing, perIface: true},
}

// WatchedRate is the summed per-second rate of the counters e's fix should
// lower, and which they are. ok is false when the fix has no counters to
// watch (dm-crypt flags) or m has no rates (one sample).
func WatchedRate(m *netmodel.Model, e Entry) (rate float64, names []string, ok bool) {
	w, has := watched[e.ID]
	if !has || m == nil || m.IntervalSeconds == 0 {
		return 0, nil, false
	}
	for _, c := range m.Counters {
		if c.Layer != w.layer || c.Aggregate || c.PerSecond == nil {
			continue
		}
		if len(w.counters) > 0 && !contains(w.counters, c.Counter) {
			continue
		}
		if w.perIface && c.Subject != e.Subject {
			continue
		}
		rate += *c.PerSecond
		names = append(names, c.Counter+" "+c.Subject)
	}
	if len(names) == 0 {
		names = append(names, string(w.layer)+" counters (none non-zero)")
	}
	return rate, names, true
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Verdict is whether an applied entry holds after the change.
type Verdict struct {
	Holds bool
	// Why says why it does not hold; Counters describes the watched rates.
	Why, Counters string
}

// Verify judges an applied entry from a collection made after the change:
// it holds when its finding no longer fails on its subject and the
// counters its fix should lower did not rise compared with before.
func Verify(e Entry, before *netmodel.Model, after []check.Finding, afterNet *netmodel.Model) Verdict {
	for _, f := range after {
		if f.ID == e.ID && f.Subject == e.Subject && f.Status == check.Fail {
			return Verdict{Why: "the finding is still there: " + f.Summary}
		}
	}
	rb, names, ok := WatchedRate(before, e)
	if !ok {
		return Verdict{Holds: true}
	}
	ra, _, okAfter := WatchedRate(afterNet, e)
	if !okAfter {
		return Verdict{Holds: true, Counters: "counters not sampled after the change (--watch 0)"}
	}
	v := Verdict{Holds: true, Counters: fmt.Sprintf("%s: %.1f/s before, %.1f/s after", strings.Join(names, ", "), rb, ra)}
	if ra > rb && ra > 0 {
		v.Holds, v.Why = false, fmt.Sprintf("its counters got worse: %.1f/s before, %.1f/s after", rb, ra)
	}
	return v
}
