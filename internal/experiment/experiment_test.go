package experiment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testing/capfiletest"
	"github.com/slowpath/slowpath/internal/testing/testenv"
	"github.com/slowpath/slowpath/internal/workload/profile"
)

func TestSchedule(t *testing.T) {
	for _, tc := range []struct {
		sides, runs int
		want        []int
	}{
		{2, 3, []int{0, 1, 1, 0, 0, 1}},
		{2, 4, []int{0, 1, 1, 0, 0, 1, 1, 0}},
		{3, 2, []int{0, 1, 2, 2, 1, 0}},
		{1, 3, []int{0, 0, 0}},
		{2, 0, nil},
		{0, 3, nil},
	} {
		if got := Schedule(tc.sides, tc.runs); !slices.Equal(got, tc.want) {
			t.Errorf("Schedule(%d, %d) = %v, want %v", tc.sides, tc.runs, got, tc.want)
		}
	}
	// Over an even number of rounds every side has the same mean position,
	// and each side runs exactly runs times.
	for sides := 1; sides <= 4; sides++ {
		pos, count := map[int]int{}, map[int]int{}
		for i, s := range Schedule(sides, 10) {
			pos[s] += i
			count[s]++
		}
		for s := range sides {
			if pos[s] != pos[0] || count[s] != 10 {
				t.Errorf("%d sides: positions %v, counts %v", sides, pos, count)
			}
		}
	}
}

// tmpfsDir is a new directory on a tmpfs (/dev/shm), removed after the
// test: short runs there do not wait on a shared disk.
func tmpfsDir(t *testing.T) string {
	t.Helper()
	var sf syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &sf); err != nil || sf.Type != 0x01021994 { // TMPFS_MAGIC, include/uapi/linux/magic.h
		testenv.Unavailable(t, "/dev/shm is not a tmpfs")
	}
	d, err := os.MkdirTemp("/dev/shm", "slowpath-experiment-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// smallJob is a fio:FILE workload of 2 MiB of 4 KiB writes: a real fio
// run that takes milliseconds.
func smallJob(t *testing.T) Workload {
	t.Helper()
	p := filepath.Join(t.TempDir(), "small.fio")
	if err := os.WriteFile(p, []byte("[small]\nrw=write\nbs=4k\nsize=2m\nfilename=data\nioengine=psync\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := ParseWorkload(profile.FioPrefix + p)
	if err != nil {
		t.Fatal(err)
	}
	w.Runtime, w.Interval = time.Second, 100*time.Millisecond
	return w
}

func testEnv() Env {
	e := Env{FS: hostfs.Default(), Version: "test"}
	e.Cloud.Cloud = "none"
	return e
}

// empty fails the test when dir holds anything: every run removes its
// own directory.
func empty(t *testing.T, dir string) {
	t.Helper()
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("%s after the runs: %v, %v", dir, ents, err)
	}
}

func TestParseWorkload(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.fio")
	escape := filepath.Join(dir, "escape.fio")
	os.WriteFile(good, []byte("[j]\nrw=read\nsize=1m\nfilename=data\n"), 0o644)
	os.WriteFile(escape, []byte("[j]\nrw=write\nsize=1m\nfilename=/etc/passwd\n"), 0o644)
	for _, tc := range []struct {
		arg, profile, err string
	}{
		{"db-commit", "db-commit", ""},
		{"search-index", "search-index", ""},
		{"fio:" + good, "fio:good.fio", ""},
		{"search", "", `unknown profile "search": use one of`},
		{"fio:", "", "unknown profile"},
		{"fio:" + filepath.Join(dir, "missing.fio"), "", "missing.fio: no such file"},
		{"fio:" + escape, "", "profile fio:" + escape},
	} {
		w, err := ParseWorkload(tc.arg)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.arg, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.arg, err, tc.err)
		case tc.err == "" && w.Profile != tc.profile:
			t.Errorf("%s: profile %q, want %q", tc.arg, w.Profile, tc.profile)
		}
	}
	if _, err := ParseWorkload("nope"); !errors.Is(err, profile.ErrUnknown) {
		t.Errorf("unknown profile: %v does not wrap profile.ErrUnknown", err)
	}
}

