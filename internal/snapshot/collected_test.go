package snapshot_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/slowpath/slowpath/internal/collect"
	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/collect/network"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testing/hostfstest"
)

// TestCollectedTreesValidate: what the collectors make of every saved host
// tree in the repository (including the deliberately broken ones) obeys
// the rules a decoded snapshot obeys, as collectcmd.Snapshot requires of a
// live collection. The live-only sources are off (the trees are not this
// host), so nothing is asked of this kernel or of the network.
func TestCollectedTreesValidate(t *testing.T) {
	var trees []string
	for _, glob := range []string{"../collect/storage/testdata/*.txtar", "../collect/host/testdata/*.txtar", "../analyze/testdata/*.txtar"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		trees = append(trees, m...)
	}
	if len(trees) < 3 {
		t.Fatalf("found only %d trees: %v", len(trees), trees)
	}
	for _, tree := range trees {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(tree)))+"/"+filepath.Base(tree), func(t *testing.T) {
			s := collect.Run(context.Background(), collect.Options{
				FS:          hostfstest.Materialise(t, tree),
				LiveSources: hostfs.LiveOff,
				Version:     "test",
				Cloud:       cloud.Options{Cloud: "none"},
				Net:         network.Options{Interval: 0},
			})
			if err := s.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}
