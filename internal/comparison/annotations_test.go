package comparison_test

import (
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/experiment"
	"github.com/slowpath/slowpath/internal/model/cryptotax"
	"github.com/slowpath/slowpath/internal/pathrecord"
	"github.com/slowpath/slowpath/internal/units"
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
				Storage: &pathrecord.Path{MountPoint: "/data", EncryptionLayers: layers}}},
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

func tax(t *testing.T, sides []comparison.Side, limit cryptotax.Limit) *comparison.Result {
	t.Helper()
	res, err := comparison.Compare(sides, comparison.Options{})
	if err != nil {
		t.Fatal(err)
	}
	layers := comparison.StorageLayers(sides)
	// The profile's declared shape (db-commit's direct-4k phase).
	in := comparison.TaxInput{Limit: limit, Layers: layers, NoShape: "no shape", Shape: experiment.Declared(sides[0].FactValue("profile")).Shape}
	if err := comparison.AssessTax(res, in); err != nil {
		t.Fatal(err)
	}
	return res
}

// The PostgreSQL story's shape: 171k IOPS plain, 26.6k on default dm-crypt
// (at queue depth 1 per the db-commit phase), at 1 GB/s per core: far above
// the cipher; a healthy 10% loss is about the cipher; crypt on crypt counts
// two layers.
func TestAssessTax(t *testing.T) {
	sides := []comparison.Side{
		dbCommitSide(t, "plain", 0, 85.5e3, 85.5e3),
		dbCommitSide(t, "luks-default", 1, 13.3e3, 13.3e3),
		dbCommitSide(t, "luks-tuned", 1, 77e3, 77e3),
		dbCommitSide(t, "crypt-on-crypt", 2, 9e3, 9e3),
		dbCommitSide(t, "also-plain", 0, 85e3, 85e3),
	}
	if !comparison.NeedsTax(comparison.StorageLayers(sides)) {
		t.Fatal("NeedsTax false with encrypted sides")
	}
	res := tax(t, sides, cryptotax.Limit{BytesPerSecPerCore: 1e9, Source: "test"})
	tx := res.Tax
	if tx.NotComputed != "" || tx.Shape == nil || tx.Shape.Phase != "direct-4k" || tx.Cipher != "test" {
		t.Fatalf("tax %+v", tx)
	}
	type want struct {
		name    string
		layers  int
		ratio   float64 // to 0.1
		verdict string
	}
	// Expected per I/O: 4096 B × layers / 1 GB/s = 4.096 µs per layer;
	// observed: 1/IOPS − 1/plain at queue depth 1 (IOPS summed over reads
	// and writes).
	exp := func(iops float64, layers int) float64 {
		return (1/(2*iops) - 1/(2*85.5e3)) / (4.096e-6 * float64(layers))
	}
	wants := []want{
		{"luks-default", 1, exp(13.3e3, 1), cryptotax.VerdictFarAbove},
		{"luks-tuned", 1, exp(77e3, 1), cryptotax.VerdictCipher},
		{"crypt-on-crypt", 2, exp(9e3, 2), cryptotax.VerdictFarAbove},
	}
	if len(tx.Sides) != len(wants) {
		t.Fatalf("%d tax sides, want %d (also-plain has no more layers): %+v", len(tx.Sides), len(wants), tx.Sides)
	}
	for i, w := range wants {
		s := tx.Sides[i]
		r := w.ratio
		if s.Name != w.name || s.LayersMore != w.layers || s.Ratio == nil || s.Verdict != w.verdict {
			t.Errorf("side %d: %+v, want %+v", i, s, w)
			continue
		}
		if rel := *s.Ratio / r; rel < 0.9 || rel > 1.1 {
			t.Errorf("%s: ratio %.2f, want about %.2f", s.Name, *s.Ratio, r)
		}
		if s.ObservedCPUPerGiB != nil {
			t.Errorf("%s: CPU form without a CPU row", s.Name)
		}
		if !strings.Contains(s.Line, w.verdict) || !strings.HasPrefix(s.Line, "cipher ") {
			t.Errorf("%s: line %q", s.Name, s.Line)
		}
	}
	if got := tx.Subject(tx.Sides[0], "plain"); got != "luks-default (1 encryption layer(s) more than plain, direct-4k)" {
		t.Errorf("subject %q", got)
	}
	if h := tx.Heading(); h != "Encryption tax (expected from the cipher's cost, 1.00 GB/s per core: test)" {
		t.Errorf("heading %q", h)
	}

	// Same layers everywhere: no tax worth measuring.
	if comparison.NeedsTax(comparison.StorageLayers([]comparison.Side{dbCommitSide(t, "a", 1, 1, 1), dbCommitSide(t, "b", 1, 1, 1)})) {
		t.Error("NeedsTax true without a difference in encryption layers")
	}
	if comparison.NeedsTax([]int{-1, 1}) {
		t.Error("NeedsTax true with an unknown baseline")
	}
	// Another profile: no shape, and the tax says why rather than guessing.
	other := []comparison.Side{sides[0], sides[1]}
	other[0].Facts = []comparison.Fact{{Key: "profile", Value: "search-index"}}
	if experiment.Declared("search-index").Shape != nil {
		t.Error("search-index has a tax shape")
	}
	if r := tax(t, other, cryptotax.Limit{BytesPerSecPerCore: 1e9}); r.Tax.NotComputed != "no shape" || len(r.Tax.Sides) != 0 {
		t.Errorf("other profile: %+v", r.Tax)
	}
	// No cipher figure: every side says so, none guesses a verdict.
	if r := tax(t, sides[:2], cryptotax.Limit{}); r.Tax.Sides[0].NotComputed != "no cipher throughput" || r.Tax.Sides[0].Ratio != nil {
		t.Errorf("no cipher: %+v", r.Tax.Sides[0])
	}
	// A side without the phase's IOPS: not computed, named.
	bare := dbCommitSide(t, "bare", 1, 0, 0)
	if r := tax(t, []comparison.Side{sides[0], bare}, cryptotax.Limit{BytesPerSecPerCore: 1e9}); r.Tax.Sides[0].NotComputed != "no direct-4k IOPS on both sides" {
		t.Errorf("no IOPS: %+v", r.Tax.Sides[0])
	}
}

