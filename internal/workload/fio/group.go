package fio

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// groupGrace is how long the processes of fio's group get to die after
// SIGKILL. A process only outlives that in uninterruptible sleep on a
// stuck device, which is worth an error of its own.
const groupGrace = 10 * time.Second

// becomeSubreaper makes this process the child subreaper (prctl(2)
// PR_SET_CHILD_SUBREAPER, Linux 3.4+): fio's job processes orphaned by
// fio's exit are re-parented here, not to init, so endGroup can wait for
// each of them, zombies included, instead of hoping init reaps them in
// time (or at all: in a container slowpath may be PID 1). It is a
// process-wide attribute, set once; other orphans re-parented here stay
// zombies until slowpath exits, which costs nothing but a pid each.
var becomeSubreaper = sync.OnceValue(func() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
})

// endGroup kills what is left of fio's run once its main process has been
// waited for: process group pgid, and fio's job processes, which left that
// group: each calls setsid() as it starts (fio's backend.c thread_main), so
// a signal to the group reaches them only before that. A job process
// orphaned by fio's exit waits on its startup semaphore for good, holding
// the job's files and device. They are found by what they keep from fio:
// its executable exe and its working directory dir (each run has its own).
// It returns when none of them exists any more, zombies included: each is
// this process's child (becomeSubreaper) and is reaped here. A process
// still there after grace is a named error with its pid and state.
func endGroup(pgid int, exe, dir string, grace time.Duration) error {
	deadline := time.Now().Add(grace)
	killed := map[int]bool{}
	for {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		jobs := jobProcesses(exe, dir)
		for _, pid := range jobs {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			killed[pid] = true
		}
		reapGroup(pgid)
		for pid := range killed {
			var ws syscall.WaitStatus
			if got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); got == pid || errors.Is(err, syscall.ECHILD) {
				delete(killed, pid)
			}
		}
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) && len(jobs) == 0 && len(killed) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("fio's process group %d still has %s %v after SIGKILL (a process in uninterruptible sleep, state D, is stuck in the kernel, usually on its device)", pgid, describeGroup(pgid, jobs), grace)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// jobProcesses are the live processes running exe in dir, this one aside.
func jobProcesses(exe, dir string) []int {
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil
	}
	var out []int
	for _, p := range procs {
		if p.PID == os.Getpid() {
			continue
		}
		if e, err := p.Executable(); err != nil || e != exe {
			continue
		}
		if cwd, err := p.Cwd(); err != nil || cwd != dir {
			continue
		}
		out = append(out, p.PID)
	}
	return out
}

// reapGroup waits for every exited child in group pgid without blocking.
func reapGroup(pgid int) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-pgid, &ws, syscall.WNOHANG, nil)
		if err != nil || pid <= 0 {
			return
		}
	}
}

// describeGroup names the processes of group pgid and the job processes
// jobs with their state, e.g. "pid 4711 (fio) state D".
func describeGroup(pgid int, jobs []int) string {
	procs, err := procfs.AllProcs()
	if err != nil {
		return "a process (the process list is unreadable: " + err.Error() + ")"
	}
	var out []string
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil || st.PGRP != pgid && !slices.Contains(jobs, st.PID) {
			continue
		}
		out = append(out, fmt.Sprintf("pid %d (%s) state %s", st.PID, st.Comm, st.State))
	}
	if len(out) == 0 {
		return "a process that left before it could be named"
	}
	return strings.Join(out, ", ")
}
