package fixcmd_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/lab/hostlock"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// TestProveOnThisHost runs `fix --apply --prove` end to end on this host
// with real fio: the plan comes from a snapshot of this boot whose last
// softnet sample was given 5000 more drops, so net.backlog-drops fires;
// named with --only, its sysctl (which no disk workload reads) is measured
// off and on with a small fio job on a tmpfs. The outcome must agree with
// itself: the comparison table printed, the HTML written, and either
// "kept" with exit 0 and the planned value in place and recorded, or
// "rolled back" with exit 1 and the original value back and nothing
// recorded. Which of the two is not asserted: both sides are one
// configuration, so chance alone makes about 3 in 100 runs "significant"
// at alpha 0.05 (test/vm TestFixProve asserts the verdicts, in the
// deterministic model).
func TestProveOnThisHost(t *testing.T) {
	if testing.Short() {
		t.Skip("real fio runs")
	}
	bin := testenv.BuildSlowpath(t)
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "fio", "fio")
	var sf syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &sf); err != nil || sf.Type != 0x01021994 { // TMPFS_MAGIC, include/uapi/linux/magic.h
		testenv.Unavailable(t, "/dev/shm is not a tmpfs")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// netdev_max_backlog is global: the netlab labs of other packages
	// hold this lock while they set it.
	lock, err := hostlock.Acquire(ctx, "/run/slowpath/netlab", "wait for another netlab to finish")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Release() })
	orig := readBacklog(t)
	t.Cleanup(func() {
		if err := os.WriteFile(backlogPath, []byte(strconv.Itoa(orig)+"\n"), 0); err != nil {
			t.Errorf("restore %s to %d: %v", backlogPath, orig, err)
		}
	})

	dir := t.TempDir()
	live := filepath.Join(dir, "live.json")
	if code, _, stderr := run(t, ctx, bin, "collect", "--cloud", "none", "--net-interval", "1s", "-o", live); code != 0 {
		t.Fatalf("collect exited %d: %s", code, stderr)
	}
	s, err := snapshot.Load(live)
	if err != nil {
		t.Fatal(err)
	}
	if s.Net == nil || len(s.Net.Samples) < 2 || len(s.Net.Samples[len(s.Net.Samples)-1].Softnet) == 0 {
		t.Fatalf("the snapshot has no two softnet samples")
	}
	last := &s.Net.Samples[len(s.Net.Samples)-1]
	last.Softnet[0].Dropped += 5000
	drops := filepath.Join(dir, "drops.json")
	if err := snapshot.Save(drops, s); err != nil {
		t.Fatal(err)
	}
	job := filepath.Join(dir, "small.fio")
	if err := os.WriteFile(job, []byte("[small]\nrw=write\nbs=4k\nsize=2m\nfilename=data\nioengine=psync\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	work, err := os.MkdirTemp("/dev/shm", "slowpath-fixprove-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	state, html := filepath.Join(dir, "state.json"), filepath.Join(dir, "prove.html")

	code, out, stderr := run(t, ctx, bin, "fix", "--apply", "--from", drops, "--only", "net.backlog-drops", "--cloud", "none",
		"--state", state, "--prove", "fio:"+job, "--dir", work, "--runs", "4", "--html", html)
	t.Logf("exit %d\n%s\n%s", code, out, stderr)
	for _, want := range []string{"== net.backlog-drops on softnet: off vs on, fio:small.fio", "total_iops (primary)", "net.backlog-drops  off: sysctl:net.core.netdev_max_backlog as found"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if !strings.Contains(stderr, "run 8/8: off ("+work+")") {
		t.Errorf("stderr does not show 8 interleaved runs")
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "<html") {
		t.Errorf("--html: %v", err)
	}
	kept := strings.Contains(stderr, "net.backlog-drops on softnet: kept, proven by measurement: significantly better: ")
	rolled := strings.Contains(stderr, "net.backlog-drops on softnet: rolled back: ")
	switch {
	case kept == rolled:
		t.Fatalf("kept %v, rolled back %v: want exactly one", kept, rolled)
	case kept:
		if code != 0 || readBacklog(t) == orig || len(readState(t, state).Changes) != 1 {
			t.Errorf("kept: exit %d, netdev_max_backlog %d (was %d), state %+v", code, readBacklog(t), orig, readState(t, state))
		}
	default:
		if code != 1 || readBacklog(t) != orig {
			t.Errorf("rolled back: exit %d, netdev_max_backlog %d, want 1 and %d", code, readBacklog(t), orig)
		}
		if _, err := os.Stat(state); !os.IsNotExist(err) {
			t.Errorf("state file left after a rollback: %v", err)
		}
	}
	if left, _ := os.ReadDir(work); len(left) != 0 {
		t.Errorf("the runs left %d entries in %s", len(left), work)
	}
}
