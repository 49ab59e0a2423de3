// Package fleetreport renders `slowpath fleet`'s summary (fleet.Summary:
// findings across nodes, grouped by a label) as text.
package fleetreport

import (
	"fmt"
	"io"

	"github.com/slowpath/slowpath/internal/fleet"
	"github.com/slowpath/slowpath/internal/units"
)

// WriteText prints one block per group, worst findings first:
//
//	Standard_E16d_v5: 12 nodes
//	  warning   storage.stacked-encryption    /mnt/data             12/12 nodes
func WriteText(w io.Writer, s *fleet.Summary) error {
	for _, g := range s.Groups {
		name := g.Value
		if name == "" {
			name = "(no " + s.By + ")"
		}
		if _, err := fmt.Fprintf(w, "%s: %s\n", name, units.Plural(g.Nodes, "node")); err != nil {
			return err
		}
		if len(g.Findings) == 0 {
			fmt.Fprintln(w, "  no check fires")
		}
		for _, f := range g.Findings {
			subject := f.Subject
			if subject == "" {
				subject = "-"
			}
			fmt.Fprintf(w, "  %-8s  %-28s  %-20s  %d/%d nodes\n", f.Severity, f.ID, subject, f.Nodes, g.Nodes)
		}
	}
	return nil
}
