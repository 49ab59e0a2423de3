package dropscmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// childEnv holds the arguments of `net drops` when this test binary runs
// as the command itself (TestSIGINTRightAfterReady's child).
const childEnv = "SLOWPATH_DROPSCMD_CHILD"

func TestMain(m *testing.M) {
	if args := os.Getenv(childEnv); args != "" {
		env := &clienv.Env{Stdout: os.Stdout, Stderr: os.Stderr, FS: hostfs.Default()}
		cmd := NewCmdDrops(env, nil)
		cmd.SetArgs(strings.Fields(args))
		cmd.SilenceUsage = true
		if err := cmd.ExecuteContext(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "drops:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSIGINTRightAfterReady runs `net drops --ready-file` as a real
// process and interrupts it the moment it signals readiness, as a script
// waiting on the file would: the run must end with a report, not die.
// The ready file is a FIFO, so the child blocks in opening it until the
// test reads it; SIGINT is sent while it is blocked there, which is as
// early as any reader of the file could act, then the test opens the FIFO
// and lets it go on.
func TestSIGINTRightAfterReady(t *testing.T) {
	testenv.RequireRoot(t)
	ready := filepath.Join(t.TempDir(), "ready")
	if err := unix.Mkfifo(ready, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=--duration 0 --format json --interface lo --ready-file "+ready)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	exited := false
	defer func() {
		if !exited {
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	pid := cmd.Process.Pid
	deadline := time.Now().Add(20 * time.Second)
	for !blockedOpeningFIFO(pid) {
		select {
		case err := <-done:
			exited = true
			t.Fatalf("drops ended before opening the ready file: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("drops never opened the ready file\n%s", stderr.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// Let the child's open complete (if it still lives) and see it close.
	f, err := os.OpenFile(ready, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, f)
	f.Close()
	var werr error
	select {
	case werr = <-done:
		exited = true
	case <-time.After(20 * time.Second):
		t.Fatal("drops did not end after SIGINT")
	}
	if werr != nil {
		t.Fatalf("drops interrupted right after --ready-file died without a report: %v\nstdout: %s\nstderr: %s", werr, stdout.String(), stderr.String())
	}
	rep := parseReport(t, stdout.String())
	if rep.DurationSeconds <= 0 || rep.Interface != "lo" {
		t.Errorf("report: %+v", rep)
	}
}

// blockedOpeningFIFO reports whether a thread of pid waits in the kernel
// for the other end of a FIFO (fs/pipe.c wait_for_partner).
func blockedOpeningFIFO(pid int) bool {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", pid))
	for _, p := range tasks {
		if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) == "wait_for_partner" {
			return true
		}
	}
	return false
}