// TestRunWorkload: a real fio run on a tmpfs directory gives a complete
// result with the figures, the target and the hooks called in order, and
// removes its directory.
func TestRunWorkload(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	dir := tmpfsDir(t)
	w := smallJob(t)
	var events []string
	env := testEnv()
	env.Hooks = Hooks{
		Planned: func(p *profile.Plan) { events = append(events, "planned "+p.Profile) },
		Phase:   func(i int, name string) { events = append(events, fmt.Sprintf("phase %d %s", i, name)) },
		Done:    func(ok bool) { events = append(events, fmt.Sprintf("done %v", ok)) },
	}
	r, err := RunWorkload(t.Context(), env, w, Target{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != benchresult.StatusComplete || r.Profile != "fio:small.fio" || r.SlowpathVersion != "test" || r.Parameters.TargetKind != "dir" || r.Parameters.Target != dir {
		t.Errorf("result %s %s %s %s %s", r.Status, r.Profile, r.SlowpathVersion, r.Parameters.TargetKind, r.Parameters.Target)
	}
	if f, ok := r.Figure("small", "write_iops"); !ok || !(f.Value > 0) {
		t.Errorf("write_iops %+v %v; figures %+v", f, ok, r.Figures)
	}
	if tp := r.Environment.Target; tp == nil || tp.FSType != "tmpfs" {
		t.Errorf("target %+v", tp)
	}
	if want := []string{"planned fio:small.fio", "phase 0 fio", "done true"}; !slices.Equal(events, want) {
		t.Errorf("hooks %q, want %q", events, want)
	}
	// What bench -o writes reads back.
	var buf bytes.Buffer
	if err := benchresult.Write(&buf, r); err != nil {
		t.Fatal(err)
	}
	if _, err := benchresult.Read(&buf); err != nil {
		t.Errorf("the result does not read back: %v", err)
	}
	empty(t, dir)
}

// TestRunWorkloadRefused: what fails before a run starts comes with no
// result and leaves nothing behind.
func TestRunWorkloadRefused(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio") // checked before the target
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	for _, tc := range []struct {
		w    Workload
		t    Target
		want string
	}{
		{Workload{}, Target{Dir: dir}, "no profile"},
		{Workload{Profile: "db-commit", Scale: 1000}, Target{Dir: dir}, "--scale 1000"},
		{Workload{Profile: "db-commit", Interval: time.Millisecond}, Target{Dir: dir}, "sampling interval 1ms"},
		{Workload{Profile: "db-commit"}, Target{}, "no target"},
		{Workload{Profile: "db-commit"}, Target{Dir: dir, Device: "/dev/null"}, "give one"},
		{Workload{Profile: "db-commit"}, Target{Dir: file}, "is not a directory"},
		{Workload{Profile: "db-commit"}, Target{Device: "/dev/null"}, "/dev/null is not a block device"},
		{Workload{Profile: "search-index", Scale: 64}, Target{Dir: dir}, "not enough free space in " + dir},
	} {
		r, err := RunWorkload(t.Context(), testEnv(), tc.w, tc.t)
		if r != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v on %+v: %v, %v; want %q", tc.w, tc.t, r, err, tc.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("refused runs left %v", ents)
	}
}

// state is a real file a side's Setup writes and its undo removes: the
// test checks every run saw its own side's state and no other.
type state struct {
	t      *testing.T
	path   string
	events []string
}

func (s *state) setup(name string, fail error, undoErr error) func(context.Context) (func() error, error) {
	return func(context.Context) (func() error, error) {
		if b, err := os.ReadFile(s.path); err == nil {
			s.t.Errorf("setup %s: state %q still in place", name, b)
		}
		if fail != nil {
			s.events = append(s.events, "setup-failed "+name)
			return nil, fail
		}
		if err := os.WriteFile(s.path, []byte(name), 0o644); err != nil {
			return nil, err
		}
		s.events = append(s.events, "setup "+name)
		return func() error {
			s.events = append(s.events, "undo "+name)
			if err := os.Remove(s.path); err != nil {
				return err
			}
			return undoErr
		}, nil
	}
}

// run records the state in place when a run starts.
func (s *state) run(*profile.Plan) {
	b, _ := os.ReadFile(s.path)
	s.events = append(s.events, "run "+string(b))
}

// TestRun: two sides × two runs of a real fio workload, interleaved
// A B B A, each run inside its side's setup and undo; per-run progress and
// result callbacks; the outcome's comparison sides with their labels and
// facts.
func TestRun(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	a, b := tmpfsDir(t), tmpfsDir(t)
	st := &state{t: t, path: filepath.Join(t.TempDir(), "state")}
	x := Experiment{Workload: smallJob(t), Runs: 2, Env: testEnv(),
		Sides: []Side{
			{Name: "a", Target: Target{Dir: a}, Setup: st.setup("a", nil, nil), Facts: []comparison.Fact{{Key: "variant", Value: "plain"}}},
			{Name: "b", Target: Target{Dir: b}, Setup: st.setup("b", nil, nil)},
		}}
	x.Env.Hooks.Planned = st.run
	var progress, saved []string
	x.Progress = func(r RunInfo) { progress = append(progress, r.String()) }
	x.Result = func(r RunInfo, res *benchresult.Result) error {
		if res.Status != benchresult.StatusComplete {
			t.Errorf("%s: result callback with status %s", r.Name(), res.Status)
		}
		saved = append(saved, r.Name())
		return nil
	}
	out, err := Run(t.Context(), x)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"setup a", "run a", "undo a", "setup b", "run b", "undo b", "setup b", "run b", "undo b", "setup a", "run a", "undo a"}
	if !slices.Equal(st.events, want) {
		t.Errorf("events\n%q\nwant\n%q", st.events, want)
	}
	wantProgress := []string{"run 1/4: a (" + a + ")", "run 2/4: b (" + b + ")", "run 3/4: b (" + b + ")", "run 4/4: a (" + a + ")"}
	if !slices.Equal(progress, wantProgress) {
		t.Errorf("progress %q, want %q", progress, wantProgress)
	}
	if want := []string{"a-1", "b-1", "b-2", "a-2"}; !slices.Equal(saved, want) {
		t.Errorf("result callbacks %q, want %q", saved, want)
	}
	if !out.Complete || out.Interrupted || len(out.Sides) != 2 {
		t.Fatalf("outcome %+v", out)
	}
	for i, so := range out.Sides {
		name := []string{"a", "b"}[i]
		c := so.Comparison
		if so.Name != name || len(so.Results) != 2 || so.Partial != nil || c.Name != name || len(c.Runs) != 2 || c.Runs[1].Label != name+"-2" {
			t.Errorf("side %d: %s, %d results, partial %v, comparison %s with %d runs", i, so.Name, len(so.Results), so.Partial, c.Name, len(c.Runs))
		}
		if so.Results[0].Started.After(so.Results[1].Started) {
			t.Errorf("side %s: results not in the order they ran", name)
		}
	}
	if !slices.Contains(out.Sides[0].Comparison.Facts, comparison.Fact{Key: "variant", Value: "plain"}) {
		t.Errorf("side a facts %+v lack the side's own", out.Sides[0].Comparison.Facts)
	}
	// The sides compare: the comparison package takes them as they are.
	if _, err := comparison.Compare([]comparison.Side{out.Sides[0].Comparison, out.Sides[1].Comparison}, comparison.Options{}); err != nil {
		t.Errorf("compare the outcome: %v", err)
	}
	empty(t, a)
	empty(t, b)
}

// TestRunUndoOnFailure: a run that fails (its target is not a directory)
// is still undone; the undo's own error is joined to the run's; nothing
// runs after it; the runs before are in the outcome.
func TestRunUndoOnFailure(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	a := tmpfsDir(t)
	notDir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notDir, nil, 0o644)
	st := &state{t: t, path: filepath.Join(t.TempDir(), "state")}
	undoErr := errors.New("the undo failed too")
	x := Experiment{Workload: smallJob(t), Runs: 2, Env: testEnv(), Sides: []Side{
		{Name: "a", Target: Target{Dir: a}, Setup: st.setup("a", nil, nil)},
		{Name: "b", Target: Target{Dir: notDir}, Setup: st.setup("b", nil, undoErr)},
	}}
	x.Env.Hooks.Planned = st.run
	out, err := Run(t.Context(), x)
	if err == nil || !strings.Contains(err.Error(), "run 2/4: b") || !strings.Contains(err.Error(), "is not a directory") || !errors.Is(err, undoErr) {
		t.Errorf("error %v", err)
	}
	if want := []string{"setup a", "run a", "undo a", "setup b", "undo b"}; !slices.Equal(st.events, want) {
		t.Errorf("events %q, want %q", st.events, want)
	}
	if _, err := os.Stat(st.path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state left in place: %v", err)
	}
	if out == nil || out.Complete || out.Interrupted || len(out.Sides[0].Results) != 1 || len(out.Sides[1].Results) != 0 || out.Sides[0].Comparison.Name != "a" {
		t.Errorf("outcome %+v", out)
	}
}

