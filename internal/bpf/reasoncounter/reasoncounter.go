// Package reasoncounter is the eBPF drop counter of `slowpath agent
// --collector.drops`: one counter per drop reason, nothing else. The agent
// exports drops by reason only, so it needs neither the location, the
// interface nor the namespace that `slowpath net drops` keys its hash by
// (internal/bpf/dropcounter); its program is eight instructions: read the
// reason argument, bump a per-CPU array slot.
//
// It attaches either to the BTF tracepoint skb:kfree_skb (tp_btf), as net
// drops does, or with fentry to the kernel function every drop goes
// through (sk_skb_reason_drop on 6.11+, kfree_skb_reason on 5.17–6.10).
// docs/drops.md compares the two (BenchmarkAttachCost); the agent uses
// tp_btf, see there why.
//
// The program is assembled here (cilium/ebpf asm) rather than compiled from
// C: it has no struct access to relocate, and building it needs no clang.
package reasoncounter

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"

	"github.com/slowpath/slowpath/internal/bpf/dropcounter"
	"github.com/slowpath/slowpath/internal/dropreport"
)

// Attach is how the program is attached.
type Attach string

const (
	// TPBTF is the BTF tracepoint skb:kfree_skb (include/trace/events/skb.h):
	// it fires when an skb is freed as dropped, with the reason as its third
	// argument on 5.17+.
	TPBTF Attach = "tp_btf"
	// Fentry is an fentry program on the function that drops: it fires on
	// every call, also for an skb whose last reference is not yet dropped
	// (it is freed, and traced, later) and for reason SKB_CONSUMED passed
	// by callers that free a consumed skb this way (net/core/skbuff.c,
	// __sk_skb_reason_drop).
	Fentry Attach = "fentry"
)

// Slots is the size of the counter array: enum skb_drop_reason has ~120
// core values on 6.x. Reasons at or above it (subsystem reasons carry the
// subsystem in bits 16+, include/net/dropreason.h) count in the last slot,
// named OTHER_SUBSYSTEM.
const Slots = 1024

// OtherSubsystem names the last slot.
const OtherSubsystem = "OTHER_SUBSYSTEM"

// Counter is a loaded and attached reason counter. Close detaches it.
type Counter struct {
	Attach Attach
	Target string // tracepoint or function attached to
	// ReasonArg is the index of the reason among Target's arguments, as
	// the kernel's BTF gives it (2 on the tracepoint; 2 on
	// sk_skb_reason_drop, 1 on kfree_skb_reason).
	ReasonArg int16
	kernel    dropreport.Kernel
	prog      *ebpf.Program
	counts    *ebpf.Map
	link      link.Link
}

// dropFunction is the kernel function every skb drop with a reason goes
// through, and the index of its reason argument, both from the kernel's
// BTF: sk_skb_reason_drop(sk, skb, reason) since 6.11, kfree_skb_reason(skb,
// reason) on 5.17-6.10 (net/core/skbuff.c in 6.12 and 6.1).
func dropFunction(spec *btf.Spec) (name string, reasonArg int16, err error) {
	for _, name := range []string{"sk_skb_reason_drop", "kfree_skb_reason"} {
		var fn *btf.Func
		if spec.TypeByName(name, &fn) != nil {
			continue
		}
		proto, ok := fn.Type.(*btf.FuncProto)
		if !ok {
			return "", 0, fmt.Errorf("%s in the kernel's BTF has no prototype", name)
		}
		i, _ := dropcounter.ReasonParam(proto.Params)
		if i < 0 {
			return "", 0, fmt.Errorf("%s in the kernel's BTF takes no enum skb_drop_reason argument", name)
		}
		return name, int16(i), nil
	}
	return "", 0, errors.New("neither sk_skb_reason_drop nor kfree_skb_reason is in the kernel's BTF: fentry cannot name drop reasons here; use --collector.drops.attach tp_btf")
}

// tracepointReasonArg is the index of the reason among skb:kfree_skb's
// arguments (a tp_btf program's context), from the kernel's BTF:
// (skb, location, reason[, rx_sk]) puts it at 2 on 5.17+.
func tracepointReasonArg(spec *btf.Spec) (int16, error) {
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_kfree_skb", &td); err != nil {
		return 0, dropcounter.ErrTracepointMissing
	}
	ptr, ok := td.Type.(*btf.Pointer)
	if !ok {
		return 0, fmt.Errorf("btf_trace_kfree_skb is %s, not a function pointer", td.Type)
	}
	proto, ok := ptr.Target.(*btf.FuncProto)
	if !ok || len(proto.Params) < 2 {
		return 0, fmt.Errorf("btf_trace_kfree_skb has an unexpected prototype %v", ptr.Target)
	}
	// Params[0] is the __data every tracepoint probe takes first.
	i, _ := dropcounter.ReasonParam(proto.Params[1:])
	if i < 0 {
		return 0, ErrNoDropReasons
	}
	return int16(i), nil
}

