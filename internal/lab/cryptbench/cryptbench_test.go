package cryptbench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/collect/cipherlimit"
	"github.com/slowpath/slowpath/internal/collect/host"
	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/lab/cryptlab"
	"github.com/slowpath/slowpath/internal/model/cryptotax"
	"github.com/slowpath/slowpath/internal/report/comparereport"
	"github.com/slowpath/slowpath/internal/report/htmlpage"
	"github.com/slowpath/slowpath/internal/report/htmlreport"
	"github.com/slowpath/slowpath/internal/testing/golden"
)

// TestChooseBacking: db-commit's default ramdisk grows with the CPUs (2
// commit jobs of 32 MiB per CPU, up to 64 jobs) and is refused, naming the
// way out, when memory is short or a given backing is too small; the fio
// profiles keep ram:1G and fit any backing.
func TestChooseBacking(t *testing.T) {
	db, fioProf, si := Find("db-commit"), Find("randrw-4k"), Find("search-index")
	ext4, xfs := &cryptlab.Filesystem{Type: "ext4"}, &cryptlab.Filesystem{Type: "xfs"}
	job := filepath.Join(t.TempDir(), "big.fio")
	if err := os.WriteFile(job, []byte("[w]\nrw=write\nbs=1m\nsize=600m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fioFile, err := Resolve("fio:" + job)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		given string
		p     *Profile
		cpus  int
		mem   uint64
		fs    *cryptlab.Filesystem
		want  string // the backing, or
		err   string // the refusal
	}{
		{"", db, 2, 24 << 30, nil, "ram:256M", ""},    // 64 + 4 × 32 = 192 MiB, + 1/8, in 64 MiB steps
		{"", db, 1, 0, nil, "ram:192M", ""},           // 128 MiB: the 1-vCPU VM
		{"", db, 64, 256 << 30, nil, "ram:2432M", ""}, // 64 + 64 × 32 = 2112 MiB: outgrows ram:1G
		{"", db, 64, 2 << 30, nil, "", "profile db-commit writes up to 2112 MiB on this machine (a 64m database region and 32m for each of 64 commit jobs, 2 per CPU): a ramdisk of 2432M would take more than half of the 2048 MiB of memory available: use --backing file:PATH:2432M"},
		{"", fioProf, 64, 24 << 30, nil, "ram:1G", ""},
		{"", fioProf, 2, 1 << 30, nil, "", "--profile randrw-4k with a smaller --backing ram:SIZE"},
		{"ram:1G", db, 16, 0, nil, "", "profile db-commit writes up to 1088 MiB on this machine (a 64m database region and 32m for each of 32 commit jobs, 2 per CPU) and --backing ram:1G has 1024 MiB: use --backing ram:1280M"},
		{"ram:32M", fioProf, 64, 0, nil, "ram:32M", ""},
		{"file:/var/tmp/c.img:4G", db, 64, 0, nil, "file:/var/tmp/c.img:4G", ""},
		// On a filesystem: its metadata on top (an eighth, at least 64
		// MiB), and xfs's smallest size.
		{"", db, 2, 24 << 30, ext4, "ram:320M", ""},
		{"", si, 2, 24 << 30, ext4, "ram:704M", ""}, // 512 MiB of files + 64 MiB of metadata, + 1/8
		{"", db, 1, 24 << 30, xfs, "ram:384M", ""},
		{"ram:256M", db, 1, 0, xfs, "", "mkfs.xfs makes nothing smaller than 300 MiB and --backing ram:256M has 256 MiB: use --backing ram:384M"},
		// A job file's size is unknown: the default ramdisk, as on a device.
		{"", fioFile, 2, 24 << 30, ext4, "ram:1G", ""},
	} {
		b, err := ChooseBacking(tc.given, tc.p, Sizing{NumCPU: tc.cpus, MemAvailable: tc.mem, Filesystem: tc.fs})
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q %s %d CPUs: err %v, want %q", tc.given, tc.p.Name, tc.cpus, err, tc.err)
		case tc.err == "" && (err != nil || b.String() != tc.want):
			t.Errorf("%q %s %d CPUs: %v, %v; want %s", tc.given, tc.p.Name, tc.cpus, b, err, tc.want)
		}
	}
	if mem := MemAvailable(hostfs.Default()); mem == 0 {
		t.Error("MemAvailable of this machine unknown")
	}
}

