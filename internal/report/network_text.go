package report

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/model/netmodel"
)

// maxCounterLines bounds the counter list in text and markdown; JSON has all.
const maxCounterLines = 12

// writeNetworkText prints the network model: interfaces, the receive-path
// sysctls and the drop counters by layer.
func writeNetworkText(t *textWriter, r *analyze.Report) {
	if r.Network == nil {
		return
	}
	t.heading("Network")
	writeNetworkBody(t, r.Network)
}

// WriteNetwork renders the network model alone as text (`slowpath net`).
func WriteNetwork(w io.Writer, m *netmodel.Model, o Options) error {
	t := &textWriter{w: bufio.NewWriter(w), color: o.Color}
	if m == nil {
		t.printf("no network section in the snapshot\n")
		return t.w.Flush()
	}
	t.heading("Network")
	writeNetworkBody(t, m)
	return t.w.Flush()
}

func writeNetworkBody(t *textWriter, m *netmodel.Model) {
	for _, ifc := range m.Interfaces {
		t.printf("\n  %s", ifc.Name)
		var facts []string
		if ifc.Driver != "" {
			facts = append(facts, ifc.Driver)
		}
		if ifc.SpeedMbps != nil {
			facts = append(facts, fmt.Sprintf("%d Mb/s", *ifc.SpeedMbps))
		}
		if ifc.OperState != "" {
			facts = append(facts, ifc.OperState)
		}
		if ifc.MTU > 0 {
			facts = append(facts, fmt.Sprintf("mtu %d", ifc.MTU))
		}
		if len(facts) > 0 {
			t.printf(" (%s)", strings.Join(facts, ", "))
		}
		t.printf("\n")
		if ifc.Role != "" {
			t.wrap("    ", ifc.Role)
		}
		t.wrap("    ", interfaceLine(ifc))
	}
	if len(m.Sysctls) > 0 {
		t.printf("\n  sysctls:\n")
		keys := make([]string, 0, len(m.Sysctls))
		for k := range m.Sysctls {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.printf("    %s = %d\n", k, m.Sysctls[k])
		}
	}
	if d := m.DropReasons; d != nil {
		if len(m.Sysctls) == 0 {
			t.printf("\n") // else it reads as part of the last interface
		}
		t.wrapHanging("  ", "    ", fmt.Sprintf("skb drop reasons: %s (%s)", d.Status, d.Detail))
	}
	t.printf("\n  drops by layer")
	if m.IntervalSeconds > 0 {
		t.printf(" (rates over %.1fs):\n", m.IntervalSeconds)
	} else {
		t.printf(" (totals since boot):\n")
		t.wrap("    ", "no rates: "+m.RatesUnknown)
	}
	for _, s := range m.Summary {
		t.printf("    %-8s %s\n", s.Layer, layerFigure(s))
	}
	lines := counterLines(m)
	if len(lines) == 0 && m.IntervalSeconds > 0 {
		t.printf("\n  no drop counter rose during the interval\n")
	}
	if len(lines) > 0 {
		t.printf("\n  counters:\n")
		for _, l := range lines {
			t.printf("    %s\n", l)
		}
	}
}

func interfaceLine(ifc netmodel.Interface) string {
	var parts []string
	switch {
	case ifc.Ring != nil:
		parts = append(parts, fmt.Sprintf("ring rx %d/%d tx %d/%d", ifc.Ring.RX, ifc.Ring.RXMax, ifc.Ring.TX, ifc.Ring.TXMax))
	case ifc.RingUnsupported:
		parts = append(parts, "ring: not supported by driver")
	}
	if c := ifc.Channels; c != nil {
		ch := fmt.Sprintf("channels combined %d/%d", c.Combined, c.MaxCombined)
		if c.RX != 0 || c.TX != 0 {
			ch += fmt.Sprintf(" rx %d/%d tx %d/%d", c.RX, c.MaxRX, c.TX, c.MaxTX)
		}
		parts = append(parts, ch)
	}
	if ifc.RXQueues > 0 {
		parts = append(parts, fmt.Sprintf("rx queues %d (rps on %d)", ifc.RXQueues, ifc.RPSQueues))
	}
	if ifc.IRQs > 0 {
		parts = append(parts, fmt.Sprintf("irqs %d", ifc.IRQs))
	}
	if ifc.Master != "" {
		parts = append(parts, "master "+ifc.Master)
	}
	if len(parts) == 0 {
		return "no ring, queue or IRQ facts"
	}
	return strings.Join(parts, "; ")
}

func layerFigure(s netmodel.LayerSummary) string {
	if s.PerSecond != nil {
		return fmt.Sprintf("%10.1f/s  (total %d)", *s.PerSecond, s.Total)
	}
	return fmt.Sprintf("%10s    (total %d)", "-", s.Total)
}

// counterLines lists the counters worth reading: rising ones by rate, or
// (with one sample) the largest totals.
func counterLines(m *netmodel.Model) []string {
	cs := append([]netmodel.Counter(nil), m.Counters...)
	if m.IntervalSeconds > 0 {
		var up []netmodel.Counter
		for _, c := range cs {
			if c.Rising() {
				up = append(up, c)
			}
		}
		cs = up
		sort.SliceStable(cs, func(i, j int) bool { return *cs[i].PerSecond > *cs[j].PerSecond })
	} else {
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].Total > cs[j].Total })
	}
	var out []string
	anyAggregate := false
	for i, c := range cs {
		if i == maxCounterLines {
			out = append(out, fmt.Sprintf("... %d more (see --format json)", len(cs)-maxCounterLines))
			break
		}
		agg := ""
		if c.Aggregate {
			agg, anyAggregate = " *", true
		}
		if c.PerSecond != nil {
			out = append(out, fmt.Sprintf("%-7s %-11s %-26s %9.1f/s  total %d%s", c.Layer, c.Subject, c.Counter, *c.PerSecond, c.Total, agg))
		} else {
			out = append(out, fmt.Sprintf("%-7s %-11s %-26s total %d%s", c.Layer, c.Subject, c.Counter, c.Total, agg))
		}
	}
	if anyAggregate {
		out = append(out, "* aggregate: also counts drops another layer counts")
	}
	return out
}
