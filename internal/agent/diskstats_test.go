package agent

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/collect"
	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/dmtest"
)

// TestCountersFromDiskstats: with more than diskstatsAbove devices on
// encrypted paths a scrape reads their counters from /proc/diskstats; a
// device diskstats leaves out (a partition of size 0 there) is read from
// its stat file.
func TestCountersFromDiskstats(t *testing.T) {
	dir := t.TempDir()
	if _, err := dmtest.WriteSynthetic(dir, 16); err != nil {
		t.Fatal(err)
	}
	if err := dmtest.WriteCounters(dir, 1); err != nil {
		t.Fatal(err)
	}
	fs := hostfs.New(dir).WithLiveSources(hostfs.LiveOff)
	now := time.Unix(1000, 0)
	l := &Live{FS: fs, LiveSources: hostfs.LiveOff, Cloud: cloud.Options{Cloud: "none"}, TopologyInterval: time.Hour,
		Cipher: collect.Cipher{Off: true}, Now: func() time.Time { return now }}
	defer l.Close()
	if s, _ := l.Snapshot(context.Background()); len(l.statDevs) <= diskstatsAbove {
		t.Fatalf("%d devices on encrypted paths, want more than %d: %v", len(l.statDevs), diskstatsAbove, s.Manifest.Errors)
	}
	// New counters after the topology (which read the stat files): in
	// diskstats for every device but dm-3, in dm-3's stat file for it.
	// The other stat files change too, differently: a scrape that read
	// them, not diskstats, would report those.
	var diskstats strings.Builder
	want := map[string]*snapshot.BlockStat{}
	for i, name := range l.statDevs {
		line := fmt.Sprintf("%d 0 %d 7 %d 0 %d 9 0 11 13 0 0 0 0 0 0", 5000+i, 40000+i, 3000+i, 24000+i)
		st := &snapshot.BlockStat{Fields: 17, ReadIOs: uint64(5000 + i), ReadSectors: uint64(40000 + i), ReadTicksMS: 7,
			WriteIOs: uint64(3000 + i), WriteSectors: uint64(24000 + i), WriteTicksMS: 9, IOTicksMS: 11, TimeInQueueMS: 13}
		statFile := "1 0 8 1 1 0 8 1 0 2 2 0 0 0 0 0 0"
		if name == "dm-3" {
			statFile = line
		} else {
			fmt.Fprintf(&diskstats, "  1 %d %s %s\n", i, name, line)
		}
		if err := os.WriteFile(fs.SysPath("class", "block", name, "stat"), []byte(statFile+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		want[name] = st
	}
	if err := os.WriteFile(fs.ProcPath("diskstats"), []byte(diskstats.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	now = now.Add(15 * time.Second)
	s, _ := l.Snapshot(context.Background())
	got := map[string]*snapshot.BlockStat{}
	for _, d := range s.Storage.BlockDevices {
		if d.Stat != nil {
			got[d.Name] = d.Stat
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counters (-diskstats and dm-3's stat file +scrape):\n%s", diff)
	}
	for _, e := range s.Manifest.Errors {
		if e.Collector == "storage.counters" {
			t.Errorf("counters error: %+v", e)
		}
	}
}
