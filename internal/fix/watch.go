package fix

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/check"
	// The check packages register their checks, and the counters their
	// fixes should lower, in init.
	_ "github.com/slowpath/slowpath/internal/check/netcheck"
	_ "github.com/slowpath/slowpath/internal/check/storagecheck"
	"github.com/slowpath/slowpath/internal/model/netmodel"
)

// MinWatch is the shortest counter window --apply accepts, in seconds: a
// verdict needs two samples some time apart, and windows shorter than
// the kernel's softnet accounting of a busy second say little.
const MinWatch = 2

// NoiseSigmas is the counter verdicts' noise margin in standard
// deviations. Drops are rare independent events: a count over a window is
// close to Poisson, so for equal rates the difference of the rates of
// two windows has standard deviation sqrt(before/T1² + after/T2²) (counts
// over their windows). 3 sigmas leave a change of that size to chance
// about 0.3% of the time (two-sided, normal approximation), docs/fix.md.
const NoiseSigmas = 3

// watch is the counters e's fix should lower, as its check declares them
// (check.Check.Watch); nil when none measures the fix.
func watch(e Entry) *check.Watch {
	c, _ := check.Lookup(e.ID)
	return c.Watch
}

// Watched reports whether e's fix has counters that should fall.
func Watched(e Entry) bool { return watch(e) != nil }

// Window is the watched counters of one entry over one sampling window.
type Window struct {
	Count   uint64  // events counted over the window
	Seconds float64 // the window's length
	Names   []string
}

// Rate is events per second.
func (w Window) Rate() float64 { return float64(w.Count) / w.Seconds }

// WatchedWindow sums, over m's window, the counters e's fix should lower.
// ok is false when the fix has no counters to watch (dm-crypt flags) or m
// has no rates (one sample).
func WatchedWindow(m *netmodel.Model, e Entry) (w Window, ok bool) {
	spec := watch(e)
	if spec == nil || m == nil || m.IntervalSeconds <= 0 {
		return Window{}, false
	}
	w.Seconds = m.IntervalSeconds
	for _, c := range m.Counters {
		if c.Layer != spec.Layer || c.Aggregate || c.Delta == nil {
			continue
		}
		if len(spec.Counters) > 0 && !slices.Contains(spec.Counters, c.Counter) {
			continue
		}
		if spec.PerInterface && c.Subject != e.Subject {
			continue
		}
		w.Count += *c.Delta
		w.Names = append(w.Names, c.Counter+" "+c.Subject)
	}
	if len(w.Names) == 0 {
		w.Names = append(w.Names, string(spec.Layer)+" counters (none non-zero)")
	}
	return w, true
}

// Status is what a verification could establish about an applied entry.
type Status string

const (
	// Verified: the finding is gone and its counters fell beyond the
	// noise margin.
	Verified Status = "verified"
	// NotProven: the finding is gone but nothing measured the change
	// (dm-crypt flags change no counter), or the counters did not move
	// beyond the noise margin. The change is kept and said to be
	// unproven.
	NotProven Status = "applied, not proven"
	// Failed: the finding is still there or the counters rose beyond the
	// noise margin; the change is rolled back.
	Failed Status = "rolled back"
)

// Verdict is whether an applied entry holds after the change.
type Verdict struct {
	Status Status
	// Why says why it failed or is not proven; Counters describes the
	// watched rates and the margin.
	Why, Counters string
}

// Holds reports whether the change stays.
func (v Verdict) Holds() bool { return v.Status != Failed }

// ProveHint is how a storage change is measured instead.
const ProveHint = "measure it with slowpath fix --apply --prove PROFILE --dir DIR (docs/fix.md)"

// Verify judges an applied entry from counters sampled over a window
// before the change (before) and an equal window after it (afterNet),
// with the findings of the collection after it. A change fails when its
// finding still fails on its subject, or when its counters rose by more
// than NoiseSigmas standard deviations; it is verified only when its
// counters fell by more than that; otherwise it is not proven.
func Verify(e Entry, before *netmodel.Model, after []check.Finding, afterNet *netmodel.Model) Verdict {
	for _, f := range after {
		if f.ID == e.ID && f.Subject == e.Subject && f.Status == check.Fail {
			return Verdict{Status: Failed, Why: "the finding is still there: " + f.Summary}
		}
	}
	if !Watched(e) {
		return Verdict{Status: NotProven, Why: "no counter measures this change; " + ProveHint}
	}
	wb, okBefore := WatchedWindow(before, e)
	wa, okAfter := WatchedWindow(afterNet, e)
	if !okBefore || !okAfter {
		return Verdict{Status: NotProven, Why: "its counters were not sampled over a window before and after the change"}
	}
	d := wa.Rate() - wb.Rate()
	margin := NoiseSigmas * math.Sqrt(float64(wb.Count)/(wb.Seconds*wb.Seconds)+float64(wa.Count)/(wa.Seconds*wa.Seconds))
	v := Verdict{Counters: fmt.Sprintf("%s: %.1f/s over %.1f s before, %.1f/s over %.1f s after (noise margin ±%.1f/s)",
		strings.Join(wb.Names, ", "), wb.Rate(), wb.Seconds, wa.Rate(), wa.Seconds, margin)}
	switch {
	case d > margin:
		v.Status, v.Why = Failed, fmt.Sprintf("its counters got worse: %.1f/s before, %.1f/s after (beyond the noise margin ±%.1f/s)", wb.Rate(), wa.Rate(), margin)
	case -d > margin:
		v.Status = Verified
	default:
		v.Status, v.Why = NotProven, fmt.Sprintf("its counters did not fall beyond the noise margin: %.1f/s before, %.1f/s after (±%.1f/s)", wb.Rate(), wa.Rate(), margin)
	}
	return v
}
