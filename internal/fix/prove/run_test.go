package prove

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/slowpath/slowpath/internal/experiment"
	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/fix/apply"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testing/testenv"
	"github.com/slowpath/slowpath/internal/workload/profile"
)

// untouched is a sysctl no disk workload reads: the ancillary socket
// buffer limit.
const untouched = "net.core.optmem_max"

func readSysctl(t *testing.T, key string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(key, ".", "/"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// liveSysctl saves key and restores it when the test ends, however it
// ends.
func liveSysctl(t *testing.T, key string) string {
	t.Helper()
	testenv.RequireRoot(t)
	orig := readSysctl(t, key)
	t.Cleanup(func() {
		p := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
		if err := os.WriteFile(p, []byte(orig+"\n"), 0); err != nil {
			t.Errorf("restore %s to %s: %v", key, orig, err)
		}
	})
	return orig
}

func tmpfsDir(t *testing.T) string {
	t.Helper()
	var sf syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &sf); err != nil || sf.Type != 0x01021994 { // TMPFS_MAGIC, include/uapi/linux/magic.h
		testenv.Unavailable(t, "/dev/shm is not a tmpfs")
	}
	d, err := os.MkdirTemp("/dev/shm", "slowpath-prove-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// smallJob is 2 MiB of 4 KiB writes: a real fio run of milliseconds.
func smallJob(t *testing.T) experiment.Workload {
	t.Helper()
	testenv.RequireTool(t, "fio", "fio")
	p := filepath.Join(t.TempDir(), "small.fio")
	if err := os.WriteFile(p, []byte("[small]\nrw=write\nbs=4k\nsize=2m\nfilename=data\nioengine=psync\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := experiment.ParseWorkload(profile.FioPrefix + p)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// observer records the sysctl as each run starts its workload (after
// the side's setup) and as the next run is announced (after the undo).
type observer struct {
	mu      sync.Mutex
	side    string
	during  map[string][]string // side -> values while its workload ran
	between []string            // values between runs
}

func (ob *observer) options(t *testing.T, key string, o Options) Options {
	ob.during = map[string][]string{}
	o.Progress = func(_ fix.Entry, ri experiment.RunInfo) {
		ob.mu.Lock()
		defer ob.mu.Unlock()
		ob.side = ri.Side
		ob.between = append(ob.between, readSysctl(t, key))
	}
	o.Env.Hooks.Planned = func(*profile.Plan) {
		ob.mu.Lock()
		defer ob.mu.Unlock()
		ob.during[ob.side] = append(ob.during[ob.side], readSysctl(t, key))
	}
	return o
}

// TestMeasureUntouchedSysctl: real fio runs on a tmpfs with a sysctl no
// workload reads switched off and on. The sysctl holds the planned value
// during every "on" run and its original value during every "off" run
// and between runs; afterwards it is back and nothing is recorded. The
// decision is the comparison's verdict. Which verdict is not asserted
// here: the sides are the same configuration, so at alpha 0.05 chance
// alone makes about 3 in 100 runs of this test "significant"; the
// deterministic VM lab (test/vm TestFixProve) asserts "no significant
// difference" for a change that does nothing.
func TestMeasureUntouchedSysctl(t *testing.T) {
	orig := liveSysctl(t, untouched)
	a, err := apply.Open(apply.Live(hostfs.Default()), filepath.Join(t.TempDir(), "state.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	e := sysctlEntry(untouched, 81920+1)
	if orig == "81921" {
		e = sysctlEntry(untouched, 81920+2)
	}
	want := strings.TrimPrefix(describeSteps(e, true), "sysctl:"+untouched+"=")
	ob := &observer{}
	o := ob.options(t, untouched, Options{Workload: smallJob(t), Dir: tmpfsDir(t), Runs: 4})
	p, err := Measure(context.Background(), a, e, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(ob.during[SideOn]) != 4 || len(ob.during[SideOff]) != 4 {
		t.Fatalf("runs seen: %v", ob.during)
	}
	for _, v := range ob.during[SideOn] {
		if v != want {
			t.Errorf("during an on run %s = %s, want %s", untouched, v, want)
		}
	}
	for _, v := range append(ob.during[SideOff], ob.between...) {
		if v != orig {
			t.Errorf("during an off run or between runs %s = %s, want the original %s", untouched, v, orig)
		}
	}
	if v := readSysctl(t, untouched); v != orig {
		t.Errorf("after Measure %s = %s, want %s", untouched, v, orig)
	}
	if st := a.State(); len(st.Changes) != 0 {
		t.Errorf("the state file still records %+v", st.Changes)
	}
	if len(p.Sides) != 2 || p.Sides[0].Name != SideOff || len(p.Sides[0].Runs) != 4 || len(p.Sides[1].Runs) != 4 {
		t.Fatalf("sides: %+v", p.Sides)
	}
	if got := p.Result.Primary; len(got) == 0 || got[0] != "total_iops" {
		t.Errorf("primary metrics %v, want fio's total_iops first", got)
	}
	if p.Decision.Keep != p.Result.Verdicts[0].Proven() || p.Decision.Outcome != p.Result.Verdicts[0].Outcome || p.Decision.Reason == "" {
		t.Errorf("decision %+v does not follow the verdict %+v", p.Decision, p.Result.Verdicts[0])
	}
	envKey := false
	for _, d := range p.Result.Environment {
		envKey = envKey || d.Key == e.ID
	}
	if !envKey {
		t.Errorf("the environment differences do not name the change: %+v", p.Result.Environment)
	}
	t.Logf("decision: %+v", p.Decision)
}

// TestMeasureInterrupted: cancelled while an "on" run's workload starts,
// Measure returns an interrupted error and the sysctl is back.
func TestMeasureInterrupted(t *testing.T) {
	orig := liveSysctl(t, untouched)
	a, err := apply.Open(apply.Live(hostfs.Default()), filepath.Join(t.TempDir(), "state.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	e := sysctlEntry(untouched, 81923)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var side string
	seen := ""
	o := Options{Workload: smallJob(t), Dir: tmpfsDir(t), Runs: 4}
	o.Progress = func(_ fix.Entry, ri experiment.RunInfo) { side = ri.Side }
	o.Env.Hooks.Planned = func(*profile.Plan) {
		if side == SideOn {
			seen = readSysctl(t, untouched)
			cancel()
		}
	}
	_, err = Measure(ctx, a, e, o)
	if !errors.Is(err, experiment.ErrInterrupted) {
		t.Fatalf("Measure after a cancel: %v, want an interrupted error", err)
	}
	if seen != "81923" {
		t.Errorf("the on run started with %s = %q", untouched, seen)
	}
	if v := readSysctl(t, untouched); v != orig {
		t.Errorf("after the interrupt %s = %s, want %s", untouched, v, orig)
	}
	if st := a.State(); len(st.Changes) != 0 {
		t.Errorf("the state file still records %+v", st.Changes)
	}
}
