package dropreport

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Stack is one folded stack: frames from the root (the drop reason) to the
// innermost kernel function, and how many drops took it
// (internal/report/dropsreport writes them folded and as a flame graph).
type Stack struct {
	Frames []string
	Count  uint64
}

// Frames that only exist because we trace: the BPF program itself and the
// tracepoint glue that called it. perf's kfree_skb callchains start at
// the function that fired the tracepoint, and so do ours.
var tracingFramePrefixes = []string{"bpf_trace_run", "__bpf_trace_", "__traceiter_", "bpf_prog_", "perf_trace_", "trace_event_raw_event_"}

func tracingFrame(name string) bool {
	for _, p := range tracingFramePrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// Frame names for records without a stack.
const (
	FrameNoStack = "[no stack]"
)

// Fold turns the capture's stacks into folded stacks rooted at the drop
// reason (or, without reasons, the location as Summarize attributes it). Records without a stack (stack
// collection off for them, or lost) become reason;[no stack];location.
// NOT_SPECIFIED is left out unless showUnspecified. The result is sorted
// by frames, so equal captures fold identically.
func Fold(c *Capture, syms *Symbols, showUnspecified bool) []Stack {
	agg := map[string]uint64{}
	for _, r := range c.Records {
		var stack []string
		st, ok := c.Stacks[r.StackID]
		if ok && r.StackID >= 0 {
			stack = symbolise(st, syms)
		}
		root := syms.FuncName(r.Location)
		if c.Kernel.HasReasons {
			root = c.Kernel.Name(r.Reason)
			if root == "NOT_SPECIFIED" && !showUnspecified {
				continue
			}
		} else {
			// The same attribution as the report's (AttributeLocation).
			inner := slices.Clone(stack)
			slices.Reverse(inner)
			root, _ = AttributeLocation(root, inner)
		}
		frames := []string{root}
		if stack == nil {
			frames = append(frames, FrameNoStack, syms.FuncName(r.Location))
		} else {
			frames = append(frames, stack...)
		}
		agg[strings.Join(frames, "\x00")] += r.Count
	}
	out := make([]Stack, 0, len(agg))
	for k, n := range agg {
		out = append(out, Stack{Frames: strings.Split(k, "\x00"), Count: n})
	}
	slices.SortFunc(out, func(a, b Stack) int { return cmp.Compare(strings.Join(a.Frames, ";"), strings.Join(b.Frames, ";")) })
	return out
}

// symbolise names a stack given innermost first and returns it outermost
// first, without the tracing frames at its inner end.
func symbolise(st []uint64, syms *Symbols) []string {
	names := make([]string, 0, len(st))
	inner := true
	for i, a := range st {
		var name string
		if i == 0 {
			// The innermost frame is an instruction pointer, not a return address.
			if sym, _, ok := syms.Lookup(a); ok {
				name = sym.Name
			}
		} else if n, _, ok := syms.ReturnSite(a); ok {
			name = n
		}
		if inner && (name == "" || tracingFrame(name)) {
			continue
		}
		inner = false
		if name == "" {
			name = fmt.Sprintf("0x%x", a)
		}
		names = append(names, name)
	}
	slices.Reverse(names)
	return names
}
