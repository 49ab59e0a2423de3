package sampler

import (
	"os/exec"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/hostfs"
)

func TestTreeTicks(t *testing.T) {
	tasks := []taskStat{
		{PID: 12, PPID: 11, Ticks: 5},                  // a backend, listed before its parent
		{PID: 11, PPID: 1, Ticks: 10, ChildTicks: 100}, // the server: 100 of reaped backends
		{PID: 13, PPID: 12, Ticks: 1},
		{PID: 20, PPID: 1, Ticks: 1000}, // not in the tree
	}
	got, err := treeTicks(tasks, 11)
	if err != nil {
		t.Fatal(err)
	}
	if want := 116 * time.Second / userHZ; got != want {
		t.Errorf("treeTicks = %v, want %v", got, want)
	}
	if _, err := treeTicks(tasks, 99); err == nil {
		t.Error("a gone root: no error")
	}
}

// TestTreeCPULive reads a real child's tree: a shell that burns CPU in a
// child it then reaps keeps that CPU in the sum.
func TestTreeCPULive(t *testing.T) {
	cmd := exec.Command("sh", "-c", `sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'; sleep 5`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	time.Sleep(100 * time.Millisecond)
	first, err := TreeCPU(hostfs.Default(), cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	var last time.Duration
	for deadline := time.Now().Add(4 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if last, err = TreeCPU(hostfs.Default(), cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		if last > first && last >= 50*time.Millisecond {
			break
		}
	}
	if last < 50*time.Millisecond {
		t.Errorf("tree CPU %v after the child's loop, want at least 50ms", last)
	}
}
