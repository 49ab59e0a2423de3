package comparison_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/stats"
	"github.com/slowpath/slowpath/internal/testing/golden"
	"github.com/slowpath/slowpath/internal/testing/testenv"
	"github.com/slowpath/slowpath/internal/workload/profile"
)

// The A/A experiment (issue 18): db-commit on one directory given as two
// sides A and B, 6 runs each, repeated; on a tmpfs and on the root
// filesystem. Rounds alternate A B, B A so a drift falls on both sides
// alike, and the two filesystems' runs interleave, so the first 4 A runs of
// each filesystem in one repetition also make the power experiment (tmpfs
// against the root filesystem, 4 runs per side). BenchmarkAAAndPower runs it
// (make bench) and, with SLOWPATH_UPDATE=1, writes aaFile;
// TestAAOnCommittedRuns and TestPowerOnCommittedRuns check the committed
// runs, so `make test` never depends on fresh, noisy runs.
const (
	aaProfile    = profile.DBCommit
	aaRuns       = 6
	aaReps       = 20
	aaPowerRuns  = 4
	aaFile       = "testdata/aa/db-commit.jsonl.gz"
	aaFSTmpfs    = "tmpfs"
	aaFSRoot     = "root"
	aaRuntime    = "1s"
	aaScale      = "0.05"
	aaConfidence = 0.99 // of the binomial bound on false-positive counts
)

// aaLine is one line of aaFile (JSON lines, gzip-compressed: 1.9 MB of
// text, 160 KB compressed): which experiment cell a run belongs to and its
// bench result, trimmed of what the comparison does not use (trim) but
// otherwise as bench wrote it.
type aaLine struct {
	FS     string              `json:"fs"`
	Rep    int                 `json:"rep"`
	Side   string              `json:"side"`
	Run    int                 `json:"run"`
	Result *benchresult.Result `json:"result"`
}

// aaData is runs by filesystem, repetition and side, in run order.
type aaData map[string]map[int]map[string][]*benchresult.Result

func (d aaData) add(l aaLine) {
	if d[l.FS] == nil {
		d[l.FS] = map[int]map[string][]*benchresult.Result{}
	}
	if d[l.FS][l.Rep] == nil {
		d[l.FS][l.Rep] = map[string][]*benchresult.Result{}
	}
	d[l.FS][l.Rep][l.Side] = append(d[l.FS][l.Rep][l.Side], l.Result)
}

