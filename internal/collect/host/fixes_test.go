package host

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/fix/fixstate"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// TestCollectFixes: the runtime changes of fix's state file that hold on
// this boot become host.fixes, with their time; another boot's do not
// (a reboot reset them); no file is no fix and no error; a file that is
// not fix's is an error of host.fixes.
func TestCollectFixes(t *testing.T) {
	const boot = "8d1c5ae0-5b4f-4d22-9a0e-0c5d2f8e1a77"
	at := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	state := func(bootID string) []byte {
		b, err := json.Marshal(fixstate.State{BootID: bootID, Changes: []fixstate.Change{
			{Key: "sysctl net.core.netdev_max_backlog", ID: "net.backlog-drops", Subject: "host", Previous: "1000", Applied: "32768", AppliedAt: at,
				Step: fix.Step{Change: fix.Sysctl{Key: "net.core.netdev_max_backlog", To: 32768}}},
			// Written before fix recorded times: no applied_at.
			{Key: "ring eth0 rx", ID: "net.ring-undersized", Subject: "eth0", Previous: "1024", Applied: "8192",
				Step: fix.Step{Change: fix.Ring{Interface: "eth0", RX: 8192}}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name    string
		content []byte // nil: no state file
		want    []snapshot.AppliedFix
		errs    int
	}{
		{"this boot's changes", state(boot), []snapshot.AppliedFix{
			{ID: "net.backlog-drops", Subject: "host", Key: "sysctl net.core.netdev_max_backlog", Value: "32768", AppliedAt: at},
			{ID: "net.ring-undersized", Subject: "eth0", Key: "ring eth0 rx", Value: "8192"},
		}, 0},
		{"another boot's", state("0b4e6d2c-1111-4a2b-8c3d-5e6f7a8b9c0d"), nil, 0},
		{"no state file", nil, nil, 0},
		{"not fix's", []byte("{\"changes\": 3}"), nil, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.content != nil {
				p := filepath.Join(root, fixstate.DefaultPath)
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, tc.content, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var s snapshot.Snapshot
			h := &snapshot.Host{BootID: boot}
			collectFixes(hostfs.New(root), h, &s)
			if diff := cmp.Diff(tc.want, h.Fixes); diff != "" {
				t.Errorf("fixes (-want +got):\n%s", diff)
			}
			if len(s.Manifest.Errors) != tc.errs || (tc.errs > 0 && s.Manifest.Errors[0].Collector != "host.fixes") {
				t.Errorf("errors %+v, want %d of host.fixes", s.Manifest.Errors, tc.errs)
			}
			if err := snapshot.ValidateHost("host", h); err != nil {
				t.Errorf("collected fixes fail validation: %v", err)
			}
		})
	}
}
