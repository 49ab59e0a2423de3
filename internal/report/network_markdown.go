package report

import (
	"bufio"
	"fmt"
	"io"
	"strconv"

	"github.com/slowpath/slowpath/internal/model/netmodel"
	"github.com/slowpath/slowpath/internal/report/table"
)

// WriteNetworkMarkdown writes the network model as doctor's Markdown shows
// it (`slowpath net --format markdown`).
func WriteNetworkMarkdown(w io.Writer, m *netmodel.Model) error {
	if m == nil {
		_, err := fmt.Fprintln(w, "No network section in the snapshot.")
		return err
	}
	b := bufio.NewWriter(w)
	writeNetworkMarkdown(b, m)
	return b.Flush()
}

// writeNetworkMarkdown adds the network section to the markdown report.
func writeNetworkMarkdown(b *bufio.Writer, m *netmodel.Model) {
	if m == nil {
		return
	}
	fmt.Fprintf(b, "\n## Network\n\n")
	if len(m.Interfaces) > 0 {
		t := table.NewMarkdown(b)
		t.Row("interface", "driver", "speed", "ring rx (max)", "role")
		for _, ifc := range m.Interfaces {
			speed, ring := "", ""
			if ifc.SpeedMbps != nil {
				speed = fmt.Sprintf("%d Mb/s", *ifc.SpeedMbps)
			}
			if ifc.Ring != nil {
				ring = fmt.Sprintf("%d (%d)", ifc.Ring.RX, ifc.Ring.RXMax)
			} else if ifc.RingUnsupported {
				ring = "unsupported"
			}
			t.RowMarkdown(table.Code(ifc.Name), mdEscape(ifc.Driver), speed, ring, mdEscape(ifc.Role))
		}
		_ = t.Flush() // Markdown: nothing buffered
	}
	if m.IntervalSeconds > 0 {
		fmt.Fprintf(b, "\nDrops by layer (rates over %.1fs):\n\n", m.IntervalSeconds)
	} else {
		fmt.Fprintf(b, "\nDrops by layer (totals since boot; %s):\n\n", mdEscape(m.RatesUnknown))
	}
	t := table.NewMarkdown(b)
	t.Row("layer", "per second", "total")
	for _, s := range m.Summary {
		rate := "-"
		if s.PerSecond != nil {
			rate = fmt.Sprintf("%.1f", *s.PerSecond)
		}
		t.Row(string(s.Layer), rate, strconv.FormatUint(s.Total, 10))
	}
	_ = t.Flush()
	if top, ok := netmodel.Top(m.Counters); ok {
		fmt.Fprintf(b, "\nTop offender: **%s** `%s` on %s, %.1f/s.\n", top.Layer, top.Counter, mdEscape(top.Subject), *top.PerSecond)
	}
}
