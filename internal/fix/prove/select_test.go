package prove

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
)

func TestSelect(t *testing.T) {
	onData := cryptEntry("data", "no_read_workqueue", "no_write_workqueue")
	onData2 := onData
	onData2.ID = "dmcrypt.same-cpu-crypt"
	other := cryptEntry("swap", "no_read_workqueue")
	backlog := sysctlEntry("net.core.netdev_max_backlog", 4096)
	cloudOnly := fix.Entry{ID: "storage.stacked-encryption", Subject: "/"}
	plan := &fix.Plan{Entries: []fix.Entry{onData, other, backlog, cloudOnly, onData2}}
	path := &storagemodel.Path{MountPoint: "/srv", Layers: []storagemodel.Layer{
		{Kind: storagemodel.LayerFilesystem, Name: "/srv", MajorMinor: "253:0"},
		{Kind: storagemodel.LayerDMCrypt, Name: "data", Device: "dm-0", Depth: 1},
		{Kind: storagemodel.LayerDisk, Name: "nvme0n1", Depth: 2},
	}}
	ids := func(es []fix.Entry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.ID+" "+e.Subject)
		}
		return out
	}
	for _, tt := range []struct {
		name     string
		path     *storagemodel.Path
		only     []string
		measure  []string
		skipped  []string
		counters int
	}{
		{"dm-crypt on the path", path, nil,
			[]string{"dmcrypt.workqueue /dev/mapper/data", "dmcrypt.same-cpu-crypt /dev/mapper/data"},
			[]string{"dmcrypt.workqueue /dev/mapper/swap", "net.backlog-drops softnet"}, 1},
		{"a named network entry is measured", path, []string{"net.backlog-drops"},
			[]string{"dmcrypt.workqueue /dev/mapper/data", "net.backlog-drops softnet", "dmcrypt.same-cpu-crypt /dev/mapper/data"},
			[]string{"dmcrypt.workqueue /dev/mapper/swap"}, 0},
		{"tmpfs: no block path", nil, nil, nil,
			[]string{"dmcrypt.workqueue /dev/mapper/data", "dmcrypt.workqueue /dev/mapper/swap", "net.backlog-drops softnet", "dmcrypt.same-cpu-crypt /dev/mapper/data"}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, s := Select(plan, tt.path, tt.only)
			var sk []fix.Entry
			counters := 0
			for _, x := range s {
				sk = append(sk, x.Entry)
				if x.Counters {
					counters++
				}
				if x.Why == "" {
					t.Errorf("%s skipped without a reason", x.Entry.ID)
				}
			}
			if d := cmp.Diff(tt.measure, ids(m)); d != "" {
				t.Errorf("measured (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.skipped, ids(sk)); d != "" {
				t.Errorf("skipped (-want +got):\n%s", d)
			}
			if counters != tt.counters {
				t.Errorf("%d left to counters, want %d", counters, tt.counters)
			}
		})
	}
}

func TestPathOf(t *testing.T) {
	m := &storagemodel.Model{Paths: []storagemodel.Path{
		{MountPoint: "/", Layers: []storagemodel.Layer{{Kind: storagemodel.LayerFilesystem, MajorMinor: "254:1"}}},
		{MountPoint: "/srv", Layers: []storagemodel.Layer{{Kind: storagemodel.LayerFilesystem, MajorMinor: "253:0"}, {Kind: storagemodel.LayerDMCrypt, Name: "data", MajorMinor: "253:0", Depth: 1}}},
	}}
	if p := PathOf(m, "253:0"); p == nil || p.MountPoint != "/srv" {
		t.Errorf("PathOf 253:0 = %+v", p)
	}
	if p := PathOf(m, "0:42"); p != nil {
		t.Errorf("PathOf a tmpfs = %+v, want nil", p)
	}
	if p := PathOf(nil, "253:0"); p != nil {
		t.Errorf("PathOf without a model = %+v", p)
	}
}