// TestDetectFigures: an icount shift on the kernel command line (or the
// flag) makes the figures a model, which wins over the emulated CPU it also
// runs on; a garbled or absent parameter leaves the CPU check.
func TestDetectFigures(t *testing.T) {
	const tcg = "processor\t: 0\nmodel name\t: QEMU TCG CPU version 2.5+\n"
	const epyc = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\n"
	for _, tc := range []struct {
		name, cmdline, cpuinfo string
		flagEmulated           bool
		flagShift              int
		want                   Figures
		label                  string
	}{
		{"icount from cmdline", "console=ttyS0 quiet slowpath.icount_shift=0 rdinit=/init\n", tcg, false, -1, Figures{Kind: "icount-model", Shift: 0}, "instruction-count model (qemu -icount shift=0: guest time is 1 ns per guest instruction), not a measurement"},
		{"shift 3", "slowpath.icount_shift=3", tcg, false, -1, Figures{Kind: "icount-model", Shift: 3}, "shift=3: guest time is 8 ns per guest instruction"},
		{"flag", "console=ttyS0", tcg, false, 2, Figures{Kind: "icount-model", Shift: 2}, "shift=2"},
		{"garbled shift", "slowpath.icount_shift=x slowpath.icount_shift=11", tcg, false, -1, Figures{Kind: "emulated"}, "functional (emulated CPU)"},
		{"tcg without icount", "console=ttyS0", tcg, false, -1, Figures{Kind: "emulated"}, "functional (emulated CPU)"},
		{"emulated flag", "", epyc, true, -1, Figures{Kind: "emulated"}, "functional (emulated CPU)"},
		{"real CPU", "BOOT_IMAGE=/vmlinuz root=/dev/vda1", epyc, false, -1, Figures{Kind: "measured"}, ""},
		{"no proc files", "", "", false, -1, Figures{Kind: "measured"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.cmdline != "" {
				os.WriteFile(filepath.Join(dir, "cmdline"), []byte(tc.cmdline), 0o644)
			}
			if tc.cpuinfo != "" {
				os.WriteFile(filepath.Join(dir, "cpuinfo"), []byte(tc.cpuinfo), 0o644)
			}
			got := DetectFigures(hostfs.FS{Proc: dir}, tc.flagEmulated, tc.flagShift)
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if l := got.Label(); tc.label == "" && l != "" || !strings.Contains(l, tc.label) {
				t.Errorf("label %q, want %q", l, tc.label)
			}
		})
	}
}

// labSides are lab crypt's sides after a randrw-4k matrix of 4 runs, each
// run a bench result of the lab job as the engine returns it (figures and
// where the time went): plain, default dm-crypt (queueing in kcryptd),
// no_workqueue (about the cipher's cost) and crypt on crypt, with a little
// spread between runs.
func labSides() ([]comparison.Side, []int) {
	mk := sideMaker([]float64{1, 1.004, 0.997, 1.002})
	sides := []comparison.Side{
		mk("plain", "/dev/ram0", 110e3, 120e-6, 0.9, 0.01),
		mk("default", "/dev/mapper/slowpath-lab-1-default", 23e3, 900e-6, 1.6, 0.9),
		mk("no_workqueue", "/dev/mapper/slowpath-lab-1-no_workqueue", 89e3, 150e-6, 1.1, 0.02),
		mk("stacked", "/dev/mapper/slowpath-lab-1-stacked", 12e3, 1.7e-3, 1.8, 1.1),
	}
	layers := []int{0, 1, 1, 2}
	for i := range sides {
		sides[i].Facts = []comparison.Fact{{Key: "encryption layers", Value: fmt.Sprint(layers[i])}}
	}
	return sides, layers
}

