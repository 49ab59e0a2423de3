// Package dropcounter loads the eBPF program behind `slowpath net drops`: a BTF
// tracepoint on skb:kfree_skb that counts dropped packets in a per-CPU
// hash keyed by (reason, location, ifindex, stack id), and optionally
// records kernel stacks in a stack map. Nothing is copied to user space
// per packet; Read collects the maps once.
//
// The C source is drops.bpf.c; bpf_bpfel.go and bpf_bpfel.o are generated
// by bpf2go (`make generate`) and committed, so building needs no clang.
package dropcounter

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/bpf/bpfload"
	"github.com/slowpath/slowpath/internal/dropreport"
)

// Options select what the program collects.
type Options struct {
	// Stacks records a kernel stack per drop (bpf_get_stackid).
	Stacks bool
	// StacksUnspecified also records stacks of NOT_SPECIFIED frees, which
	// are skipped by default because they are frequent and mostly not
	// drops.
	StacksUnspecified bool
	// StackEvery samples stack walks, which cost microseconds each: on
	// each CPU a drop unlike the last one walked (reason, location,
	// interface) has its stack walked, then one in StackEvery drops like
	// it; the drops in between count under the last stack walked. Counts
	// per reason, location and interface stay exact. 0 or 1 walks every
	// drop's stack.
	StackEvery uint32
	// Ifindex counts only drops whose skb belongs to this interface of
	// network namespace Netns (an inode number, see NetnsOf); 0 counts all.
	Ifindex uint32
	Netns   uint32

	// ignoreReasons loads the program as for a kernel without drop
	// reasons, so tests exercise that path on a kernel that has them.
	ignoreReasons bool
}

// Errors a caller may want to tell apart.
var (
	ErrNoBTF             = bpfload.ErrNoBTF
	ErrTracepointMissing = errors.New("tracepoint skb:kfree_skb not found in the kernel's BTF (btf_trace_kfree_skb): the kernel is too old or built without it")
)

// CheckPrivileges says which capabilities are missing to load a tracing
// program: CAP_BPF and CAP_PERFMON (5.8+), or CAP_SYS_ADMIN which covers
// both.
func CheckPrivileges() error { return bpfload.CheckPrivileges("loading the eBPF drop tracer") }

// ProbeKernel reads what the kernel's BTF says about skb:kfree_skb: whether
// it carries a drop reason and the reason names. It needs no privileges.
func ProbeKernel() (dropreport.Kernel, error) {
	spec, err := bpfload.KernelSpec()
	if err != nil {
		return dropreport.Kernel{}, err
	}
	return probeSpec(spec)
}

func probeSpec(spec *btf.Spec) (dropreport.Kernel, error) {
	var k dropreport.Kernel
	// The tracepoint's prototype: void (*)(void *__data, struct sk_buff *skb,
	// void *location[, enum skb_drop_reason reason[, struct sock *rx_sk]]).
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_kfree_skb", &td); err != nil {
		return k, ErrTracepointMissing
	}
	ptr, ok := td.Type.(*btf.Pointer)
	if !ok {
		return k, fmt.Errorf("btf_trace_kfree_skb is %s, not a function pointer", td.Type)
	}
	proto, ok := ptr.Target.(*btf.FuncProto)
	if !ok || len(proto.Params) < 3 {
		return k, fmt.Errorf("btf_trace_kfree_skb has an unexpected prototype %v", ptr.Target)
	}
	// The tracepoint's own arguments, after the __data of every tracepoint.
	args := proto.Params[1:]
	// The kernel's BTF names no parameters of a tracepoint's prototype:
	// its types say what it is.
	types := make([]string, len(args))
	for i, p := range args {
		types[i] = typeName(p.Type)
	}
	k.Prototype = "kfree_skb(" + strings.Join(types, ", ") + ")"
	i, e := ReasonParam(args)
	if e == nil {
		return k, nil
	}
	// drops.bpf.c reads the reason as ctx[2]: right for (skb, location,
	// reason) on 5.17-6.10 and (skb, location, reason, rx_sk) on 6.11+,
	// where rx_sk was appended after it (include/trace/events/skb.h in
	// 6.1 and 6.12). A kernel that put it elsewhere gets a refusal, never
	// a wrong reason.
	if i != 2 {
		return k, fmt.Errorf("skb:kfree_skb has its drop reason as argument %d (%s); this build reads argument 2: %w", i, k.Prototype, ErrReasonMoved)
	}
	k.HasReasons = true
	k.Reasons = make(map[uint32]string, len(e.Values))
	for _, v := range e.Values {
		if name, ok := dropreport.ReasonName(v.Name); ok {
			k.Reasons[uint32(v.Value)] = name
		}
	}
	return k, nil
}

