package comparecmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/model/cryptotax"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
)

// dbCommitSide is a db-commit side whose direct-4k phase did readIOPS and
// writeIOPS on a target with layers encryption layers.
func dbCommitSide(t *testing.T, name string, layers int, readIOPS, writeIOPS float64) comparison.Side {
	t.Helper()
	var rs []*benchresult.Result
	for i := range 4 {
		f := 1 + 0.01*float64(i)
		rs = append(rs, &benchresult.Result{Kind: benchresult.Kind, SchemaVersion: benchresult.SchemaVersion, Profile: "db-commit",
			Status: benchresult.StatusComplete,
			Environment: benchresult.Environment{Target: &benchresult.TargetPath{Path: "/data",
				Storage: &storagemodel.Path{MountPoint: "/data", EncryptionLayers: layers}}},
			Figures: []benchresult.Figure{
				{Name: "read_iops", Phase: "direct-4k", Value: readIOPS * f, Unit: benchresult.UnitIOPS, Better: benchresult.HigherIsBetter},
				{Name: "write_iops", Phase: "direct-4k", Value: writeIOPS * f, Unit: benchresult.UnitIOPS, Better: benchresult.HigherIsBetter},
				{Name: "commit_ops_per_sec", Phase: "commit-1", Value: 1000, Unit: benchresult.UnitOpsPerSec, Better: benchresult.HigherIsBetter},
			}})
	}
	s, err := comparison.FromResults(name, nil, rs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The PostgreSQL story's shape: 171k IOPS plain, 26.6k on default dm-crypt
// (at queue depth 1 per the db-commit phase), at 1 GB/s per core: far above
// the cipher; a healthy 10% loss is about the cipher; crypt on crypt counts
// two layers.
func TestCompareTax(t *testing.T) {
	sides := []comparison.Side{
		dbCommitSide(t, "plain", 0, 85.5e3, 85.5e3),
		dbCommitSide(t, "luks-default", 1, 13.3e3, 13.3e3),
		dbCommitSide(t, "luks-tuned", 1, 77e3, 77e3),
		dbCommitSide(t, "crypt-on-crypt", 2, 9e3, 9e3),
	}
	if !needsTax(sides) {
		t.Fatal("needsTax false with encrypted sides")
	}
	res, err := comparison.Compare(sides, comparison.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	writeTax(&b, res, sides, cryptotax.Limit{BytesPerSecPerCore: 1e9, Source: "test"})
	out := b.String()
	t.Log(out)
	for _, want := range []string{
		"luks-default (1 encryption layer(s) more than plain, direct-4k): cipher 4.096µs/IO, observed +31.",
		"(7.6x): " + cryptotax.VerdictFarAbove,
		"luks-tuned (1 encryption layer(s) more than plain, direct-4k): cipher 4.096µs/IO, observed +",
		cryptotax.VerdictCipher,
		"crypt-on-crypt (2 encryption layer(s) more than plain, direct-4k): cipher 8.192µs/IO",
		"valid for results from this CPU",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("tax output lacks %q", want)
		}
	}

	// Same layers everywhere: no tax, no cipher measurement.
	if needsTax([]comparison.Side{dbCommitSide(t, "a", 1, 1, 1), dbCommitSide(t, "b", 1, 1, 1)}) {
		t.Error("needsTax true without a difference in encryption layers")
	}
	// Another profile: no measurement (compare stays deterministic), and
	// writeTax says why rather than guessing.
	other := []comparison.Side{sides[0], sides[1]}
	other[0].Facts = []comparison.Fact{{Key: "profile", Value: "search-index"}}
	if needsTax(other) {
		t.Error("needsTax true for search-index")
	}
	b.Reset()
	writeTax(&b, res, other, cryptotax.Limit{BytesPerSecPerCore: 1e9})
	if !strings.Contains(b.String(), `not computed: profile "search-index"`) {
		t.Errorf("other profile: %s", b.String())
	}
}