// sideMaker makes sides whose runs are a lab job's, one run per factor of
// spread.
func sideMaker(spread []float64) func(name, path string, iops, p99, cpu, kcpu float64) comparison.Side {
	return func(name, path string, iops, p99, cpu, kcpu float64) comparison.Side {
		s := comparison.Side{Name: name, Sources: []string{path}}
		for i, f := range spread {
			c := 1 + 0.01*float64(i)
			res := &benchresult.Result{Profile: "lab:randrw-4k", Figures: []benchresult.Figure{
				{Name: "read_iops", Phase: "lab", Value: iops * f / 2, Unit: benchresult.UnitIOPS},
				{Name: "read_p99", Phase: "lab", Value: p99 / f * 1e9, Unit: benchresult.UnitNanoseconds},
				{Name: "write_p99", Phase: "lab", Value: 1.2 * p99 / f * 1e9, Unit: benchresult.UnitNanoseconds},
				{Name: "total_iops", Value: iops * f, Unit: benchresult.UnitIOPS},
			}, WhereTime: &benchresult.WhereTime{Threads: []benchresult.ThreadGroup{
				{Group: benchresult.GroupWorkload, CPUs: (cpu - kcpu) * c},
				{Group: benchresult.GroupKcryptd, CPUs: kcpu * c * 0.9},
				{Group: benchresult.GroupKsoftirqd, CPUs: kcpu * c * 0.1},
			}}}
			s.Runs = append(s.Runs, cryptlab.JobRun(fmt.Sprintf("%s-%d", name, i+1), res))
		}
		return s
	}
}

func labResult(t *testing.T, figures Figures) (*comparison.Result, []comparison.Side) {
	t.Helper()
	prof := Find("randrw-4k")
	sides, layers := labSides()
	r, err := Result(Setup{Profile: prof, Backing: "ram:1G", BackingPath: "/dev/ram0", CryptVersion: "v1.24.0", Runs: 4, Runtime: 10 * time.Second,
		Figures: figures, Limit: &cipherlimit.Result{What: "the kernel's xts-aes-aesni through AF_ALG", PerCore: 1.41e9, Cores: 2, Kernel: &cipherlimit.Implementation{Driver: "xts-aes-aesni"}},
		NotRun: []comparison.NotRun{{Name: "high_priority", Reason: "needs dm-crypt target v1.26.0, kernel has v1.24.0 (high_priority came with Linux 6.10): unsupported on this kernel"}}},
		sides, layers)
	if err != nil {
		t.Fatal(err)
	}
	return r, sides
}

// TestCryptGolden: lab crypt's one result in every format, with the
// setup, the label of an instruction-count model, the variant the kernel
// could not run and the tax (testdata/golden/lab-crypt-randrw-4k.*).
func TestCryptGolden(t *testing.T) {
	r, sides := labResult(t, Figures{Kind: "icount-model", Shift: 0})
	for _, f := range []struct{ format, ext string }{{"text", "txt"}, {"markdown", "md"}, {"json", "json"}} {
		var b bytes.Buffer
		if err := comparereport.Write(&b, r, f.format); err != nil {
			t.Fatal(err)
		}
		golden.Compare(t, filepath.Join("../../../testdata/golden", "lab-crypt-randrw-4k."+f.ext), b.Bytes())
		for _, want := range []string{"IOPS", "crypto CPU", "write p99", "high_priority", "Encryption", "not a measurement"} {
			if !strings.Contains(strings.ToLower(b.String()), strings.ToLower(want)) {
				t.Errorf("%s lacks %q", f.format, want)
			}
		}
	}
	var b bytes.Buffer
	if err := htmlreport.WriteCompare(&b, r, sides); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, filepath.Join("../../../testdata/golden", "lab-crypt-randrw-4k.html"), htmlpage.ElideLibrary(b.Bytes()))

	// The tax: default and stacked queue far above the cipher,
	// no_workqueue costs about what the cipher does; with the CPU form from
	// the CPU rows.
	tax := r.Tax
	if tax == nil || len(tax.Sides) != 3 {
		t.Fatalf("tax %+v", tax)
	}
	for _, s := range tax.Sides {
		if s.ObservedCPUPerGiB == nil || s.Ratio == nil {
			t.Errorf("%s: no CPU form or ratio: %+v", s.Name, s)
		}
	}
	if tax.Sides[0].Verdict != cryptotax.VerdictFarAbove || tax.Sides[1].Verdict != cryptotax.VerdictCipher || tax.Sides[2].LayersMore != 2 {
		t.Errorf("tax sides %+v", tax.Sides)
	}
}

