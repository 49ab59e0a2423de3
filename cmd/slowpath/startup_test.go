package main_test

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// minimalBinary is the floor a Go command cannot go below: a static
// binary whose main prints one line, the Go runtime's own start-up, built
// as slowpath is.
func minimalBinary(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	for name, src := range map[string]string{
		"go.mod":  "module minimal\n\ngo 1.26\n",
		"main.go": "package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"minimal\\n\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	goTool := testenv.RequireTool(tb, "go", "golang-go")
	bin := filepath.Join(tb.TempDir(), "minimal")
	cmd := exec.Command(goTool, "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build the minimal binary: %v\n%s", err, out)
	}
	return bin
}

// initTrace is one line of GODEBUG=inittrace=1 (runtime/proc.go,
// doInit1): "init PKG @T ms, C ms clock, B bytes, A allocs".
type initTrace struct {
	pkg           string
	bytes, allocs int
}

func parseInitTrace(tb testing.TB, stderr []byte) []initTrace {
	tb.Helper()
	var out []initTrace
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[10] != "allocs" {
			continue
		}
		b, err1 := strconv.Atoi(f[7])
		a, err2 := strconv.Atoi(f[9])
		if err1 != nil || err2 != nil {
			tb.Fatalf("inittrace line %q", sc.Text())
		}
		out = append(out, initTrace{pkg: f[1], bytes: b, allocs: a})
	}
	if len(out) == 0 {
		tb.Fatalf("no inittrace lines in:\n%s", stderr)
	}
	return out
}

// initBound is the most allocations one of slowpath's own packages may
// make in package init: what runs before main runs for every command,
// used or not, so anything bigger is built on first use (sync.OnceValue).
// internal/agent's metric descriptors (105, their client_golang halves made
// on first use) are the largest today.
const initBound = 256

// initKnown are packages over the bound, each with its count today: the
// test fails if one grows, and says so when one is fixed.
// None today: internal/capture/capfile's regexps (1,225) became loops.
var initKnown = map[string]int{}

// TestInitAllocations holds slowpath's own packages to initBound
// allocations each in package init. Allocation counts, unlike times, are
// the same on every run of one binary, so this is an exact check (run
// with GODEBUG=inittrace=1, the runtime's own count).
func TestInitAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := testenv.BuildSlowpathStripped(t)
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s version: %v\n%s", bin, err, stderr.Bytes())
	}
	total := 0
	for _, it := range parseInitTrace(t, stderr.Bytes()) {
		total += it.allocs
		if !strings.HasPrefix(it.pkg, "github.com/slowpath/slowpath/") {
			continue
		}
		if known, ok := initKnown[it.pkg]; ok {
			if it.allocs > known {
				t.Errorf("init %s: %d allocations, more than the %d known", it.pkg, it.allocs, known)
			} else if it.allocs <= initBound {
				t.Errorf("init %s: %d allocations, within the bound now: remove it from initKnown", it.pkg, it.allocs)
			}
			continue
		}
		if it.allocs > initBound {
			t.Errorf("init %s: %d allocations before main, over %d: build what a command may not use on first use (sync.OnceValue)", it.pkg, it.allocs, initBound)
		}
	}
	t.Logf("slowpath version: %d allocations in package init, all packages", total)
}

// run is one whole process: wall time, CPU (user+system) and peak RSS.
type run struct {
	wall, cpu time.Duration
	maxRSS    float64 // bytes
}

// runOnce runs argv directly for its wall time and CPU, then again under
// GNU time for its peak RSS: a child of this process starts as a vfork of
// it (os/exec), and Linux carries the larger mm's high-water mark across
// exec into ru_maxrss (fs/exec.c, setmax_mm_hiwater_rss), so a 2 MB
// child would report the test binary's 20 MB; time(1) forks from a
// process of a few hundred KiB.
func runOnce(b *testing.B, timeTool string, argv ...string) run {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%v: %v", argv, err)
	}
	r := run{wall: time.Since(start), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	out := filepath.Join(b.TempDir(), "maxrss")
	tcmd := exec.Command(timeTool, append([]string{"-f", "%M", "-o", out}, argv...)...)
	tcmd.Stdout, tcmd.Stderr = io.Discard, io.Discard
	if err := tcmd.Run(); err != nil {
		b.Fatalf("time %v: %v", argv, err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	kb, err := strconv.ParseFloat(strings.TrimSpace(string(raw)), 64)
	if err != nil {
		b.Fatalf("time -f %%M: %q", raw)
	}
	r.maxRSS = kb * 1024 // KiB (time(1), %M)
	return r
}

func medianOf(rs []run, f func(run) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// BenchmarkStartup runs `slowpath version` (start-up alone: the command
// does nothing else), `slowpath doctor` (one counter sample, no instance
// metadata) and a minimal static Go binary as whole processes, rounds
// interleaved so all see the same load, all built stripped as make build
// builds. Reported: each one's median wall time, CPU and peak RSS, and
// the ratios to the minimal binary, the floor of any Go command.
func BenchmarkStartup(b *testing.B) {
	bin := testenv.BuildSlowpathStripped(b)
	minimal := minimalBinary(b)
	timeTool := testenv.RequireTool(b, "/usr/bin/time", "time")
	sides := []struct {
		name string
		argv []string
		runs []run
	}{
		{name: "minimal", argv: []string{minimal}},
		{name: "version", argv: []string{bin, "version"}},
		{name: "doctor", argv: []string{bin, "doctor", "--net-interval", "0", "--cloud", "none", "--fail-on", "none"}},
	}
	for i := range sides {
		runOnce(b, timeTool, sides[i].argv...) // page cache
	}
	const rounds = 60
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			for k := range sides {
				s := &sides[(r+k)%len(sides)]
				s.runs = append(s.runs, runOnce(b, timeTool, s.argv...))
			}
		}
	}
	b.StopTimer()
	wall := func(r run) float64 { return float64(r.wall.Microseconds()) / 1000 }
	cpu := func(r run) float64 { return float64(r.cpu.Microseconds()) / 1000 }
	rss := func(r run) float64 { return r.maxRSS / (1 << 20) }
	ref := sides[0].runs
	for _, s := range sides {
		b.ReportMetric(medianOf(s.runs, wall), s.name+"-ms")
		b.ReportMetric(medianOf(s.runs, cpu), s.name+"-cpu-ms")
		b.ReportMetric(medianOf(s.runs, rss), s.name+"-peak-rss-MiB")
		if s.name == "minimal" {
			continue
		}
		b.ReportMetric(medianOf(s.runs, wall)/medianOf(ref, wall), s.name+"/minimal-wall")
		b.ReportMetric(medianOf(s.runs, rss)/medianOf(ref, rss), s.name+"/minimal-rss")
	}
	for _, p := range []string{bin, minimal} {
		if st, err := os.Stat(p); err == nil {
			b.ReportMetric(float64(st.Size())/(1<<20), filepath.Base(p)+"-size-MiB")
		}
	}
}
