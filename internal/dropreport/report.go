package dropreport

import (
	"cmp"
	"fmt"
	"slices"
)

// Report is the result of `slowpath net drops`; its JSON form is
// documented in docs/json.md and is a stable API.
type Report struct {
	DurationSeconds float64 `json:"duration_seconds"`
	// DropReasons is false on kernels whose skb:kfree_skb has no reason:
	// then each entry of Reasons is a drop location (function).
	DropReasons bool `json:"drop_reasons"`
	// Attribution says what Reasons are keyed by: "reason" (the kernel's
	// enum skb_drop_reason) or "location" (no reasons on this kernel: the
	// function that freed the packet, or with stacks the caller of a free
	// helper; see ReasonCount.AttributedBy).
	Attribution string `json:"attribution"`
	// Tracepoint is skb:kfree_skb's prototype as the kernel's BTF gave it
	// (e.g. "kfree_skb(struct sk_buff *, void *)" on 5.10); empty when not
	// recorded.
	Tracepoint string `json:"tracepoint,omitempty"`
	Interface  string `json:"interface,omitempty"` // the --interface filter
	Total      uint64 `json:"total"`               // every counted free, hidden ones included
	// Reasons, most drops first.
	Reasons []ReasonCount `json:"reasons"`
	// Hidden lists reasons counted but left out of Reasons (NOT_SPECIFIED
	// unless --all): frees without a reason, mostly not drops.
	Hidden []Hidden `json:"hidden,omitempty"`
	// LostRecords drops were not counted: the in-kernel map was full.
	LostRecords uint64 `json:"lost_records"`
	// StackWalks and StackWalksFailed count stack walks (with stacks),
	// not drops: see Capture.StackWalksFailed.
	StackWalks       uint64 `json:"stack_walks,omitempty"`
	StackWalksFailed uint64 `json:"stack_walks_failed,omitempty"`
	// RecursionMisses is the kernel's count of skb:kfree_skb hits it did
	// not run the tracer for (already running on that CPU), over every
	// hit, drops or not, any interface; null when unreadable, with
	// RecursionMissesError saying why.
	RecursionMisses      *uint64 `json:"recursion_misses"`
	RecursionMissesError string  `json:"recursion_misses_error,omitempty"`
}

// ReasonCount is one drop reason (or, without reasons, one location).
type ReasonCount struct {
	Reason string `json:"reason"`
	// AttributedBy is how Reason was found: "reason" (the kernel's),
	// "location" (the function that freed the packet) or "stack" (for
	// some or all of the drops, the caller of a free helper such as
	// kfree_skb_list, found on the stack).
	AttributedBy string           `json:"attributed_by"`
	Count        uint64           `json:"count"`
	PerSecond    float64          `json:"per_second"`
	Layer        string           `json:"layer"`
	Check        string           `json:"check,omitempty"`
	Hint         string           `json:"hint,omitempty"`
	Locations    []LocationCount  `json:"locations"`
	Interfaces   []InterfaceCount `json:"interfaces"`
}

// LocationCount is a kernel function where drops of a reason happened.
type LocationCount struct {
	Function string `json:"function"` // or 0x... when not in kallsyms
	Count    uint64 `json:"count"`
}

// InterfaceCount is an interface drops of a reason belonged to.
type InterfaceCount struct {
	Ifindex uint32 `json:"ifindex"`
	// Netns is the inode of the interface's network namespace (0:
	// unknown); Name is only set for interfaces of slowpath's own
	// namespace, since indexes repeat across namespaces.
	Netns uint32 `json:"netns"`
	Name  string `json:"name,omitempty"`
	Count uint64 `json:"count"`
}

// Hidden is a reason counted but not listed.
type Hidden struct {
	Reason    string  `json:"reason"`
	Count     uint64  `json:"count"`
	PerSecond float64 `json:"per_second"`
}

// SummaryOptions shape a Report.
type SummaryOptions struct {
	// ShowUnspecified lists NOT_SPECIFIED among the reasons.
	ShowUnspecified bool
	// IfNames names the interfaces of the capture's network namespace
	// (Capture.Netns) by index, as read at the end of the run.
	IfNames map[uint32]string
	// Interface is the name of the --interface filter, if any.
	Interface string
}

