package comparecmd

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/stats"
	"github.com/slowpath/slowpath/internal/testing/loopfs"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// e2eProfile is the bench profile of the end-to-end test: commits with
// fdatasync, which a disk must make durable and a tmpfs answers at once.
const e2eProfile = "db-commit"

// TestEndToEndRootVersusTmpfs runs the real bench twice on a directory of the
// root filesystem and once on a tmpfs, compares the results with the real
// binary, and checks that 2+1 runs claim nothing (no verdict, no evidence
// from inside runs standing in for runs) while the table and the verdict
// name db-commit's declared primary metrics. That tmpfs is faster with 4
// runs per side is checked on committed real runs (internal/comparison
// TestPowerOnCommittedRuns), not on fresh ones.
func TestEndToEndRootVersusTmpfs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the bench three times")
	}
	testenv.RequireRoot(t) // mounting the tmpfs
	testenv.RequireTool(t, "fio", "fio")
	dir := t.TempDir()
	bin := testenv.BuildSlowpath(t)
	// t.TempDir is on the root filesystem here (/tmp is not a tmpfs on
	// this image); the test checks rather than assumes it.
	rootDir := filepath.Join(dir, "root")
	tmpfsDir := filepath.Join(dir, "tmpfs")
	for _, d := range []string{rootDir, tmpfsDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(rootDir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type == unix.TMPFS_MAGIC {
		testenv.Unavailable(t, "the test directory is on a tmpfs: set TMPDIR to a directory of the root filesystem")
	}
	loopfs.Mount(t, "-t", "tmpfs", "-o", "size=512m", "slowpath-compare-e2e", tmpfsDir)
	// Shared, so copies made by concurrent `ip netns exec` in other test
	// packages go away with our unmount (see loopfs.SharedArena).
	_ = exec.Command("mount", "--make-shared", tmpfsDir).Run()

	bench := func(target, out string) {
		t.Helper()
		cmd := exec.Command(bin, "bench", e2eProfile, "--dir", target, "--runtime", "1s", "--cloud", "none", "-o", out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("slowpath bench on %s: %v\n%s", target, err, b)
		}
	}
	a1, a2, b1 := filepath.Join(dir, "root-1.json"), filepath.Join(dir, "root-2.json"), filepath.Join(dir, "tmpfs-1.json")
	bench(rootDir, a1)
	bench(tmpfsDir, b1)
	bench(rootDir, a2)

	compare := func(args ...string) *comparison.Result {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"compare", "--format", "json"}, args...)...).Output()
		if err != nil {
			t.Fatalf("slowpath compare %v: %v", args, err)
		}
		var r comparison.Result
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("decode compare output: %v\n%s", err, out)
		}
		return &r
	}
	html := filepath.Join(dir, "report.html")
	r := compare("--html", html, "root="+a1+","+a2, "tmpfs="+b1)
	for _, row := range r.Rows {
		c := row.Cells[1]
		if c.Comparison == nil {
			continue
		}
		// The JSON's one verdict is the cell's.
		if c.Verdict == nil || *c.Verdict != stats.TooFewRuns {
			t.Errorf("%s: verdict %v with 2+1 runs, want too few runs", row.Metric, c.Verdict)
		}
		if c.Change != "" {
			t.Errorf("%s: marked %q with 2+1 runs", row.Metric, c.Change)
		}
	}
	if len(r.Primary) == 0 || r.Primary[0] != "commit-1 commit_p99" || len(r.Verdicts) != 1 || r.Verdicts[0].Outcome != comparison.OutcomeTooFewRuns {
		t.Errorf("primary %v verdicts %+v, want db-commit's primary metrics and too few runs", r.Primary, r.Verdicts)
	}
	found := false
	for _, d := range r.Environment {
		if d.Key == "filesystem" && strings.Contains(strings.Join(d.Values, " "), "tmpfs") {
			found = true
		}
	}
	if !found {
		t.Errorf("environment differences do not name the filesystems: %+v", r.Environment)
	}
	if st, err := os.Stat(html); err != nil || st.Size() == 0 {
		t.Errorf("no HTML report: %v", err)
	}

	// The interleaved form runs the same bench itself: one short run per
	// target, results kept with --save.
	saved := filepath.Join(dir, "saved")
	out, err := exec.Command(bin, "compare", "--format", "json", "--profile", e2eProfile, "--runs", "1", "--runtime", "1s", "--cloud", "none",
		"--save", saved, "--target", "root="+rootDir, "--target", "tmpfs="+tmpfsDir).CombinedOutput()
	if err != nil {
		t.Fatalf("compare --target: %v\n%s", err, out)
	}
	for _, f := range []string{"root-1.json", "tmpfs-1.json"} {
		if _, err := os.Stat(filepath.Join(saved, f)); err != nil {
			t.Errorf("interleaved run did not keep %s: %v", f, err)
		}
	}
	if !strings.Contains(string(out), "compare: run 2/2: tmpfs") {
		t.Errorf("no progress for the second run in:\n%s", out)
	}
}