// TestRunSetupFails: a Setup that fails ends the experiment before the
// side's run, with no undo to call.
func TestRunSetupFails(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	st := &state{t: t, path: filepath.Join(t.TempDir(), "state")}
	boom := errors.New("no such sysctl")
	x := Experiment{Workload: smallJob(t), Runs: 1, Env: testEnv(), Sides: []Side{
		{Name: "a", Target: Target{Dir: tmpfsDir(t)}, Setup: st.setup("a", boom, nil)},
		{Name: "b", Target: Target{Dir: tmpfsDir(t)}, Setup: st.setup("b", nil, nil)},
	}}
	x.Env.Hooks.Planned = st.run
	out, err := Run(t.Context(), x)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "set up a") {
		t.Errorf("error %v", err)
	}
	if want := []string{"setup-failed a"}; !slices.Equal(st.events, want) {
		t.Errorf("events %q, want %q", st.events, want)
	}
	if out == nil || out.Complete || out.Sides[0].Partial != nil {
		t.Errorf("outcome %+v", out)
	}
}

// TestRunInterrupted: ctx cancelled as the second run starts its workload
// (the hook runs between the side's setup and the first phase): that run
// comes back interrupted and partial, its setup is undone, nothing runs
// after it, and the first run is kept.
func TestRunInterrupted(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	a, b := tmpfsDir(t), tmpfsDir(t)
	st := &state{t: t, path: filepath.Join(t.TempDir(), "state")}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	x := Experiment{Workload: smallJob(t), Runs: 2, Env: testEnv(), Sides: []Side{
		{Name: "a", Target: Target{Dir: a}, Setup: st.setup("a", nil, nil)},
		{Name: "b", Target: Target{Dir: b}, Setup: st.setup("b", nil, nil)},
	}}
	x.Env.Hooks.Planned = func(p *profile.Plan) {
		st.run(p)
		if len(st.events) > 3 {
			cancel()
		}
	}
	out, err := Run(ctx, x)
	if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "run 2/4: b") {
		t.Errorf("error %v", err)
	}
	if want := []string{"setup a", "run a", "undo a", "setup b", "run b", "undo b"}; !slices.Equal(st.events, want) {
		t.Errorf("events %q, want %q", st.events, want)
	}
	if out == nil || !out.Interrupted || out.Complete || len(out.Sides[0].Results) != 1 || len(out.Sides[1].Results) != 0 {
		t.Fatalf("outcome %+v", out)
	}
	if p := out.Sides[1].Partial; p == nil || p.Status != benchresult.StatusInterrupted {
		t.Errorf("partial %+v", p)
	}
	empty(t, a)
	empty(t, b)
	// Cancelled before it starts, an experiment runs nothing.
	st.events = nil
	out, err = Run(ctx, x)
	if !errors.Is(err, ErrInterrupted) || len(st.events) != 0 || !out.Interrupted {
		t.Errorf("cancelled experiment: %v, events %q", err, st.events)
	}
}

