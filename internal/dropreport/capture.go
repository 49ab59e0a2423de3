// Package dropreport turns the in-kernel drop counters of `slowpath net drops`
// into a report: it names drop reasons (from the kernel's BTF enum
// skb_drop_reason, read by the loader), maps them to the layer of the data
// path and the slowpath check they relate to, symbolises drop locations
// and stacks with a /proc/kallsyms table, and folds stacks for flame
// graphs. It is pure: the loader in internal/bpf/dropcounter reads the kernel,
// this package only sees a Capture, so recorded captures are test input.
// internal/report/dropsreport renders the Report and the folded stacks.
package dropreport

import (
	"encoding/json"
	"fmt"

	"github.com/slowpath/slowpath/internal/recordkind"
)

// NoStack is the stack id of a record collected without a stack.
const NoStack = -1

// Record is one entry of the in-kernel drops map, summed over CPUs.
type Record struct {
	Reason   uint32 `json:"reason"`   // enum skb_drop_reason value; 0 when the kernel has no reasons
	Location uint64 `json:"location"` // return address inside the function that freed the skb
	Ifindex  uint32 `json:"ifindex"`  // skb->dev, else skb->skb_iif; 0 when neither is set
	Netns    uint32 `json:"netns"`    // inode of skb->dev's network namespace; 0 when unknown
	StackID  int32  `json:"stack_id"` // key into Capture.Stacks, or NoStack
	Count    uint64 `json:"count"`
}

// Kernel describes what the running kernel offers, learned from its BTF.
type Kernel struct {
	// HasReasons is true when skb:kfree_skb carries a drop reason (5.17+,
	// or a backport).
	HasReasons bool `json:"has_reasons"`
	// Reasons names enum skb_drop_reason values without the
	// SKB_DROP_REASON_ prefix.
	Reasons map[uint32]string `json:"reasons,omitempty"`
	// Prototype is skb:kfree_skb's argument list from the kernel's BTF
	// (btf_trace_kfree_skb) by type, e.g. "kfree_skb(struct sk_buff *,
	// void *, enum skb_drop_reason, struct sock *)": what the tracer was
	// loaded for.
	Prototype string `json:"prototype,omitempty"`
}

// Unspecified returns the value of NOT_SPECIFIED in k's enum, which moved
// between kernels (0 on 5.17, 2 once SKB_NOT_DROPPED_YET and SKB_CONSUMED
// were added before it).
func (k Kernel) Unspecified() (uint32, bool) {
	for v, n := range k.Reasons {
		if n == "NOT_SPECIFIED" {
			return v, true
		}
	}
	return 0, false
}

// CaptureKind and CaptureSchemaVersion open a capture written with
// --record since they were added; one without them (written before) reads
// as version 1.
const (
	CaptureKind          = recordkind.Drops
	CaptureSchemaVersion = 1
)

// Capture is everything read back from the kernel after a run: what
// `net drops --record` writes and --replay reads (DecodeCapture).
type Capture struct {
	Kind          string `json:"kind,omitempty"`           // CaptureKind when recorded
	SchemaVersion int    `json:"schema_version,omitempty"` // CaptureSchemaVersion when recorded
	Kernel        Kernel `json:"kernel"`
	// Netns is the inode of the network namespace the capture was read
	// from: interfaces of records in it can be named.
	Netns           uint32             `json:"netns"`
	DurationSeconds float64            `json:"duration_seconds"`
	Records         []Record           `json:"records"`
	Stacks          map[int32][]uint64 `json:"stacks,omitempty"` // innermost frame first
	// StackEvery is how stacks were sampled: one walk per StackEvery
	// drops of a run of identical drops on a CPU, the drops in between
	// counted under the last stack walked (1: every drop). 0: no stacks.
	StackEvery uint32 `json:"stack_every,omitempty"`
	// StackWalks is how many stacks were walked (bpf_get_stackid calls).
	StackWalks uint64 `json:"stack_walks,omitempty"`
	// StackWalksFailed counts walks that returned no stack id (stack map
	// full, or another stack with the same hash). It counts walks, not
	// drops: with sampling, the drops counted under a failed walk are the
	// records with no stack.
	StackWalksFailed uint64 `json:"stack_walks_failed,omitempty"`
	// LostRecords counts drops not counted because the map was full.
	LostRecords uint64 `json:"lost_records,omitempty"`
	// RecursionMisses is the kernel's count of times it skipped the
	// program because it was already running on that CPU
	// (bpf_prog_info.recursion_misses, 5.12+). It is over every hit of
	// skb:kfree_skb, before the program filters by interface and including
	// frees that are not drops: an upper bound on drops lost to recursion,
	// not on all drops not seen (docs/drops.md, Accuracy: the kernel also
	// skips some hits without counting them). nil when it could not be
	// read; RecursionMissesError says why.
	RecursionMisses      *uint64 `json:"recursion_misses,omitempty"`
	RecursionMissesError string  `json:"recursion_misses_error,omitempty"`
	// IfNames, when set, names the interfaces of namespace Netns by index,
	// as they were when the capture was recorded.
	IfNames map[uint32]string `json:"ifnames,omitempty"`
	// Symbols, when set, name the addresses above (see EmbedSymbols).
	Symbols []Symbol `json:"symbols,omitempty"`
}

// Stamp sets the kind and version this slowpath records.
func (c *Capture) Stamp() { c.Kind, c.SchemaVersion = CaptureKind, CaptureSchemaVersion }

// DecodeCapture reads a recorded capture.
func DecodeCapture(b []byte) (*Capture, error) {
	env, err := recordkind.Read(b)
	if err != nil {
		if what := recordkind.Describe(b); what != "" {
			return nil, fmt.Errorf("not a slowpath drop recording: it is %s", what)
		}
		return nil, err
	}
	if err := env.Check(CaptureKind, CaptureSchemaVersion, true); err != nil {
		return nil, err
	}
	var c Capture
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// EmbedSymbols stores in c the symbols that name its locations and stack
// frames, so a recorded capture can be replayed on another host (or in a
// test) without that host's /proc/kallsyms.
func (c *Capture) EmbedSymbols(syms *Symbols) {
	seen := map[uint64]bool{}
	add := func(addr uint64) {
		for _, a := range []uint64{addr, addr - 1} {
			if sym, _, ok := syms.Lookup(a); ok && !seen[sym.Addr] {
				seen[sym.Addr] = true
				c.Symbols = append(c.Symbols, sym)
			}
		}
	}
	for _, r := range c.Records {
		add(r.Location)
	}
	for _, st := range c.Stacks {
		for _, a := range st {
			add(a)
		}
	}
	sortSymbols(c.Symbols)
}
