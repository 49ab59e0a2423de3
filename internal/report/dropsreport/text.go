// Package dropsreport renders the report of `slowpath net drops`
// (dropreport.Report) as text, and its folded kernel stacks in the folded
// format and as a flame graph. What the drops are, where they happened and
// what each means is dropreport's; this package only shows it. The JSON is
// the report itself (docs/json.md).
package dropsreport

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/dropreport"
	"github.com/slowpath/slowpath/internal/report/table"
)

// TextOptions shape WriteText.
type TextOptions struct {
	// TopFunctions is how many kernel functions to list per reason
	// (default 3).
	TopFunctions int
	// Tabs writes the table as tab-separated rows without padding, for
	// output that is piped rather than read on a terminal.
	Tabs bool
}

// WriteText prints r as a table: one line per reason with count, rate,
// layer, related check, interfaces and the kernel functions that dropped,
// then the hints of the reasons shown.
func WriteText(w io.Writer, r dropreport.Report, o TextOptions) error {
	if o.TopFunctions <= 0 {
		o.TopFunctions = 3
	}
	where := "all interfaces"
	if r.Interface != "" {
		where = r.Interface
	}
	var shown uint64
	for _, rc := range r.Reasons {
		shown += rc.Count
	}
	fmt.Fprintf(w, "Packet drops on %s over %s: %d dropped", where, strconv.FormatFloat(r.DurationSeconds, 'f', 1, 64)+"s", shown)
	for _, h := range r.Hidden {
		fmt.Fprintf(w, "; %d %s frees not shown (--all shows them)", h.Count, h.Reason)
	}
	fmt.Fprintln(w)
	if !r.DropReasons {
		proto := "its skb:kfree_skb tracepoint has no reason argument"
		if r.Tracepoint != "" {
			proto = "its tracepoint is " + r.Tracepoint + ", no reason"
		}
		fmt.Fprintf(w, "Attribution by location, not by reason: this kernel gives no drop reasons (%s; Linux 5.17 added it).\n"+
			"LOCATION is the function that freed the packet (with --stacks, the caller of a free helper such as kfree_skb_list);\n"+
			"LAYER and CHECK come from known drop sites (enqueue_to_backlog is the CPU backlog), unknown elsewhere.\n"+
			"Every kfree_skb() free is counted: at unknown locations some are not drops.\n", proto)
	}
	if r.LostRecords > 0 {
		fmt.Fprintf(w, "warning: %d drops not counted: the in-kernel map was full\n", r.LostRecords)
	}
	switch {
	case r.RecursionMisses == nil:
		why := r.RecursionMissesError
		if why == "" {
			why = "not recorded"
		}
		fmt.Fprintf(w, "warning: recursion misses unknown (%s): how many kfree_skb hits the kernel did not show the tracer is not known\n", why)
	case *r.RecursionMisses > 0:
		fmt.Fprintf(w, "warning: the kernel skipped the tracer %d times because it was already running on that CPU "+
			"(recursion misses, over every skb:kfree_skb hit, drops or not, on any interface): up to %d drops not seen this way\n",
			*r.RecursionMisses, *r.RecursionMisses)
	}
	if r.StackWalksFailed > 0 {
		fmt.Fprintf(w, "warning: %d of %d stack walks failed (stack map full, or two stacks with one hash): "+
			"the drops sampled under them are counted with no stack\n", r.StackWalksFailed, r.StackWalks)
	}
	if len(r.Reasons) == 0 {
		fmt.Fprintln(w, "No drops.")
		return nil
	}
	fmt.Fprintln(w)
	tw := table.New(w)
	if o.Tabs {
		tw = table.NewTSV(w)
	}
	head := "REASON"
	if !r.DropReasons {
		head = "LOCATION"
	}
	tw.Row(head, "COUNT", "PER SEC", "LAYER", "CHECK", "INTERFACES", "FUNCTIONS")
	for _, rc := range r.Reasons {
		check := rc.Check
		if check == "" {
			check = "-"
		}
		tw.Row(rc.Reason, strconv.FormatUint(rc.Count, 10),
			strconv.FormatFloat(rc.PerSecond, 'f', 1, 64), rc.Layer, check,
			interfaces(rc.Interfaces, 2), functions(rc.Locations, o.TopFunctions))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var hints []string
	for _, rc := range r.Reasons {
		if rc.Hint != "" {
			hints = append(hints, fmt.Sprintf("  %s: %s", rc.Reason, rc.Hint))
		}
	}
	if len(hints) > 0 {
		fmt.Fprintf(w, "\n%s\n", strings.Join(hints, "\n"))
	}
	return nil
}

func functions(locs []dropreport.LocationCount, top int) string {
	var parts []string
	for i, l := range locs {
		if i == top {
			parts = append(parts, fmt.Sprintf("+%d more", len(locs)-top))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%d)", l.Function, l.Count))
	}
	return strings.Join(parts, ", ")
}

func interfaces(ifs []dropreport.InterfaceCount, top int) string {
	var parts []string
	for i, f := range ifs {
		if i == top {
			parts = append(parts, "...")
			break
		}
		switch {
		case f.Name != "":
			parts = append(parts, f.Name)
		case f.Ifindex == 0:
			parts = append(parts, "-")
		case f.Netns != 0:
			// An interface of another network namespace, or gone.
			parts = append(parts, fmt.Sprintf("if%d@netns:%d", f.Ifindex, f.Netns))
		default:
			parts = append(parts, fmt.Sprintf("if%d", f.Ifindex))
		}
	}
	return strings.Join(parts, ",")
}