// TestAssessTaxCPUForm: with a CPU row (lab crypt's fio profiles) the CPU
// per GiB beyond the baseline's is computed from the rows' medians.
func TestAssessTaxCPUForm(t *testing.T) {
	side := func(name string, iops, cpu float64) comparison.Side {
		var runs []comparison.Run
		for range 4 {
			runs = append(runs, comparison.Run{Metrics: map[string]comparison.Measure{
				"IOPS": {Unit: units.OpsPerSec, Better: comparison.HigherIsBetter, Value: iops},
				"CPU":  {Unit: units.CPU, Better: comparison.LowerIsBetter, Value: cpu},
			}})
		}
		return comparison.Side{Name: name, Runs: runs}
	}
	res, err := comparison.Compare([]comparison.Side{side("plain", 100e3, 0.5), side("default", 50e3, 1)}, comparison.Options{})
	if err != nil {
		t.Fatal(err)
	}
	shape := comparison.TaxShape{IOPS: []string{"IOPS"}, CPU: "CPU", BytesPerIO: 4096, QueueDepth: 8}
	if err := comparison.AssessTax(res, comparison.TaxInput{Limit: cryptotax.Limit{BytesPerSecPerCore: 1e9, Source: "t"}, Cores: 2, Layers: []int{0, 1}, Shape: &shape}); err != nil {
		t.Fatal(err)
	}
	s := res.Tax.Sides[0]
	// CPU s per byte: 1/(50e3×4096) − 0.5/(100e3×4096), per GiB.
	want := (1/(50e3*4096) - 0.5/(100e3*4096)) * (1 << 30)
	if s.ObservedCPUPerGiB == nil || *s.ObservedCPUPerGiB < want*0.999 || *s.ObservedCPUPerGiB > want*1.001 {
		t.Errorf("CPU form %v, want %g", s.ObservedCPUPerGiB, want)
	}
	// Expected per I/O: 4096/1e9 × max(1, 8/2) = 16.384 µs; observed
	// 8 × (1/50e3 − 1/100e3) = 80 µs.
	if s.ExpectedPerIOSeconds < 16.38e-6 || s.ExpectedPerIOSeconds > 16.39e-6 || s.ObservedPerIOSeconds < 79.99e-6 || s.ObservedPerIOSeconds > 80.01e-6 {
		t.Errorf("per I/O: %+v", s)
	}
	if got := res.Tax.Subject(s, "plain"); got != "default (1 encryption layer(s) more than plain)" {
		t.Errorf("subject %q", got)
	}
	if err := comparison.AssessTax(res, comparison.TaxInput{Layers: []int{0}}); err == nil {
		t.Error("no error for a layer count per side missing")
	}
}
