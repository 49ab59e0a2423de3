package report

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/report/table"
)

// writeStorageMarkdown prints a summary table of paths, then each chain as a
// nested list with the same facts as the text report.
func writeStorageMarkdown(b *bufio.Writer, r *analyze.Report) {
	fmt.Fprintf(b, "\n## Storage paths\n\n")
	if len(r.Storage) == 0 {
		fmt.Fprintf(b, "None found.\n")
		return
	}
	t := table.NewMarkdown(b)
	t.Row("path", "encryption layers", "where encryption runs")
	for _, p := range r.Storage {
		if p.Empty {
			continue
		}
		var where []string
		for _, l := range p.EncryptionChain() {
			where = append(where, l.EncryptedBy)
		}
		n := fmt.Sprint(p.EncryptionLayers)
		if p.UnknownEncryptionLayers > 0 {
			n += fmt.Sprintf(" (+%d unknown)", p.UnknownEncryptionLayers)
		}
		t.RowMarkdown(table.Code(mdSubject(p)), n, mdEscape(strings.Join(where, ", ")))
	}
	_ = t.Flush() // Markdown: nothing buffered
	if empty := emptyGroups(r.Storage); len(empty) > 0 {
		fmt.Fprintf(b, "\nEmpty devices: %s\n", mdEscape(strings.Join(empty, "; ")))
	}
	for _, p := range r.Storage {
		if p.Empty {
			continue
		}
		fmt.Fprintf(b, "\n### `%s`\n\n", mdEscape(mdSubject(p)))
		var lastID storagemodel.DiskIdentity
		for _, l := range p.Layers {
			line := mdEscape(layerLine(l))
			if l.Encrypted {
				line = "**" + line + "** — encrypted by " + l.EncryptedBy
			} else if l.EncryptionUnknown {
				line += " — *" + unknownMark(l) + "*"
			}
			if l.Cloud != nil && l.Cloud.Identity != nil && *l.Cloud.Identity != lastID {
				lastID = *l.Cloud.Identity
				line += "; " + mdEscape(identityLine(lastID))
				if lastID.Corroboration != "" {
					line += "; metadata: " + mdEscape(lastID.Corroboration)
				}
			}
			fmt.Fprintf(b, "%s- %s\n", strings.Repeat("  ", l.Depth), line)
		}
		for _, why := range p.Incomplete {
			fmt.Fprintf(b, "\n> incomplete: %s\n", mdEscape(why))
		}
	}
}

func mdSubject(p storagemodel.Path) string {
	if p.MountPoint != "" {
		return p.MountPoint
	}
	return "/dev/" + p.Device
}