// TestCryptRefusesNoVariant: with no variant that ran there is nothing to
// compare; the error names the reasons and what to do.
func TestCryptRefusesNoVariant(t *testing.T) {
	sides, _ := labSides()
	_, err := Result(Setup{Profile: Find("randrw-4k"), Limit: &cipherlimit.Result{PerCore: 1e9},
		NotRun: []comparison.NotRun{{Name: "high_priority", Reason: "needs v1.26.0"}}}, sides[:1], []int{0})
	if err == nil || !strings.Contains(err.Error(), "high_priority: needs v1.26.0") || !strings.Contains(err.Error(), "--variants") {
		t.Errorf("err %v", err)
	}
}

// TestCryptJSONSaysWhatFiguresAre: the JSON carries the kind of figures and
// the label next to the comparison's own fields.
func TestCryptJSONSaysWhatFiguresAre(t *testing.T) {
	for _, tc := range []struct {
		f    Figures
		want map[string]any
	}{
		{Figures{Kind: "icount-model"}, map[string]any{"figures": "icount-model", "icount_shift": 0.0}},
		{Figures{Kind: "emulated"}, map[string]any{"figures": "emulated", "figures_note": host.EmulatedLabel}},
		{Figures{Kind: "measured"}, map[string]any{"figures": "measured"}},
	} {
		r, _ := labResult(t, tc.f)
		var b bytes.Buffer
		if err := comparereport.Write(&b, r, "json"); err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if got["format_version"] != float64(comparison.JSONVersion) || got["encryption_tax"] == nil || got["not_run"] == nil {
			t.Errorf("%s: comparison fields not inlined: %s", tc.f.Kind, b.String())
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v", tc.f.Kind, k, got[k], v)
			}
		}
		_, hasShift := got["icount_shift"]
		_, hasNote := got["figures_note"]
		if hasShift != (tc.f.Kind == "icount-model") || hasNote != (tc.f.Kind != "measured") {
			t.Errorf("%s: %s", tc.f.Kind, b.String())
		}
		if tc.f.Kind == "icount-model" && !strings.Contains(got["figures_note"].(string), "not a measurement") {
			t.Errorf("model note: %v", got["figures_note"])
		}
	}
}