func TestRunRefused(t *testing.T) {
	dir := t.TempDir()
	w := Workload{Profile: "db-commit"}
	for _, tc := range []struct {
		x    Experiment
		want string
	}{
		{Experiment{Workload: w, Runs: 1}, "no sides"},
		{Experiment{Workload: w, Runs: 0, Sides: []Side{{Name: "a", Target: Target{Dir: dir}}}}, "0 runs per side"},
		{Experiment{Workload: w, Runs: 1, Sides: []Side{{Name: "../a", Target: Target{Dir: dir}}}}, `side name "../a"`},
		{Experiment{Workload: w, Runs: 1, Sides: []Side{{Name: "a", Target: Target{Dir: dir}}, {Name: "a", Target: Target{Dir: dir}}}}, "given twice"},
		{Experiment{Workload: w, Runs: 1, Sides: []Side{{Name: "a"}}}, "side a: give a directory"},
		{Experiment{Workload: Workload{Profile: "db-commit", Scale: -1}, Runs: 1, Sides: []Side{{Name: "a", Target: Target{Dir: dir}}}}, "--scale -1"},
	} {
		if out, err := Run(t.Context(), tc.x); out != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, %v; want %q", tc.x, out, err, tc.want)
		}
	}
}

func TestDistinct(t *testing.T) {
	r1 := &benchresult.Result{Profile: "db-commit", Started: time.Unix(1, 0), DurationNS: 1}
	r2 := &benchresult.Result{Profile: "db-commit", Started: time.Unix(2, 0), DurationNS: 1}
	same := *r1
	if err := Distinct([]string{"a-1", "a-2"}, []*benchresult.Result{r1, r2}); err != nil {
		t.Errorf("two runs: %v", err)
	}
	err := Distinct([]string{"a-1", "b-1", "b-2"}, []*benchresult.Result{r1, r2, &same})
	if !errors.Is(err, ErrDuplicate) || !strings.Contains(err.Error(), "a-1 and b-2 are the same run") {
		t.Errorf("a copy: %v", err)
	}
}