func loadAA(t testing.TB) aaData {
	t.Helper()
	f, err := os.Open(aaFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", aaFile, err)
	}
	d := aaData{}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var raw struct {
			aaLine
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatalf("%s:%d: %v", aaFile, n, err)
		}
		// Through benchresult.Read, as compare reads a result file.
		r, err := benchresult.Read(bytes.NewReader(raw.Result))
		if err != nil {
			t.Fatalf("%s:%d: %v", aaFile, n, err)
		}
		if r.Status != benchresult.StatusComplete || r.Profile != aaProfile {
			t.Fatalf("%s:%d: a %s %s run", aaFile, n, r.Status, r.Profile)
		}
		l := raw.aaLine
		l.Result = r
		d.add(l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, fs := range []string{aaFSTmpfs, aaFSRoot} {
		if len(d[fs]) != aaReps {
			t.Fatalf("%s: %d repetitions, want %d", fs, len(d[fs]), aaReps)
		}
		for rep, sides := range d[fs] {
			if len(sides["A"]) != aaRuns || len(sides["B"]) != aaRuns {
				t.Fatalf("%s repetition %d: %d+%d runs, want %d+%d", fs, rep, len(sides["A"]), len(sides["B"]), aaRuns, aaRuns)
			}
		}
	}
	return d
}

func compareSides(t testing.TB, names [2]string, runs [2][]*benchresult.Result) *comparison.Result {
	t.Helper()
	var sides []comparison.Side
	for i, name := range names {
		s, err := comparison.FromResults(name, nil, runs[i])
		if err != nil {
			t.Fatal(err)
		}
		sides = append(sides, s)
	}
	m, ok := profile.MetricsOf(comparison.CommonProfile(sides))
	if !ok {
		t.Fatalf("no declared metrics for %q", comparison.CommonProfile(sides))
	}
	r, err := comparison.Compare(sides, comparison.Options{Primary: profile.Rows(m.Primary), Guards: profile.Rows(m.Guards)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// aaCounts are the false positives of one filesystem's repetitions.
type aaCounts struct {
	Reps int
	// Verdicts: a side's verdict on the primary metrics that claims a
	// difference, better, worse or mixed (stated level: alpha, the fixed
	// sequence's family-wise error).
	Verdicts int
	// SecondaryFamilies: repetitions with any secondary row significant
	// after Holm (stated level: alpha).
	SecondaryFamilies int
	// Guards: guard rows significant either way, each at alpha, out of
	// GuardTests.
	Guards, GuardTests int
	// Rows: rows significant after their adjustment, and with raw p,
	// out of RowTests (rows with a verdict possible).
	Rows, RawRows, RowTests int
}

func (c aaCounts) String() string {
	return fmt.Sprintf("%d repetitions: verdict %d (%.1f%%), secondary family %d (%.1f%%), guards %d of %d (%.1f%%), rows %d of %d adjusted (%.2f%%), %d raw (%.2f%%)",
		c.Reps, c.Verdicts, pct(c.Verdicts, c.Reps), c.SecondaryFamilies, pct(c.SecondaryFamilies, c.Reps),
		c.Guards, c.GuardTests, pct(c.Guards, c.GuardTests), c.Rows, c.RowTests, pct(c.Rows, c.RowTests), c.RawRows, pct(c.RawRows, c.RowTests))
}

func pct(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

func countAA(t testing.TB, reps map[int]map[string][]*benchresult.Result) aaCounts {
	var c aaCounts
	keys := make([]int, 0, len(reps))
	for k := range reps {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		r := compareSides(t, [2]string{"A", "B"}, [2][]*benchresult.Result{reps[k]["A"], reps[k]["B"]})
		c.Reps++
		switch r.Verdicts[0].Outcome {
		case comparison.OutcomeBetter, comparison.OutcomeWorse, comparison.OutcomeMixed:
			c.Verdicts++
			t.Logf("repetition %d: verdict %s", k, comparison.VerdictLine(r.Verdicts[0]))
		}
		family := false
		for _, row := range r.Rows {
			cell := row.Cells[1]
			if cell.Verdict == nil {
				continue
			}
			c.RowTests++
			sig := *cell.Verdict == stats.Significant
			if sig {
				c.Rows++
			}
			if cell.Comparison.Verdict == stats.Significant {
				c.RawRows++
			}
			switch row.Role {
			case comparison.RoleGuard:
				c.GuardTests++
				if sig {
					c.Guards++
				}
			case comparison.RoleSecondary:
				family = family || sig
			}
		}
		if family {
			c.SecondaryFamilies++
		}
	}
	return c
}

// binomialBound is the smallest k with P(X <= k) >= conf for X ~
// Binomial(n, p): a false-positive count above it would be rarer than
// 1 - conf if the stated level held.
func binomialBound(n int, p, conf float64) int {
	cum := 0.0
	for k := 0; k <= n; k++ {
		lc, _ := math.Lgamma(float64(n + 1))
		lk, _ := math.Lgamma(float64(k + 1))
		lnk, _ := math.Lgamma(float64(n - k + 1))
		cum += math.Exp(lc - lk - lnk + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
		if cum >= conf {
			return k
		}
	}
	return n
}

func TestBinomialBound(t *testing.T) {
	// Binomial(20, 0.05): P(X<=2) = 0.9245, P(X<=3) = 0.9841, P(X<=4) = 0.9974.
	for _, tc := range []struct {
		conf float64
		want int
	}{{0.9, 2}, {0.95, 3}, {0.99, 4}} {
		if got := binomialBound(20, 0.05, tc.conf); got != tc.want {
			t.Errorf("binomialBound(20, 0.05, %v) = %d, want %d", tc.conf, got, tc.want)
		}
	}
}

// aaProblems lists the false-positive counts above what their stated
// level allows: above the 99% quantile of Binomial(tests, alpha) for the
// verdicts, the secondary families and the guards, and for the row
// verdicts issue 18's criterion, at most alpha × rows over all repetitions.
func aaProblems(c aaCounts, alpha float64) []string {
	var out []string
	if b := binomialBound(c.Reps, alpha, aaConfidence); c.Verdicts > b {
		out = append(out, fmt.Sprintf("%d of %d A/A verdicts claim a difference, more than the %d alpha %g allows", c.Verdicts, c.Reps, b, alpha))
	}
	if b := binomialBound(c.Reps, alpha, aaConfidence); c.SecondaryFamilies > b {
		out = append(out, fmt.Sprintf("%d of %d A/A comparisons have a significant secondary row after Holm, more than the %d alpha %g allows", c.SecondaryFamilies, c.Reps, b, alpha))
	}
	if b := binomialBound(c.GuardTests, alpha, aaConfidence); c.Guards > b {
		out = append(out, fmt.Sprintf("%d of %d A/A guard tests significant, more than the %d alpha %g allows", c.Guards, c.GuardTests, b, alpha))
	}
	if float64(c.Rows) > alpha*float64(c.RowTests) {
		out = append(out, fmt.Sprintf("%d of %d A/A row verdicts significant, above alpha %g", c.Rows, c.RowTests, alpha))
	}
	return out
}

func TestAAProblemsFire(t *testing.T) {
	ok := aaCounts{Reps: 20, Verdicts: 1, SecondaryFamilies: 1, Guards: 4, GuardTests: 40, Rows: 6, RawRows: 17, RowTests: 400}
	if p := aaProblems(ok, 0.05); len(p) != 0 {
		t.Errorf("calibrated counts flagged: %v", p)
	}
	bad := aaCounts{Reps: 20, Verdicts: 5, SecondaryFamilies: 5, Guards: 7, GuardTests: 40, Rows: 21, RowTests: 400}
	if p := aaProblems(bad, 0.05); len(p) != 4 {
		t.Errorf("counts above every level: %d problems %v, want 4", len(p), p)
	}
}

func TestAAOnCommittedRuns(t *testing.T) {
	d := loadAA(t)
	for _, fs := range []string{aaFSTmpfs, aaFSRoot} {
		c := countAA(t, d[fs])
		t.Logf("%s: %v", fs, c)
		for _, p := range aaProblems(c, stats.DefaultAlpha) {
			t.Errorf("%s: %s", fs, p)
		}
	}
}

// powerCount is how many repetitions find tmpfs better than the root
// filesystem on db-commit's primary metric with aaPowerRuns runs per side.
func powerCount(t testing.TB, d aaData) (better, reps int) {
	for rep := range d[aaFSRoot] {
		root, tmpfs := d[aaFSRoot][rep]["A"][:aaPowerRuns], d[aaFSTmpfs][rep]["A"][:aaPowerRuns]
		r := compareSides(t, [2]string{aaFSRoot, aaFSTmpfs}, [2][]*benchresult.Result{root, tmpfs})
		v := r.Verdicts[0]
		reps++
		if v.Outcome == comparison.OutcomeBetter && slices.Contains(v.Decided, r.Primary[0]) {
			better++
		} else {
			t.Logf("repetition %d: %s", rep, comparison.VerdictLine(v))
		}
	}
	return better, reps
}

// TestPowerOnCommittedRuns: a tmpfs answers fdatasync at once, a disk must
// make the commit durable, so tmpfs must come out better on db-commit's
// primary metric (commit p99) with 4 runs per side, in every repetition.
func TestPowerOnCommittedRuns(t *testing.T) {
	better, reps := powerCount(t, loadAA(t))
	t.Logf("power: tmpfs better than the root filesystem in %d of %d repetitions (%d runs per side)", better, reps, aaPowerRuns)
	if better != reps {
		t.Errorf("tmpfs better in %d of %d repetitions, want all", better, reps)
	}
}

// trim drops what the comparison does not use (latency summaries and
// histograms, timelines, job files, device samples, the host's CPU flags
// and crypto drivers, the storage model), so the committed runs stay small.
func trim(r *benchresult.Result) {
	for i := range r.Phases {
		p := &r.Phases[i]
		p.JobFile = ""
		for j := range p.Streams {
			s := &p.Streams[j]
			s.Timeline, s.Latency = nil, nil
		}
	}
	if w := r.WhereTime; w != nil {
		w.Devices = []benchresult.DeviceTime{}
		for i := range w.Threads {
			w.Threads[i].Timeline, w.Threads[i].Top = nil, nil
		}
	}
	e := &r.Environment
	if h := e.Host; h != nil {
		e.Host = &snapshot.Host{KernelRelease: h.KernelRelease, NumCPU: h.NumCPU, CPUModel: h.CPUModel, Arch: h.Arch}
	}
	if t := e.Target; t != nil {
		e.Target = &benchresult.TargetPath{Path: t.Path, MountPoint: t.MountPoint, FSType: t.FSType}
	}
	e.Cloud, e.GoVersion, e.Problems = nil, "", nil
}

// BenchmarkAAAndPower runs the A/A and power experiment with the real
// binary (about 40 minutes: 480 db-commit runs of 3 × 1 s) and reports the
// false-positive rates; SLOWPATH_UPDATE=1 also rewrites aaFile with its
// runs. SLOWPATH_AA_REPS lowers the repetitions for a quick look (the
// committed file needs aaReps).
func BenchmarkAAAndPower(b *testing.B) {
	testenv.RequireTool(b, "fio", "fio")
	reps := aaReps
	if s := os.Getenv("SLOWPATH_AA_REPS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("SLOWPATH_AA_REPS=%q: want a positive number", s)
		}
		reps = n
	}
	bin := testenv.BuildSlowpath(b)
	dirs := map[string]string{}
	for fs, parent := range map[string]string{aaFSTmpfs: "/dev/shm", aaFSRoot: os.TempDir()} {
		var st unix.Statfs_t
		if err := unix.Statfs(parent, &st); err != nil {
			testenv.Unavailable(b, fmt.Sprintf("%s: %v", parent, err))
		}
		if (st.Type == unix.TMPFS_MAGIC) != (fs == aaFSTmpfs) {
			testenv.Unavailable(b, fmt.Sprintf("%s is not the %s this experiment needs (set TMPDIR to a directory of the root filesystem)", parent, fs))
		}
		d, err := os.MkdirTemp(parent, "slowpath-aa-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(d) })
		dirs[fs] = d
	}
	out := b.TempDir()
	var lines []aaLine
	d := aaData{}
	run := func(fs, side string, rep, i int) {
		file := filepath.Join(out, fmt.Sprintf("%s-%d-%s%d.json", fs, rep, side, i))
		var last error
		// A run that fails (fio killed by something else on a shared
		// machine) is retried: the experiment needs complete runs.
		for try := 0; try < 3; try++ {
			cmd := exec.Command(bin, "bench", aaProfile, "--dir", dirs[fs], "--runtime", aaRuntime, "--scale", aaScale, "--cloud", "none", "-o", file)
			if outb, err := cmd.CombinedOutput(); err != nil {
				last = fmt.Errorf("%v: %s", err, outb)
				continue
			}
			r, err := benchresult.ReadFile(file)
			if err != nil {
				b.Fatal(err)
			}
			trim(r)
			l := aaLine{FS: fs, Rep: rep, Side: side, Run: i, Result: r}
			lines = append(lines, l)
			d.add(l)
			return
		}
		b.Fatalf("bench %s %s%d: %v", fs, side, i, last)
	}
	b.ResetTimer()
	for range b.N {
		for rep := 1; rep <= reps; rep++ {
			for i := 1; i <= aaRuns; i++ {
				first, second := "A", "B"
				if i%2 == 0 {
					first, second = "B", "A"
				}
				run(aaFSTmpfs, first, rep, i)
				run(aaFSRoot, first, rep, i)
				run(aaFSRoot, second, rep, i)
				run(aaFSTmpfs, second, rep, i)
			}
		}
	}
	b.StopTimer()
	for _, fs := range []string{aaFSTmpfs, aaFSRoot} {
		c := countAA(b, d[fs])
		b.Logf("A/A %s: %v", fs, c)
		b.ReportMetric(pct(c.Verdicts, c.Reps), fs+"-verdict-fp-%")
		b.ReportMetric(pct(c.Rows, c.RowTests), fs+"-row-fp-%")
	}
	better, n := powerCount(b, d)
	b.Logf("power: tmpfs better than the root filesystem on the primary metric in %d of %d repetitions (%d runs per side)", better, n, aaPowerRuns)
	b.ReportMetric(pct(better, n), "power-%")
	if golden.Update() && reps == aaReps {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		for _, l := range lines {
			j, err := json.Marshal(l)
			if err != nil {
				b.Fatal(err)
			}
			zw.Write(append(j, '\n'))
		}
		if err := zw.Close(); err != nil {
			b.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(aaFile), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(aaFile, buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