// TestCryptSplitGolden: with null_cipher among the variants, lab crypt
// measures the tax in parts: plain → null_cipher (dm-crypt's queueing),
// null_cipher → default (the cipher), and what the bypass recovers with
// and without a cipher; 6 runs a side, so Holm over the four steps can
// decide (testdata/golden/lab-crypt-split.*). The null cipher side has no
// encryption layer, so the expected tax leaves it out.
func TestCryptSplitGolden(t *testing.T) {
	mk := sideMaker([]float64{1, 1.004, 0.997, 1.002, 0.999, 1.003})
	sides := []comparison.Side{
		mk("plain", "/dev/ram0", 110e3, 120e-6, 0.9, 0.01),
		mk("default", "/dev/mapper/slowpath-lab-1-default", 23e3, 900e-6, 1.6, 0.9),
		mk("no_workqueue", "/dev/mapper/slowpath-lab-1-no_workqueue", 89e3, 150e-6, 1.1, 0.02),
		mk("null_cipher", "/dev/mapper/slowpath-lab-1-null_cipher", 52e3, 400e-6, 1.3, 0.6),
		mk("null_cipher_no_workqueue", "/dev/mapper/slowpath-lab-1-null_cipher_no_workqueue", 104e3, 130e-6, 1.0, 0.02),
	}
	layers := []int{0, 1, 1, 0, 0}
	for i := range sides {
		sides[i].Facts = []comparison.Fact{{Key: "encryption layers", Value: fmt.Sprint(layers[i])}}
	}
	r, err := Result(Setup{Profile: Find("randrw-4k"), Backing: "ram:1G", BackingPath: "/dev/ram0", CryptVersion: "v1.24.0", Runs: 6, Runtime: 10 * time.Second,
		Figures: Figures{Kind: "measured"}, Limit: &cipherlimit.Result{What: "the kernel's xts-aes-aesni through AF_ALG", PerCore: 1.41e9, Cores: 2, Kernel: &cipherlimit.Implementation{Driver: "xts-aes-aesni"}}},
		sides, layers)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ format, ext string }{{"text", "txt"}, {"markdown", "md"}, {"json", "json"}} {
		var b bytes.Buffer
		if err := comparereport.Write(&b, r, f.format); err != nil {
			t.Fatal(err)
		}
		golden.Compare(t, filepath.Join("../../../testdata/golden", "lab-crypt-split."+f.ext), b.Bytes())
	}
	var b bytes.Buffer
	if err := htmlreport.WriteCompare(&b, r, sides); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, filepath.Join("../../../testdata/golden", "lab-crypt-split.html"), htmlpage.ElideLibrary(b.Bytes()))

	s := r.Split
	if s == nil || s.Metric != "IOPS" || len(s.Steps) != 4 {
		t.Fatalf("split %+v: want four steps on IOPS", s)
	}
	want := []struct{ part, change string }{{"queueing", "worse"}, {"cipher", "worse"}, {"bypass, with AES", "better"}, {"bypass, no cipher", "better"}}
	for i, st := range s.Steps {
		if st.Part != want[i].part || st.Change != want[i].change {
			t.Errorf("step %d: %s %q, want %s %q", i, st.Part, st.Change, want[i].part, want[i].change)
		}
	}
	for _, ts := range r.Tax.Sides {
		if strings.HasPrefix(ts.Name, "null_cipher") {
			t.Errorf("the tax expects a cipher cost of %s, which encrypts nothing", ts.Name)
		}
	}
	// Without a null cipher side there is no split.
	r2, _ := labResult(t, Figures{Kind: "measured"})
	if r2.Split != nil {
		t.Errorf("a split without null_cipher: %+v", r2.Split)
	}
}

