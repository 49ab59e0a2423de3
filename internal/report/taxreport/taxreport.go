// Package taxreport renders `slowpath fleet --tax`'s summary
// (fleettax.Summary: the encryption tax per node group) as text and
// Markdown.
package taxreport

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/fleettax"
	"github.com/slowpath/slowpath/internal/model/cryptotax"
	"github.com/slowpath/slowpath/internal/report/table"
	"github.com/slowpath/slowpath/internal/units"
)

// ratio renders a ratio: 2678x, 1.1x.
func ratio(r float64) string {
	if math.Abs(r) >= 10 {
		return fmt.Sprintf("%.0fx", r)
	}
	return fmt.Sprintf("%.1fx", r)
}

// groupName names a group in output: its value, or for nodes without the
// label "(no LABEL)".
func groupName(by string, g fleettax.Group) string {
	if g.Value == "" {
		return "(no " + by + ")"
	}
	return g.Value
}

// mount names one mount at an extreme of its group, with its figures.
func mount(m *fleettax.Mount) string {
	s := fmt.Sprintf("%s %s %s (+%s", m.Instance, m.MountPoint, ratio(m.Ratio), units.Duration(m.AddedPerIOSeconds))
	if m.TableUnread {
		s += "; dm table unread: dm-crypt inferred from its uuid, cipher assumed"
	}
	return s + ")"
}

// WriteText prints one block per group, worst first:
//
//	Standard_E16d_v5 (12 nodes): encryption adds 17.6 ms per I/O, 2678x the cipher's cost (6.55 µs)
//	  ratio min 2100x, median 2678x, max 2900x over 12 mounts
//	  highest: node-3:9877 /data 2900x (+19 ms); lowest: node-7:9877 /data 2100x (+13.8 ms)
func WriteText(w io.Writer, s *fleettax.Summary) error {
	var b strings.Builder
	for _, g := range s.Groups {
		if g.Mounts == 0 {
			fmt.Fprintf(&b, "%s: no dm-crypt mount with enough I/O to judge (%s with fewer than %d I/Os in 5 minutes)\n",
				groupName(s.By, g), units.Plural(g.NotJudged, "mount"), cryptotax.MinIOs)
			continue
		}
		fmt.Fprintf(&b, "%s (%s): encryption adds %s per I/O, %s the cipher's cost (%s)\n",
			groupName(s.By, g), units.Plural(g.Nodes, "node"), units.Duration(g.AddedPerIOSeconds), ratio(g.Ratio.Median), units.Duration(g.CipherPerIOSeconds))
		fmt.Fprintf(&b, "  ratio min %s, median %s, max %s over %s", ratio(g.Ratio.Min), ratio(g.Ratio.Median), ratio(g.Ratio.Max), units.Plural(g.Mounts, "mount"))
		if g.NotJudged > 0 {
			fmt.Fprintf(&b, " (%d not judged: too little I/O)", g.NotJudged)
		}
		fmt.Fprintf(&b, "\n  highest: %s; lowest: %s\n", mount(g.Highest), mount(g.Lowest))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown prints the groups as a table; every cell is escaped, the
// label values from Prometheus included.
func WriteMarkdown(w io.Writer, s *fleettax.Summary) error {
	var b strings.Builder
	t := table.NewMarkdownWith(&b, table.MarkdownOptions{Align: []table.Align{
		table.Left, table.Right, table.Right, table.Right, table.Left, table.Left, table.Left, table.Right}})
	t.Row(s.By, "nodes", "added per I/O", "cipher per I/O", "ratio min / median / max", "highest", "lowest", "not judged")
	for _, g := range s.Groups {
		if g.Mounts == 0 {
			t.Row(groupName(s.By, g), "0", "", "", "", "", "", strconv.Itoa(g.NotJudged))
			continue
		}
		t.Row(groupName(s.By, g), strconv.Itoa(g.Nodes), units.Duration(g.AddedPerIOSeconds), units.Duration(g.CipherPerIOSeconds),
			ratio(g.Ratio.Min)+" / "+ratio(g.Ratio.Median)+" / "+ratio(g.Ratio.Max),
			mount(g.Highest), mount(g.Lowest), strconv.Itoa(g.NotJudged))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}
