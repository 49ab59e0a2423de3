package storagecheck

import (
	"strings"

	"github.com/slowpath/slowpath/internal/check"
)

// storage.incomplete-path: a path whose chain could not be followed to the
// hardware (a device missing from the snapshot, an unreadable crypt table,
// a loop cycle). Its encryption count is a lower bound; this says so rather
// than letting the other checks pass silently.
func init() {
	check.Register(check.Check{
		ID:       "storage.incomplete-path",
		Title:    "Storage path could not be followed to the hardware",
		Severity: check.Info,
		Run:      runIncomplete,
	})
}

func runIncomplete(in *check.Input) []check.Finding {
	if in.Storage == nil {
		return nil
	}
	var out []check.Finding
	for _, p := range in.Storage.Paths {
		if len(p.Incomplete) == 0 {
			continue
		}
		var ev []check.Evidence
		for _, why := range p.Incomplete {
			ev = append(ev, check.Evidence{Source: "snapshot storage section", Observed: why})
		}
		out = append(out, check.Finding{
			Status:  check.Unknown,
			Subject: p.Subject(),
			Summary: "the chain under " + p.Subject() + " stops early (" + strings.Join(p.Incomplete, "; ") +
				"): its encryption layer count is a lower bound.",
			Evidence: ev,
			Remediation: "Collect again as root (slowpath collect) so /sys/block and the\n" +
				"device-mapper tables are readable.",
		})
	}
	return out
}