// typeName spells a parameter type as C does, far enough to tell
// skb:kfree_skb's generations apart.
func typeName(t btf.Type) string {
	switch t := t.(type) {
	case *btf.Pointer:
		return typeName(t.Target) + " *"
	case *btf.Struct:
		return "struct " + t.Name
	case *btf.Enum:
		return "enum " + t.Name
	case *btf.Void:
		return "void"
	case *btf.Const:
		return "const " + typeName(t.Type)
	case *btf.Volatile:
		return typeName(t.Type)
	case nil:
		return "void"
	default:
		if n := t.TypeName(); n != "" {
			return n
		}
		return "?"
	}
}

// ErrReasonMoved is returned for a kernel whose drop reason argument is
// not where the compiled program reads it.
var ErrReasonMoved = errors.New("update slowpath for this kernel")

// ReasonParam finds the argument of type enum skb_drop_reason among params
// (a tracepoint's or a function's, from the kernel's BTF) and returns its
// index and the enum, or -1 and nil when there is none: kernels before
// 5.17 (or without a backport) have no such argument.
func ReasonParam(params []btf.FuncParam) (int, *btf.Enum) {
	for i, p := range params {
		if e, ok := btf.UnderlyingType(p.Type).(*btf.Enum); ok && e.Name == "skb_drop_reason" {
			return i, e
		}
	}
	return -1, nil
}

// Tracer is a loaded and attached drop counter. Close detaches it.
type Tracer struct {
	objs   bpfObjects
	link   link.Link
	kernel dropreport.Kernel
	// stackEvery is Options.StackEvery when stacks are recorded, else 0.
	stackEvery uint32
	start      time.Time
	// stopped is when Stop detached the program; zero while attached.
	stopped time.Time
}

// Start checks privileges, loads the program for this kernel and attaches
// it. The caller must Close the Tracer.
func Start(opts Options) (*Tracer, error) {
	kernel, err := ProbeKernel()
	if err != nil {
		return nil, err
	}
	if opts.ignoreReasons {
		kernel = dropreport.Kernel{}
	}
	if err := CheckPrivileges(); err != nil {
		return nil, err
	}
	if err := bpfload.RemoveMemlock(); err != nil {
		return nil, err
	}
	spec, err := loadBpf()
	if err != nil {
		return nil, err
	}
	unspecified, _ := kernel.Unspecified()
	every := max(opts.StackEvery, 1)
	consts := map[string]any{
		bpfVarHasReason:         b2u8(kernel.HasReasons),
		bpfVarWithStacks:        b2u8(opts.Stacks),
		bpfVarStackUnspecified:  b2u8(opts.StacksUnspecified),
		bpfVarUnspecifiedReason: unspecified,
		bpfVarFilterIfindex:     opts.Ifindex,
		bpfVarFilterNetns:       opts.Netns,
		bpfVarStackEvery:        every,
	}
	if err := bpfload.SetConstants(spec, consts); err != nil {
		return nil, err
	}
	if !opts.Stacks {
		// The stack map is unused: keep it minimal.
		spec.Maps[bpfMapStacks].MaxEntries = 1
	}
	t := &Tracer{kernel: kernel}
	if opts.Stacks {
		t.stackEvery = every
	}
	if err := spec.LoadAndAssign(&t.objs, nil); err != nil {
		return nil, bpfload.LoadError("drop tracer", err)
	}
	l, err := link.AttachTracing(link.TracingOptions{Program: t.objs.OnKfreeSkb})
	if err != nil {
		t.objs.Close()
		return nil, fmt.Errorf("attach to tracepoint skb:kfree_skb: %w", err)
	}
	t.link = l
	t.start = time.Now()
	return t, nil
}

func b2u8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// Stop detaches the program; the maps stay readable until Close. Read
// after Stop is exact; while attached, a drop may be counted twice or not
// at all when it moves from the per-CPU run to the hash during Read.
func (t *Tracer) Stop() error {
	if t.link == nil {
		return nil
	}
	err := t.link.Close()
	t.link = nil
	if t.stopped.IsZero() {
		t.stopped = time.Now()
	}
	return err
}

