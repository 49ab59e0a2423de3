package report

import (
	"fmt"
	"strings"
)

// writeStorageText prints each path as a chain, top layer first.
func writeStorageText(t *textWriter, r *Report) {
	t.heading("Storage paths")
	if len(r.Storage) == 0 {
		t.printf("  none found\n")
		return
	}
	for _, p := range r.Storage {
		subject := p.MountPoint
		if subject == "" {
			subject = p.Device + " (not mounted)"
		}
		t.printf("\n  %s — %d encryption layer(s)\n", subject, p.EncryptionLayers)
		for i, l := range p.Layers {
			mark := ""
			if l.Encrypted {
				mark = " [encrypted"
				if l.EncryptedBy != "" {
					mark += " by " + l.EncryptedBy
				}
				mark += "]"
			}
			t.wrap(strings.Repeat(" ", 4+2*i), fmt.Sprintf("└ %s %s%s", l.Kind, l.Name, mark))
		}
	}
}