// TestCryptNeighbourGuard: with --neighbour each run carries the
// co-runner's lateness p99, which is a guard row: a variant that makes
// the neighbour significantly later is flagged whatever its own IOPS.
func TestCryptNeighbourGuard(t *testing.T) {
	mk := sideMaker([]float64{1, 1.004, 0.997, 1.002, 0.999, 1.003})
	sides := []comparison.Side{
		mk("plain", "/dev/ram0", 110e3, 120e-6, 0.9, 0.01),
		mk("default", "/dev/mapper/slowpath-lab-1-default", 23e3, 900e-6, 1.6, 0.9),
		mk("high_priority", "/dev/mapper/slowpath-lab-1-high_priority", 30e3, 700e-6, 1.6, 0.9),
	}
	late := []float64{60e-6, 80e-6, 400e-6} // the neighbour's p99 beside each side
	co := newCoRunner(false)
	for i := range sides {
		sides[i].Facts = []comparison.Fact{{Key: "encryption layers", Value: fmt.Sprint(min(i, 1))}}
		for n := range sides[i].Runs {
			name := fmt.Sprintf("%s-%d", sides[i].Name, n+1)
			co.p99[name] = late[i] * (1 + 0.01*float64(n))
			co.addTo(&sides[i].Runs[n], name)
		}
	}
	r, err := Result(Setup{Profile: Find("randrw-4k"), Runs: 6, Runtime: time.Second, Neighbour: true,
		Limit: &cipherlimit.Result{PerCore: 1.41e9, Cores: 2}}, sides, []int{0, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	var row *comparison.Row
	for i := range r.Rows {
		if r.Rows[i].Metric == NeighbourP99 {
			row = &r.Rows[i]
		}
	}
	if row == nil || row.Role != comparison.RoleGuard {
		t.Fatalf("neighbour row %+v: want a guard", row)
	}
	if c := row.Cells[2]; c.Change != "worse" {
		t.Errorf("high_priority's neighbour p99 %v against plain's: %q, want significantly worse", c.Median, c.Change)
	}
	var worse []string
	for _, v := range r.Verdicts {
		if v.Side == "high_priority" {
			worse = v.GuardsWorse
		}
	}
	if !slices.Contains(worse, NeighbourP99) {
		t.Errorf("high_priority's verdict does not name the neighbour guard: %v", worse)
	}
	if !slices.ContainsFunc(r.Setup, func(f comparison.Fact) bool { return f.Key == "neighbour" }) {
		t.Errorf("setup does not say a neighbour ran: %+v", r.Setup)
	}
}

// TestCoRunner: a real co-runner started and stopped per run, its p99
// kept by the run's name; none when --neighbour is off.
func TestCoRunner(t *testing.T) {
	co := newCoRunner(true)
	co.start("default-1")
	time.Sleep(30 * time.Millisecond)
	co.start("default-2") // stops the first
	time.Sleep(30 * time.Millisecond)
	co.stop()
	co.stop() // idempotent
	if _, ok := co.p99["default-1"]; !ok {
		t.Errorf("no p99 for default-1: %v", co.p99)
	}
	run := comparison.Run{Metrics: map[string]comparison.Measure{}}
	co.addTo(&run, "default-2")
	if m, ok := run.Metrics[NeighbourP99]; !ok || m.Value < 0 || m.Better != comparison.LowerIsBetter {
		t.Errorf("default-2: %+v", run.Metrics)
	}
	off := newCoRunner(false)
	off.start("x-1")
	off.stop()
	if off.running != nil || len(off.p99) != 0 {
		t.Error("a co-runner ran without --neighbour")
	}
}

// TestResolveAndFilesystem: every bench profile is in the lab; the ones
// that need files get ext4 by default, the ones that can run on the device
// keep it; a fio:FILE reads its job file when resolved.
func TestResolveAndFilesystem(t *testing.T) {
	job := filepath.Join(t.TempDir(), "mine.fio")
	if err := os.WriteFile(job, []byte("[w]\nrw=randwrite\nbs=4k\nsize=8m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, wantFS, workload string }{
		{"randrw-4k", "none", "lab:randrw-4k"},
		{"db-commit", "none", "db-commit"},
		{"telemetry-ingest", "none", "telemetry-ingest"},
		{"search-index", "ext4", "search-index"},
		{"fio:" + job, "ext4", "fio:mine.fio"},
	} {
		p, err := Resolve(tc.name)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		fs, err := ChooseFilesystem("", p)
		got := "none"
		if fs != nil {
			got = fs.Type
		}
		if err != nil || got != tc.wantFS || p.Workload != tc.workload {
			t.Errorf("%s: workload %s, filesystem %s (%v); want %s on %s", tc.name, p.Workload, got, err, tc.workload, tc.wantFS)
		}
	}
	if p, _ := Resolve("fio:" + job); len(p.Arg.JobFile) == 0 {
		t.Error("fio:FILE resolved without its job file")
	}
	if _, err := Resolve("lab:randrw-4k"); err == nil {
		t.Error("lab:randrw-4k resolved: the lab names its jobs without the prefix")
	}
}