// Read returns the counters collected so far.
func (t *Tracer) Read() (*dropreport.Capture, error) {
	end := t.stopped
	if end.IsZero() {
		end = time.Now()
	}
	c := &dropreport.Capture{Kernel: t.kernel, DurationSeconds: end.Sub(t.start).Seconds(), StackEvery: t.stackEvery}
	var (
		key    bpfDropKey
		counts []uint64
	)
	sums := map[bpfDropKey]uint64{}
	it := t.objs.Drops.Iterate()
	for it.Next(&key, &counts) {
		for _, n := range counts {
			sums[key] += n
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read drops map: %w", err)
	}
	// Each CPU's run of identical drops not yet flushed to the hash.
	var last []bpfLastDrop
	if err := t.objs.LastDrops.Lookup(uint32(0), &last); err != nil {
		return nil, fmt.Errorf("read last_drops map: %w", err)
	}
	for _, l := range last {
		if l.Pending > 0 {
			sums[l.Key] += l.Pending
		}
	}
	stackIDs := map[int32]bool{}
	for key, sum := range sums {
		c.Records = append(c.Records, dropreport.Record{Reason: key.Reason, Location: key.Location, Ifindex: key.Ifindex, Netns: key.Netns, StackID: key.StackId, Count: sum})
		if key.StackId >= 0 {
			stackIDs[key.StackId] = true
		}
	}
	// Map iteration order is random: sort, so equal captures are equal.
	slices.SortFunc(c.Records, func(a, b dropreport.Record) int {
		return cmp.Or(cmp.Compare(a.Reason, b.Reason), cmp.Compare(a.Location, b.Location), cmp.Compare(a.Netns, b.Netns),
			cmp.Compare(a.Ifindex, b.Ifindex), cmp.Compare(a.StackID, b.StackID))
	})
	if len(stackIDs) > 0 {
		c.Stacks = make(map[int32][]uint64, len(stackIDs))
		frames := make([]uint64, t.objs.Stacks.ValueSize()/8)
		for id := range stackIDs {
			if err := t.objs.Stacks.Lookup(uint32(id), &frames); err != nil {
				// A stack id whose trace was replaced: keep the count, lose the stack.
				continue
			}
			var st []uint64
			for _, f := range frames {
				if f == 0 {
					break
				}
				st = append(st, f)
			}
			c.Stacks[id] = st
		}
	}
	// The program's own counters, in the order of its enum.
	var n []uint64
	for i, dst := range []*uint64{&c.LostRecords, &c.StackWalksFailed, &c.StackWalks} {
		if err := t.objs.Counters.Lookup(uint32(i), &n); err != nil {
			return nil, fmt.Errorf("read counters map: %w", err)
		}
		for _, v := range n {
			*dst += v
		}
	}
	// The kernel skips a tracing program that fires while the same
	// program runs on that CPU (a softirq interrupting it) and counts it;
	// the skipped hits may be drops or not, on any interface.
	c.RecursionMisses, c.RecursionMissesError = recursionMisses(t.objs.OnKfreeSkb.Stats())
	return c, nil
}

// recursionMisses reads the kernel's recursion-miss count, or says why
// it is unknown. Since 6.1 the kernel skips a raw-tracepoint program
// (tp_btf is one) that fires again on a CPU where it is running, and
// counts it (commit 05b24ff9b2cf, "bpf: Prevent bpf program recursion for
// raw tracepoint probes"; the counter is bpf_prog_info.recursion_misses,
// 5.12, commit 9ed9e9ba2337). Earlier kernels never skip it, so their 0
// is a true 0.
func recursionMisses(st *ebpf.ProgramStats, err error) (*uint64, string) {
	if err != nil {
		return nil, fmt.Sprintf("read program stats: %v", err)
	}
	n := st.RecursionMisses
	return &n, ""
}

// Stats returns the program's run count, run time (when
// kernel.bpf_stats_enabled is on) and recursion misses.
func (t *Tracer) Stats() (*ebpf.ProgramStats, error) { return t.objs.OnKfreeSkb.Stats() }

// Close detaches the program and frees its maps.
func (t *Tracer) Close() error {
	return errors.Join(t.Stop(), t.objs.Close())
}

// NetnsOf returns the inode number of the network namespace at path
// (/proc/self/ns/net for ours), as the kernel's net->ns.inum.
func NetnsOf(path string) (uint32, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", path, err)
	}
	return uint32(st.Ino), nil
}