// TestRunWorkloadFidelity: a replay records its own block requests only
// when the workload asks for its fidelity (bench does; a comparison only
// with --fidelity), since the recorder's CPU lands in the figures.
func TestRunWorkloadFidelity(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	capture := capfiletest.Service(t)
	for _, asked := range []bool{false, true} {
		t.Run(fmt.Sprint(asked), func(t *testing.T) {
			w, err := ParseWorkload("replay-afap:" + capture)
			if err != nil {
				t.Fatal(err)
			}
			w.Fidelity = asked
			recorded := false
			env := testEnv()
			env.Hooks.Planned = func(p *profile.Plan) {
				if (p.Recorder != nil) != asked {
					t.Errorf("fidelity %v: recorder set %v", asked, p.Recorder != nil)
				}
				if p.Recorder != nil {
					// The real recorder needs eBPF; this one only runs.
					p.Recorder = func(ctx context.Context, _ string, run func(context.Context) error) (*benchresult.BlockTrace, error, error) {
						recorded = true
						return &benchresult.BlockTrace{}, nil, run(ctx)
					}
				}
			}
			r, err := RunWorkload(t.Context(), env, w, Target{Dir: tmpfsDir(t)})
			if err != nil {
				t.Fatal(err)
			}
			if r.Fidelity == nil || r.Status != benchresult.StatusComplete {
				t.Fatalf("status %s, fidelity %+v", r.Status, r.Fidelity)
			}
			notAsked := slices.ContainsFunc(r.Fidelity.Problems, func(p string) bool { return strings.Contains(p, "not asked for") })
			if recorded != asked || notAsked == asked || (r.Fidelity.Replay != nil) != asked {
				t.Errorf("fidelity %v: recorded %v, replay trace %v, problems %q", asked, recorded, r.Fidelity.Replay != nil, r.Fidelity.Problems)
			}
		})
	}
}
