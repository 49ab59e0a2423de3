package host

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/fixstate"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// TestCollectFixes: the runtime changes of fix's state file that hold on
// this boot become host.fixes, with their time; another boot's do not
// (a reboot reset them); no file is no fix and no error; a file that is
// not fix's is an error of host.fixes.
// sysctlStep is a step as fix writes it: the collector does not read it.
var sysctlStep = json.RawMessage(`{"kind":"sysctl","sysctl":{"key":"net.core.netdev_max_backlog","to":32768}}`)

func TestCollectFixes(t *testing.T) {
	const boot = "8d1c5ae0-5b4f-4d22-9a0e-0c5d2f8e1a77"
	at := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	state := func(bootID string) []byte {
		b, err := json.Marshal(fixstate.State{BootID: bootID, Changes: []fixstate.Change{
			{Key: "sysctl net.core.netdev_max_backlog", ID: "net.backlog-drops", Subject: "host", Previous: "1000", Applied: "32768", AppliedAt: at,
				Step: sysctlStep},
			// Written before fix recorded times: no applied_at.
			{Key: "ring eth0 rx", ID: "net.ring-undersized", Subject: "eth0", Previous: "1024", Applied: "8192",
				Step: json.RawMessage(`{"kind":"ring","ring":{"interface":"eth0","rx":8192}}`)},
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

// TestCollectFixesMergesMarker: a setting both fix's state file and the
// node-tuning marker name is one fix, at the earlier of their times (fix
// --apply proved it first, the DaemonSet took over: the node has run it
// since the first).
func TestCollectFixesMergesMarker(t *testing.T) {
	const boot = "8d1c5ae0-5b4f-4d22-9a0e-0c5d2f8e1a77"
	early, late := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC), time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name          string
		state, marker time.Time
		want          time.Time
	}{
		{"state file first", early, late, early},
		{"marker first", late, early, early},
		{"state file without a time", time.Time{}, late, late},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			b, err := json.Marshal(fixstate.State{BootID: boot, Changes: []fixstate.Change{{Key: "sysctl:net.core.netdev_max_backlog", ID: "net.backlog-drops",
				Subject: "softnet", Previous: "1000", Applied: "32768", AppliedAt: tc.state, Step: sysctlStep}}})
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(root, fixstate.DefaultPath)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			h := &snapshot.Host{BootID: boot, Fixes: []snapshot.AppliedFix{
				{ID: "net.backlog-drops", Subject: "softnet", Key: "sysctl:net.core.netdev_max_backlog", Value: "32768", AppliedAt: tc.marker}}}
			var s snapshot.Snapshot
			collectFixes(hostfs.New(root), h, &s)
			if len(h.Fixes) != 1 || !h.Fixes[0].AppliedAt.Equal(tc.want) {
				t.Errorf("fixes %+v, want one at %v", h.Fixes, tc.want)
			}
		})
	}
}
