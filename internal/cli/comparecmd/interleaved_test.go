package comparecmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// TestInterleavedInProcess: compare --profile runs the workload in process
// through the engine: stdout is the one JSON document, stderr the progress
// lines and nothing else (no bench summary), --save holds every run's
// result file, and the sides carry the runs in schedule order's labels.
func TestInterleavedInProcess(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	var sf syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &sf); err != nil || sf.Type != 0x01021994 { // TMPFS_MAGIC, include/uapi/linux/magic.h
		testenv.Unavailable(t, "/dev/shm is not a tmpfs")
	}
	var dirs []string
	for range 2 {
		d, err := os.MkdirTemp("/dev/shm", "slowpath-compare-test-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		dirs = append(dirs, d)
	}
	job := filepath.Join(t.TempDir(), "small.fio")
	if err := os.WriteFile(job, []byte("[small]\nrw=write\nbs=4k\nsize=2m\nfilename=data\nioengine=psync\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	save := filepath.Join(t.TempDir(), "saved")
	code, stdout, stderr := runCompare(t, "--format", "json", "--profile", "fio:"+job, "--runs", "2", "--cloud", "none", "--save", save,
		"--target", "a="+dirs[0], "--target", "b="+dirs[1])
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := []string{
		"compare: run 1/4: a (" + dirs[0] + ")", "compare: run 2/4: b (" + dirs[1] + ")",
		"compare: run 3/4: b (" + dirs[1] + ")", "compare: run 4/4: a (" + dirs[0] + ")",
	}
	if got := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n"); !slices.Equal(got, want) {
		t.Errorf("stderr\n%s\nwant the progress lines only:\n%s", stderr, strings.Join(want, "\n"))
	}
	var r comparison.Result
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("stdout is not the JSON document: %v\n%s", err, stdout)
	}
	if dec.More() {
		t.Errorf("stdout holds more than one document:\n%s", stdout)
	}
	if len(r.Sides) != 2 || r.Sides[0].Name != "a" || r.Sides[0].Runs != 2 || r.Sides[1].Runs != 2 || len(r.Rows) == 0 {
		t.Errorf("sides %+v, %d rows", r.Sides, len(r.Rows))
	}
	for _, n := range []string{"a-1.json", "a-2.json", "b-1.json", "b-2.json"} {
		res, err := benchresult.ReadFile(filepath.Join(save, n))
		if err != nil || res.Profile != "fio:small.fio" || res.Status != benchresult.StatusComplete {
			t.Errorf("--save %s: %v", n, err)
		}
	}
	for _, d := range dirs {
		if ents, _ := os.ReadDir(d); len(ents) != 0 {
			t.Errorf("%s left %v", d, ents)
		}
	}
	// The saved files compare as given: the same runs, nothing duplicated.
	code, _, stderr = runCompare(t, "a="+filepath.Join(save, "a-1.json")+","+filepath.Join(save, "a-2.json"),
		"b="+filepath.Join(save, "b-1.json")+","+filepath.Join(save, "b-2.json"))
	if code != 0 {
		t.Errorf("compare of the saved runs: exit %d: %s", code, stderr)
	}
}