// Summarize aggregates a capture by reason (or by location on kernels
// without reasons), symbolising locations with syms (nil: addresses).
func Summarize(c *Capture, syms *Symbols, o SummaryOptions) Report {
	rep := Report{
		DurationSeconds:      c.DurationSeconds,
		DropReasons:          c.Kernel.HasReasons,
		Attribution:          ByReason,
		Tracepoint:           c.Kernel.Prototype,
		Interface:            o.Interface,
		Reasons:              []ReasonCount{},
		LostRecords:          c.LostRecords,
		StackWalks:           c.StackWalks,
		StackWalksFailed:     c.StackWalksFailed,
		RecursionMisses:      c.RecursionMisses,
		RecursionMissesError: c.RecursionMissesError,
	}
	if !c.Kernel.HasReasons {
		rep.Attribution = ByLocation
	}
	type group struct {
		by     string
		count  uint64
		locs   map[string]uint64
		ifaces map[iface]uint64
	}
	groups := map[string]*group{}
	hidden := map[string]uint64{}
	for _, r := range c.Records {
		rep.Total += r.Count
		fn := syms.FuncName(r.Location)
		name, by := fn, ByReason
		if c.Kernel.HasReasons {
			name = c.Kernel.Name(r.Reason)
			if name == "NOT_SPECIFIED" && !o.ShowUnspecified {
				hidden[name] += r.Count
				continue
			}
		} else {
			var frames []string
			if st, ok := c.Stacks[r.StackID]; ok && r.StackID >= 0 {
				frames = symbolise(st, syms)
				slices.Reverse(frames)
			}
			name, by = AttributeLocation(fn, frames)
		}
		g := groups[name]
		if g == nil {
			g = &group{by: by, locs: map[string]uint64{}, ifaces: map[iface]uint64{}}
			groups[name] = g
		} else if by == ByStack {
			// Some of its drops were only found through the stack.
			g.by = ByStack
		}
		g.count += r.Count
		g.locs[fn] += r.Count
		g.ifaces[iface{r.Ifindex, r.Netns}] += r.Count
	}
	for name, g := range groups {
		rc := ReasonCount{Reason: name, AttributedBy: g.by, Count: g.count, PerSecond: rate(g.count, c.DurationSeconds)}
		var m Meaning
		if c.Kernel.HasReasons {
			m = MeaningOf(name)
		} else {
			var known string
			known, m, _ = LocationMeaning(name)
			if known != "" && m.Hint == "" {
				m.Hint = known
			} else if known != "" {
				m.Hint = known + ": " + m.Hint
			}
		}
		rc.Layer, rc.Check, rc.Hint = m.Layer, m.Check, m.Hint
		for fn, n := range g.locs {
			rc.Locations = append(rc.Locations, LocationCount{Function: fn, Count: n})
		}
		slices.SortFunc(rc.Locations, func(a, b LocationCount) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Function, b.Function))
		})
		for f, n := range g.ifaces {
			ic := InterfaceCount{Ifindex: f.index, Netns: f.netns, Count: n}
			if f.netns == c.Netns && f.index != 0 {
				ic.Name = o.IfNames[f.index]
			}
			rc.Interfaces = append(rc.Interfaces, ic)
		}
		slices.SortFunc(rc.Interfaces, func(a, b InterfaceCount) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Netns, b.Netns), cmp.Compare(a.Ifindex, b.Ifindex))
		})
		rep.Reasons = append(rep.Reasons, rc)
	}
	slices.SortFunc(rep.Reasons, func(a, b ReasonCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Reason, b.Reason))
	})
	for name, n := range hidden {
		rep.Hidden = append(rep.Hidden, Hidden{Reason: name, Count: n, PerSecond: rate(n, c.DurationSeconds)})
	}
	slices.SortFunc(rep.Hidden, func(a, b Hidden) int { return cmp.Compare(a.Reason, b.Reason) })
	return rep
}

type iface struct{ index, netns uint32 }

func rate(n uint64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	// Two decimals keep JSON output stable across float formatting.
	return float64(int64(float64(n)/seconds*100+0.5)) / 100
}

// ReasonCountOf returns the count of reason in r, 0 if absent.
func (r Report) ReasonCountOf(reason string) uint64 {
	for _, rc := range r.Reasons {
		if rc.Reason == reason {
			return rc.Count
		}
	}
	for _, h := range r.Hidden {
		if h.Reason == reason {
			return h.Count
		}
	}
	return 0
}

// String is a short form for logs.
func (rc ReasonCount) String() string { return fmt.Sprintf("%s=%d", rc.Reason, rc.Count) }
