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
	fmt.Fprintln(w, headline(r))
	if n := attribution(r); n != "" {
		fmt.Fprintln(w, n)
	}
	for _, warn := range warnings(r) {
		fmt.Fprintf(w, "warning: %s\n", warn)
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
	tw.Row(tableHead(r)...)
	for _, rc := range r.Reasons {
		tw.Row(tableRow(rc, o.TopFunctions)...)
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

// headline is the first line of every rendering: where, how long, how
// many, and the frees not shown.
func headline(r dropreport.Report) string {
	where := "all interfaces"
	if r.Interface != "" {
		where = r.Interface
	}
	var shown uint64
	for _, rc := range r.Reasons {
		shown += rc.Count
	}
	s := fmt.Sprintf("Packet drops on %s over %s: %d dropped", where, strconv.FormatFloat(r.DurationSeconds, 'f', 1, 64)+"s", shown)
	for _, h := range r.Hidden {
		s += fmt.Sprintf("; %d %s frees not shown (--all shows them)", h.Count, h.Reason)
	}
	return s
}

// attribution says, on a kernel without drop reasons, what the rows are
// instead; "" where the kernel gives reasons.
func attribution(r dropreport.Report) string {
	if r.DropReasons {
		return ""
	}
	proto := "its skb:kfree_skb tracepoint has no reason argument"
	if r.Tracepoint != "" {
		proto = "its tracepoint is " + r.Tracepoint + ", no reason"
	}
	return fmt.Sprintf("Attribution by location, not by reason: this kernel gives no drop reasons (%s; Linux 5.17 added it).\n"+
		"LOCATION is the function that freed the packet (with --stacks, the caller of a free helper such as kfree_skb_list);\n"+
		"LAYER and CHECK come from known drop sites (enqueue_to_backlog is the CPU backlog), unknown elsewhere.\n"+
		"Every kfree_skb() free is counted: at unknown locations some are not drops.", proto)
}

// warnings are what the tracer's own counters say it missed.
func warnings(r dropreport.Report) []string {
	var ws []string
	if r.LostRecords > 0 {
		ws = append(ws, fmt.Sprintf("%d drops not counted: the in-kernel map was full", r.LostRecords))
	}
	switch {
	case r.RecursionMisses == nil:
		why := r.RecursionMissesError
		if why == "" {
			why = "not recorded"
		}
		ws = append(ws, fmt.Sprintf("recursion misses unknown (%s): how many kfree_skb hits the kernel did not show the tracer is not known", why))
	case *r.RecursionMisses > 0:
		ws = append(ws, fmt.Sprintf("the kernel skipped the tracer %d times because it was already running on that CPU "+
			"(recursion misses, over every skb:kfree_skb hit, drops or not, on any interface): up to %d drops not seen this way",
			*r.RecursionMisses, *r.RecursionMisses))
	}
	if r.StackWalksFailed > 0 {
		ws = append(ws, fmt.Sprintf("%d of %d stack walks failed (stack map full, or two stacks with one hash): "+
			"the drops sampled under them are counted with no stack", r.StackWalksFailed, r.StackWalks))
	}
	return ws
}

// tableHead is the table's header: a kernel without reasons lists
// locations.
func tableHead(r dropreport.Report) []string {
	head := "REASON"
	if !r.DropReasons {
		head = "LOCATION"
	}
	return []string{head, "COUNT", "PER SEC", "LAYER", "CHECK", "INTERFACES", "FUNCTIONS"}
}

// tableRow is one reason's row, its top kernel functions named.
func tableRow(rc dropreport.ReasonCount, top int) []string {
	check := rc.Check
	if check == "" {
		check = "-"
	}
	return []string{rc.Reason, strconv.FormatUint(rc.Count, 10),
		strconv.FormatFloat(rc.PerSecond, 'f', 1, 64), rc.Layer, check,
		interfaces(rc.Interfaces, 2), functions(rc.Locations, top)}
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
