package fio

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// TestEndGroupReapsOrphans builds what fio leaves when a job process
// outlives its main process: a group whose leader has exited, with
// children re-parented away from it. Killing the group is not enough:
// right after SIGKILL a process may not have run to its exit yet (a
// saturated CPU), and an exited orphan stays a zombie in the group until
// whoever adopted it reaps it (this machine kind's PID 1 does so lazily;
// in a container where slowpath is PID 1, nobody would). endGroup must
// return only when the group is empty.
func TestEndGroupReapsOrphans(t *testing.T) {
	sh := testenv.RequireTool(t, "sh", "dash")
	if err := becomeSubreaper(); err != nil {
		t.Fatalf("PR_SET_CHILD_SUBREAPER: %v", err)
	}
	for i := 0; i < 20; i++ {
		cmd := exec.Command(sh, "-c", "sleep 60 & sleep 60 & (exit 0) & exit 0")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pgid := cmd.Process.Pid
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(-pgid, 0); err != nil {
			t.Fatalf("the leader's children are already gone (%v): the test builds nothing", err)
		}
		if i == 0 {
			// The shell's background children exec sleep after the fork:
			// on a busy CPU the leader can exit first, and for a moment
			// they are still named sh. Wait for the exec, not a while.
			d := describeGroup(pgid, nil)
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(d, "(sleep) state ") && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
				d = describeGroup(pgid, nil)
			}
			if !strings.Contains(d, "(sleep) state ") {
				t.Errorf("describeGroup = %q, want the sleeps named with their state", d)
			}
		}
		if err := endGroup(pgid, "", "", 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Fatalf("round %d: after endGroup the group still has a process (%v)", i, err)
		}
	}
}

// TestEndGroupKillsProcessesThatLeftTheGroup builds what fio leaves when
// its job processes, which call setsid() as they start, outlive fio: a
// group whose leader has exited and processes in sessions of their own,
// running the same executable in the run's directory. endGroup must find
// them by executable and directory and leave only after they are gone;
// the same executable in another directory (another run) is left alone.
func TestEndGroupKillsProcessesThatLeftTheGroup(t *testing.T) {
	sh := testenv.RequireTool(t, "sh", "dash")
	setsid := testenv.RequireTool(t, "setsid", "util-linux")
	sleep := testenv.RequireTool(t, "sleep", "coreutils")
	exe, err := filepath.EvalSymlinks(sleep)
	if err != nil {
		t.Fatal(err)
	}
	if err := becomeSubreaper(); err != nil {
		t.Fatalf("PR_SET_CHILD_SUBREAPER: %v", err)
	}
	dir, other := t.TempDir(), t.TempDir()
	bystander := exec.Command(sleep, "60")
	bystander.Dir = other
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bystander.Process.Kill(); bystander.Wait() })
	cmd := exec.Command(sh, "-c", setsid+" "+sleep+" 60 & "+setsid+" "+sleep+" 60 & sleep 0.2; exit 0")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := len(jobProcesses(exe, dir)); n != 2 {
		t.Fatalf("%d processes left the group, want 2: the test builds nothing", n)
	}
	if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the group itself still has a process (%v): the test builds the wrong thing", err)
	}
	if err := endGroup(pgid, exe, dir, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if left := jobProcesses(exe, dir); len(left) != 0 {
		t.Errorf("after endGroup %v still run in the job's directory", left)
	}
	if err := bystander.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("endGroup killed the same executable in another directory: %v", err)
	}
}
