package comparison

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/stats"
	"github.com/slowpath/slowpath/internal/units"
)

// runs makes n runs whose "read IOPS" is center with relative noise rel and
// whose "read p99" moves inversely, from a seeded generator.
func runs(r *rand.Rand, n int, center, rel float64) []Run {
	out := make([]Run, n)
	for i := range out {
		iops := center * (1 + rel*r.NormFloat64())
		out[i] = Run{Metrics: map[string]Measure{
			"read IOPS": {Unit: units.OpsPerSec, Better: HigherIsBetter, Value: iops},
			"read p99":  {Unit: units.Seconds, Better: LowerIsBetter, Value: 8 / iops},
		}}
	}
	return out
}

func cell(t *testing.T, r *Result, metric string, side int) Cell {
	t.Helper()
	for _, row := range r.Rows {
		if row.Metric == metric {
			return row.Cells[side]
		}
	}
	t.Fatalf("no row %q", metric)
	return Cell{}
}

func TestSameConfigurationIsNoDifference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	res, err := Compare([]Side{{Name: "a", Runs: runs(r, 10, 5000, 0.03)}, {Name: "b", Runs: runs(r, 10, 5000, 0.03)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"read IOPS", "read p99"} {
		c := cell(t, res, m, 1)
		if c.Comparison == nil || c.Comparison.Verdict != stats.NoDifference || c.Change != "" {
			t.Errorf("%s: %+v, want no significant difference", m, c.Comparison)
		}
		if d := FormatDelta(c); !strings.HasPrefix(d, "~ (p=") {
			t.Errorf("%s: delta %q, want ~", m, d)
		}
	}
	if res.MinRuns != 4 {
		t.Errorf("MinRuns = %d, want 4 at alpha 0.05", res.MinRuns)
	}
}

func TestTwentyPercentShiftIsSignificant(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	res, err := Compare([]Side{{Name: "plain", Runs: runs(r, 5, 5000, 0.01)}, {Name: "crypt", Runs: runs(r, 5, 4000, 0.01)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	iops := cell(t, res, "read IOPS", 1)
	if iops.Comparison.Verdict != stats.Significant || iops.Change != "worse" || *iops.DeltaPct > -15 || *iops.DeltaPct < -25 {
		t.Errorf("IOPS: %+v delta %v change %q, want significant ~-20%% worse", iops.Comparison, *iops.DeltaPct, iops.Change)
	}
	p99 := cell(t, res, "read p99", 1)
	if p99.Comparison.Verdict != stats.Significant || p99.Change != "worse" || *p99.DeltaPct < 20 {
		t.Errorf("p99: %+v delta %v change %q, want significant +25%% worse", p99.Comparison, *p99.DeltaPct, p99.Change)
	}
	// Two secondary rows: Holm doubles the smaller p.
	if d := FormatDelta(iops); !strings.HasPrefix(d, "-") || !strings.Contains(d, "(p=0.008, adjusted p=0.016)") {
		t.Errorf("delta %q, want a negative change with p=0.008 (5 vs 5 separated), 0.016 after Holm", d)
	}
}

func TestTwoRunsPerSideGiveNoVerdict(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	res, err := Compare([]Side{{Name: "a", Runs: runs(r, 2, 5000, 0.01)}, {Name: "b", Runs: runs(r, 2, 2500, 0.01)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := cell(t, res, "read IOPS", 1)
	if c.Comparison.Verdict != stats.TooFewRuns || c.Change != "" {
		t.Errorf("%+v change %q, want too few runs and no verdict", c.Comparison, c.Change)
	}
	if d := FormatDelta(c); d != "cannot decide: needs 5 runs per side" || c.RunsToDecide != 5 {
		t.Errorf("delta %q", d)
	}
}

// One run per side gives no interval and no claim: the I/Os inside a run
// are not independent (docs/compare.md), so nothing inside a run stands in
// for runs.
func TestOneRunHasNoIntervalNorClaim(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	res, err := Compare([]Side{{Name: "a", Runs: runs(r, 1, 5000, 0.01)}, {Name: "b", Runs: runs(r, 1, 3000, 0.01)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"read IOPS", "read p99"} {
		for side := range 2 {
			c := cell(t, res, m, side)
			if c.Lo != nil || c.Hi != nil || c.CI != "" {
				t.Errorf("%s side %d: interval %+v from one run", m, side, c)
			}
		}
		c := cell(t, res, m, 1)
		if c.Change != "" || FormatDelta(c) != "cannot decide: needs 5 runs per side" {
			t.Errorf("%s: change %q delta %q, want no claim", m, c.Change, FormatDelta(c))
		}
	}
}

func TestEnvironmentDifferences(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	a := Side{Name: "a", Runs: runs(r, 1, 1, 0), Facts: []Fact{{"kernel", "6.1.0"}, {"cpu", "EPYC"}, {"filesystem", "ext4"}}}
	b := Side{Name: "b", Runs: runs(r, 1, 1, 0), Facts: []Fact{{"kernel", "6.1.0"}, {"cpu", "EPYC"}, {"filesystem", "tmpfs"}, {"cloud", "aws"}}}
	res, err := Compare([]Side{a, b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []EnvDiff{{"filesystem", []string{"ext4", "tmpfs"}}, {"cloud", []string{"-", "aws"}}}
	if len(res.Environment) != len(want) {
		t.Fatalf("got %+v, want %+v", res.Environment, want)
	}
	for i := range want {
		if res.Environment[i].Key != want[i].Key || strings.Join(res.Environment[i].Values, ",") != strings.Join(want[i].Values, ",") {
			t.Errorf("diff %d = %+v, want %+v", i, res.Environment[i], want[i])
		}
	}
}

func TestStorageFacts(t *testing.T) {
	p := storagemodel.Path{MountPoint: "/data", EncryptionLayers: 1, Layers: []storagemodel.Layer{
		{Kind: storagemodel.LayerFilesystem, Name: "/data", FSType: "ext4"},
		{Kind: storagemodel.LayerDMCrypt, Name: "data", Depth: 1, Encrypted: true, EncryptedBy: "kernel-cpu", Crypt: &storagemodel.Crypt{CipherSpec: "aes-xts-plain64", SectorSize: 4096, SameCPUCrypt: true}},
		{Kind: storagemodel.LayerDisk, Name: "nvme0n1", Depth: 2},
	}}
	got := map[string]string{}
	for _, f := range StorageFacts(p) {
		got[f.Key] = f.Value
	}
	for k, v := range map[string]string{
		"filesystem":        "ext4",
		"dm-crypt data":     "aes-xts-plain64, flags: same_cpu_crypt sector_size:4096",
		"encryption layers": "1: dm-crypt (kernel-cpu)",
		"devices":           "disk nvme0n1",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// An engine layer is named in the layer list and its settings are a fact,
// so none / engine / LUKS / both differ where they should.
func TestStorageFactsEngine(t *testing.T) {
	p := storagemodel.Path{MountPoint: "/srv/bench", EncryptionLayers: 2, Layers: []storagemodel.Layer{
		{Kind: storagemodel.LayerEngine, Name: "MariaDB InnoDB", Encrypted: true, EncryptedBy: storagemodel.ByServiceCPU,
			Engines: []storagemodel.EngineProcess{{Engine: "mariadb", PID: 7, Comm: "mariadbd", Settings: []snapshot.EngineEncryption{
				{Setting: "innodb_encrypt_tables", Value: "ON", Enabled: true}, {Setting: "innodb_encrypt_log", Value: "ON", Enabled: true}}}}},
		{Kind: storagemodel.LayerFilesystem, Name: "/srv/bench", FSType: "ext4", Depth: 1},
		{Kind: storagemodel.LayerDMCrypt, Name: "bench", Depth: 2, Encrypted: true, EncryptedBy: "kernel-cpu", Crypt: &storagemodel.Crypt{CipherSpec: "aes-xts-plain64", SectorSize: 4096}},
		{Kind: storagemodel.LayerDisk, Name: "vdb", Depth: 3},
	}}
	got := map[string]string{}
	for _, f := range StorageFacts(p) {
		got[f.Key] = f.Value
	}
	for k, v := range map[string]string{
		"encryption layers": "2: MariaDB InnoDB (service-cpu), dm-crypt (kernel-cpu)",
		"engine encryption": "MariaDB InnoDB: innodb_encrypt_tables=ON innodb_encrypt_log=ON",
		"filesystem":        "ext4",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func TestCompareRejects(t *testing.T) {
	one := []Run{{Metrics: map[string]Measure{"x": {Value: 1}}}}
	for name, sides := range map[string][]Side{
		"one side":  {{Name: "a", Runs: one}},
		"no runs":   {{Name: "a", Runs: one}, {Name: "b"}},
		"same name": {{Name: "a", Runs: one}, {Name: "a", Runs: one}},
	} {
		if _, err := Compare(sides, Options{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := Compare([]Side{{Name: "a", Runs: one}, {Name: "b", Runs: one}}, Options{Alpha: 2}); err == nil {
		t.Error("alpha 2: no error")
	}
}
