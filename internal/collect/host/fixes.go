package host

import (
	"errors"
	"os"
	"slices"

	"github.com/slowpath/slowpath/internal/fixstate"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// collectFixes reads what `slowpath fix --apply` changed on the host from
// its state file under the root, keeping the runtime changes that still
// hold on this boot (a reboot reset the others). No file: slowpath changed
// nothing. It runs after collectIdentity, whose boot id it compares, and
// after collectTuners, whose node-tuning marker may name fixes too.
func collectFixes(fs hostfs.FS, h *snapshot.Host, s *snapshot.Snapshot) {
	path := fs.RootPath(fixstate.DefaultPath)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		s.AddError("host.fixes", path, err)
		return
	}
	st, err := fixstate.Decode(b)
	if err != nil {
		s.AddError("host.fixes", path, err)
		return
	}
	for _, c := range st.Holding(h.BootID) {
		f := snapshot.AppliedFix{ID: c.ID, Subject: c.Subject, Key: c.Key, Value: c.Applied, AppliedAt: c.AppliedAt}
		// The node-tuning DaemonSet's marker may name the same setting
		// (fix --apply proved it on a node the DaemonSet then tuned): one
		// series, at the earlier time, when the node started running it.
		i := slices.IndexFunc(h.Fixes, func(o snapshot.AppliedFix) bool {
			return o.ID == f.ID && o.Key == f.Key && o.Value == f.Value && o.Subject == f.Subject
		})
		switch {
		case i < 0:
			h.Fixes = append(h.Fixes, f)
		case !f.AppliedAt.IsZero() && (h.Fixes[i].AppliedAt.IsZero() || f.AppliedAt.Before(h.Fixes[i].AppliedAt)):
			h.Fixes[i].AppliedAt = f.AppliedAt
		}
	}
}
