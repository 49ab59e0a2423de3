package nodediff

import (
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/snapshot"
)

func load(t *testing.T, name string) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.Load("../../testdata/hosts/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTunedFlags: the same node before and after the dm-crypt workqueue
// fix differs in exactly the finding and the flags, finding first.
func TestTunedFlags(t *testing.T) {
	a, b := load(t, "aws-i4i-luks-default"), load(t, "aws-i4i-luks-default")
	found := false
	for i := range b.Storage.BlockDevices {
		if dm := b.Storage.BlockDevices[i].DM; dm != nil && dm.Name == "scratch" {
			dm.Targets[0].Params += " 2 no_read_workqueue no_write_workqueue"
			found = true
		}
	}
	if !found {
		t.Fatal("fixture has no dm mapping scratch")
	}
	ds, err := Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 {
		t.Fatalf("want 2 differences, got %+v", ds)
	}
	if ds[0].Area != AreaFinding || !strings.HasPrefix(ds[0].Item, "dmcrypt.workqueue") || ds[0].B != "" {
		t.Errorf("first: %+v, want the workqueue finding on A only", ds[0])
	}
	if ds[1].Area != AreaDMCrypt || ds[1].A != "none" || ds[1].B != "no_read_workqueue,no_write_workqueue" {
		t.Errorf("second: %+v, want the flags", ds[1])
	}
}

// TestSame: a snapshot compared with itself has no difference.
func TestSame(t *testing.T) {
	for _, n := range []string{"azure-e16dv5-eah", "net-azure-accelnet", "baremetal-crypt-on-crypt-loop"} {
		ds, err := Compare(load(t, n), load(t, n))
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 0 {
			t.Errorf("%s vs itself: %+v", n, ds)
		}
	}
}

// TestMissingSections: a snapshot without storage or network compares
// without a panic, saying what the other has.
func TestMissingSections(t *testing.T) {
	full := load(t, "net-aws-ena")
	empty := &snapshot.Snapshot{Manifest: full.Manifest}
	ds, err := Compare(full, empty)
	if err != nil {
		t.Fatal(err)
	}
	var sawNet bool
	for _, d := range ds {
		if d.Item == "network section" && d.A == "collected" && d.B == "not collected" {
			sawNet = true
		}
	}
	if !sawNet {
		t.Errorf("no network-section difference in %+v", ds)
	}
}
