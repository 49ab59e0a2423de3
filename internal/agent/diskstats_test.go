package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/collect"
	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/collect/storage"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/dmtest"
)

// TestCountersFromDiskstats: with more than diskstatsAbove devices on
// encrypted paths a scrape reads /proc/diskstats once, and gets what each
// device's stat file says; a device diskstats leaves out (a partition of
// size 0 there) is read from its stat file.
func TestCountersFromDiskstats(t *testing.T) {
	dir := t.TempDir()
	if _, err := dmtest.WriteSynthetic(dir, 16); err != nil {
		t.Fatal(err)
	}
	if err := dmtest.WriteCounters(dir, 1); err != nil {
		t.Fatal(err)
	}
	// diskstats without dm-3: that one must come from its stat file.
	p := filepath.Join(dir, "proc", "diskstats")
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) < 3 || f[2] != "dm-3" {
			keep = append(keep, line)
		}
	}
	if err := os.WriteFile(p, []byte(strings.Join(keep, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := hostfs.New(dir).WithLiveSources(hostfs.LiveOff)
	now := time.Unix(1000, 0)
	l := &Live{FS: fs, LiveSources: hostfs.LiveOff, Cloud: cloud.Options{Cloud: "none"}, TopologyInterval: time.Hour,
		Cipher: collect.Cipher{Off: true}, Now: func() time.Time { return now }}
	defer l.Close()
	s, _ := l.Snapshot(context.Background())
	if len(l.statDevs) <= diskstatsAbove {
		t.Fatalf("%d devices on encrypted paths, want more than %d: %v", len(l.statDevs), diskstatsAbove, s.Manifest.Errors)
	}
	got := map[string]*snapshot.BlockStat{}
	for _, d := range s.Storage.BlockDevices {
		if d.Stat != nil {
			got[d.Name] = d.Stat
		}
	}
	want := map[string]*snapshot.BlockStat{}
	for _, name := range l.statDevs {
		st, err := storage.ReadBlockStat(fs, name)
		if err != nil {
			t.Fatal(err)
		}
		want[name] = st
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counters (-stat files +scrape):\n%s", diff)
	}
	for _, e := range s.Manifest.Errors {
		if e.Collector == "storage.counters" {
			t.Errorf("counters error: %+v", e)
		}
	}
}