// ErrNoDropReasons is the refusal on a kernel whose drops carry no reason.
var ErrNoDropReasons = errors.New("this kernel gives no drop reasons: its skb:kfree_skb tracepoint has no enum skb_drop_reason argument " +
	"(Linux 5.17 added it), so slowpath_skb_drops_total{reason} cannot be exported here; " +
	"slowpath_net_drops_total{layer} (softnet_stat, snmp) still counts backlog and socket drops, " +
	"and `slowpath net drops --stacks` attributes drops by the kernel function that dropped them")

// Start loads the counter and attaches it as a says.
func Start(a Attach) (*Counter, error) {
	if a != TPBTF && a != Fentry {
		return nil, fmt.Errorf("unknown attach %q: want %s or %s", a, TPBTF, Fentry)
	}
	kernel, err := dropcounter.ProbeKernel()
	if err != nil {
		return nil, err
	}
	if !kernel.HasReasons {
		return nil, ErrNoDropReasons
	}
	if err := dropcounter.CheckPrivileges(); err != nil {
		return nil, err
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("raise RLIMIT_MEMLOCK for eBPF maps: %w", err)
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return nil, fmt.Errorf("load kernel BTF: %w", err)
	}
	c := &Counter{Attach: a, kernel: kernel}
	var (
		attachType ebpf.AttachType
		reasonArg  int16
	)
	switch a {
	case TPBTF:
		attachType, c.Target = ebpf.AttachTraceRawTp, "kfree_skb"
		if reasonArg, err = tracepointReasonArg(spec); err != nil {
			return nil, err
		}
	case Fentry:
		if c.Target, reasonArg, err = dropFunction(spec); err != nil {
			return nil, err
		}
		attachType = ebpf.AttachTraceFEntry
	}
	c.ReasonArg = reasonArg
	c.counts, err = ebpf.NewMap(&ebpf.MapSpec{Name: "drop_reasons", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: Slots})
	if err != nil {
		return nil, fmt.Errorf("create the reason map: %w", err)
	}
	c.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "drop_reasons",
		Type:         ebpf.Tracing,
		AttachType:   attachType,
		AttachTo:     c.Target,
		License:      "GPL",
		Instructions: program(c.counts.FD(), reasonArg),
	})
	if err != nil {
		c.counts.Close()
		return nil, fmt.Errorf("load the drop reason counter (%s %s): %w", a, c.Target, err)
	}
	c.link, err = link.AttachTracing(link.TracingOptions{Program: c.prog})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("attach %s %s: %w", a, c.Target, err)
	}
	return c, nil
}

// program bumps counts[min(reason, Slots-1)] on this CPU. A tracing
// program's context is its arguments as an array of u64.
func program(mapFD int, reasonArg int16) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, reasonArg*8, asm.DWord),
		// The enum is 32 bits: clear what the slot may hold above it.
		asm.LSh.Imm(asm.R2, 32),
		asm.RSh.Imm(asm.R2, 32),
		asm.JLT.Imm(asm.R2, Slots, "in_range"),
		asm.Mov.Imm(asm.R2, Slots-1),
		asm.StoreMem(asm.RFP, -4, asm.R2, asm.Word).WithSymbol("in_range"),
		asm.LoadMapPtr(asm.R1, mapFD),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		// A per-CPU slot: a plain add, no atomic.
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	}
}

// Read sums the per-CPU counters into a capture: one record per reason
// seen, location 0 and no interface.
func (c *Counter) Read() (*dropreport.Capture, error) {
	k := dropreport.Kernel{HasReasons: true, Prototype: c.kernel.Prototype, Reasons: make(map[uint32]string, len(c.kernel.Reasons)+1)}
	for v, n := range c.kernel.Reasons {
		k.Reasons[v] = n
	}
	k.Reasons[Slots-1] = OtherSubsystem
	cap := &dropreport.Capture{Kernel: k}
	var (
		key    uint32
		counts []uint64
	)
	it := c.counts.Iterate()
	for it.Next(&key, &counts) {
		var sum uint64
		for _, n := range counts {
			sum += n
		}
		if sum > 0 {
			cap.Records = append(cap.Records, dropreport.Record{Reason: key, Count: sum, StackID: dropreport.NoStack})
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read the reason map: %w", err)
	}
	return cap, nil
}

// Stats returns the program's run count and (with kernel.bpf_stats_enabled)
// run time.
func (c *Counter) Stats() (*ebpf.ProgramStats, error) { return c.prog.Stats() }

// Close detaches the program and frees it and its map.
func (c *Counter) Close() error {
	var errs []error
	if c.link != nil {
		errs = append(errs, c.link.Close())
		c.link = nil
	}
	if c.prog != nil {
		errs = append(errs, c.prog.Close())
	}
	if c.counts != nil {
		errs = append(errs, c.counts.Close())
	}
	return errors.Join(errs...)
}
