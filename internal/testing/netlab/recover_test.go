package netlab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

const helperEnv = "SLOWPATH_NETLAB_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(killedLabHelper(os.Getenv(helperEnv)))
	}
	os.Exit(m.Run())
}

// killedLabHelper runs in a child process: it sets up a lab, changes the
// backlog, says so, and waits to be killed without closing anything.
func killedLabHelper(backlog string) int {
	var n int
	if _, err := fmt.Sscan(backlog, &n); err != nil {
		fmt.Println("error:", err)
		return 2
	}
	l, err := Setup(context.Background(), Options{})
	if err == nil {
		err = l.SetBacklog(n)
	}
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	fmt.Println("ready", l.ID)
	time.Sleep(time.Minute)
	return 1
}

// startHelper starts killedLabHelper in a child process with the given
// backlog and waits until it holds its lab; the child is killed at cleanup.
func startHelper(t *testing.T, backlog int, stderr io.Writer) (child *exec.Cmd, labID string) {
	t.Helper()
	child = exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), fmt.Sprintf("%s=%d", helperEnv, backlog))
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	id, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if !ok {
		t.Fatalf("helper: %q", line)
	}
	return child, id
}

// TestRecoverKilledLab kills a process that holds a lab with a changed
// backlog and checks that the next Setup removes what it left behind.
func TestRecoverKilledLab(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "ip", "iproute2")
	// Read the original value while holding the host lock: another
	// package's lab may have changed it for the time being.
	l0, err := Setup(context.Background(), Options{NoRPS: true})
	if err != nil {
		t.Fatal(err)
	}
	orig, err := Backlog()
	l0.Close()
	if err != nil {
		t.Fatal(err)
	}
	changed := orig/2 + 3
	t.Cleanup(func() {
		// Whatever happened, leave the host as found.
		// Setup undoes whatever the killed lab left.
		if l, err := Setup(context.Background(), Options{NoRPS: true}); err == nil {
			l.Close()
		}
	})

	child, id := startHelper(t, changed, os.Stderr)
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	var exitErr *exec.ExitError
	if err := child.Wait(); !errors.As(err, &exitErr) {
		t.Fatalf("helper wait: %v", err)
	}

	// The killed lab left its namespaces and the changed backlog.
	left := 0
	for _, ns := range namespaces(t) {
		if strings.HasPrefix(ns, NamePrefix+id) {
			left++
		}
	}
	// Unless another package's lab, waiting for the lock, got it first and
	// already cleaned up (with this same code): then the checks below still
	// hold, they just do not prove that this Setup did it.
	if got, _ := Backlog(); left != 2 || got != changed {
		t.Logf("after kill: %d namespaces of lab %s, backlog %d (expected 2 and %d): another lab got the lock first", left, id, got, changed)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l, err := Setup(ctx, Options{NoRPS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, ns := range namespaces(t) {
		if strings.HasPrefix(ns, NamePrefix+id) {
			t.Errorf("namespace %s of the killed lab still there", ns)
		}
	}
	if got, _ := Backlog(); got != orig {
		t.Errorf("backlog %d after recovery, want %d", got, orig)
	}
	if _, err := os.Stat(newStateFile(id).path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file of the killed lab: %v", err)
	}
}

// TestLabsAreSerialised checks that a second lab waits for the first.
func TestLabsAreSerialised(t *testing.T) {
	l := New(t, Options{NoRPS: true})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if l2, err := Setup(ctx, Options{NoRPS: true}); err == nil {
		l2.Close()
		t.Fatal("second lab set up while the first is open")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Setup: %v, want a lock wait timeout", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l3, err := Setup(context.Background(), Options{NoRPS: true})
	if err != nil {
		t.Fatalf("Setup after Close: %v", err)
	}
	l3.Close()
}

// TestFloodCancel checks that cancelling ctx stops a flood promptly and
// leaves no iperf3 in the lab.
func TestFloodCancel(t *testing.T) {
	l := New(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := l.Flood(ctx, 30*time.Second, FloodOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Flood with a cancelled ctx: %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Flood returned %v after start, ctx deadline was 1.5s", d)
	}
	pids := append(pidsIn(t, l.Sender), pidsIn(t, l.Receiver)...)
	if len(pids) != 1 { // the holder only
		t.Errorf("processes left in the lab after a cancelled flood: %v", pids)
	}
}

// TestHolderRestart kills the process that makes the receiver's counters
// readable; the next read starts another one and reads the right netns.
func TestHolderRestart(t *testing.T) {
	l := New(t, Options{NoRPS: true})
	pid, err := l.holderPID()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	done := l.holderDone
	l.mu.Unlock()
	<-done
	if d := sendToClosedPort(t, l, 3); d.UDPNoPorts != 3 {
		t.Errorf("Udp NoPorts delta %d after holder restart, want 3", d.UDPNoPorts)
	}
	if pid2, _ := l.holderPID(); pid2 == pid {
		t.Errorf("holder pid unchanged after kill")
	}
}

// TestSignalClosesLab sends SIGTERM to a process with an open lab: the lab
// is closed before the process dies of the signal.
func TestSignalClosesLab(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "ip", "iproute2")
	// Registered first, so it runs after startHelper's kill: if the
	// handler failed, Setup undoes what the child left.
	t.Cleanup(func() {
		if l, err := Setup(context.Background(), Options{NoRPS: true}); err == nil {
			l.Close()
		}
	})
	var stderr strings.Builder
	child, id := startHelper(t, 500, &stderr)
	if err := child.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := child.Wait()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("helper wait: %v", err)
	}
	if ws, ok := exitErr.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("helper exit %v, want death by SIGTERM", err)
	}
	if want := "closed lab " + id + " (error: <nil>)"; !strings.Contains(stderr.String(), want) {
		t.Fatalf("helper stderr %q, want %q", stderr.String(), want)
	}
	// Close ran before the lock was released, so no other lab cleaned for it.
	for _, ns := range namespaces(t) {
		if strings.HasPrefix(ns, NamePrefix+id) {
			t.Errorf("namespace %s left after SIGTERM", ns)
		}
	}
	if _, err := os.Stat(newStateFile(id).path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file left after SIGTERM: %v", err)
	}
}

// TestFloodIperf3Error passes iperf3 an option it rejects: Flood reports
// iperf3's own message and leaves no process behind.
func TestFloodIperf3Error(t *testing.T) {
	l := New(t, Options{})
	_, err := l.Flood(context.Background(), time.Second, FloodOptions{PacketSize: 100000})
	if err == nil || !strings.Contains(err.Error(), "iperf3") {
		t.Fatalf("Flood with a 100000-byte datagram: %v, want iperf3's error", err)
	}
	t.Logf("error as reported: %v", err)
	if pids := append(pidsIn(t, l.Sender), pidsIn(t, l.Receiver)...); len(pids) != 1 {
		t.Errorf("processes left in the lab after a failed flood: %v", pids)
	}
}
