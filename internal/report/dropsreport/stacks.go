package dropsreport

import (
	"fmt"
	"io"

	"github.com/slowpath/slowpath/internal/dropreport"
	"github.com/slowpath/slowpath/internal/report/flamegraph"
)

// flameStacks are the drop stacks (dropreport.Fold) as the flame graph
// package takes them: the same frames, root first.
func flameStacks(stacks []dropreport.Stack) []flamegraph.Stack {
	out := make([]flamegraph.Stack, len(stacks))
	for i, s := range stacks {
		out[i] = flamegraph.Stack{Frames: s.Frames, Count: s.Count}
	}
	return out
}

// WriteFolded writes the drop stacks in the folded format
// (flamegraph.WriteFolded) that flamegraph.pl, speedscope and inferno read.
func WriteFolded(w io.Writer, stacks []dropreport.Stack) error {
	return flamegraph.WriteFolded(w, flameStacks(stacks))
}

// SVGOptions are what the flame graph's title says of the capture.
type SVGOptions struct {
	// Interface is the --interface filter; "" for all interfaces.
	Interface string
	// StackEvery is the capture's stack sampling (Capture.StackEvery):
	// above 1 the title says stacks were sampled.
	StackEvery uint32
}

// WriteSVG draws the drop stacks as a flame graph, rooted at "all drops"
// and counted in drops. It returns how many frame names held characters
// XML cannot carry (flamegraph.Render).
func WriteSVG(w io.Writer, stacks []dropreport.Stack, o SVGOptions) (replaced int, err error) {
	title := "Packet drops by reason and kernel stack"
	if o.Interface != "" {
		title += " on " + o.Interface
	}
	if o.StackEvery > 1 {
		title += fmt.Sprintf(" (stacks sampled: 1 walk per %d drops of a run)", o.StackEvery)
	}
	return flamegraph.Render(w, flameStacks(stacks), flamegraph.Options{Title: title, CountName: "drops", RootName: "all drops"})
}
