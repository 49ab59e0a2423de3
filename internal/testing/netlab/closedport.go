package netlab

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/slowpath/slowpath/internal/lab/hostlock"

	"golang.org/x/sys/unix"
)

// closedPortLock is held from a test binary's first ClosedPortSender to its
// exit: tests that count NO_SOCKET drops host-wide (the drop counters see
// every closed-port datagram on the host) run one package after another
// under `go test ./...`, so one package's datagrams are not counted by
// another's tracer. For the rest of the process, because a test may make
// several senders, and a second flock on the same file would wait for the
// first.
var closedPortLock struct {
	sync.Mutex
	held *hostlock.Lock
}

func holdClosedPortLock(tb testing.TB) {
	tb.Helper()
	closedPortLock.Lock()
	defer closedPortLock.Unlock()
	if closedPortLock.held != nil {
		return
	}
	l, err := hostlock.Acquire(context.Background(), "/run/slowpath/closedport", "another test is counting closed-port drops")
	if err != nil {
		tb.Fatalf("closed-port lock: %v", err)
	}
	closedPortLock.held = l
}

// ClosedPortSender returns a function that sends n UDP datagrams from an
// unconnected loopback socket to a port nobody listens on: each is a real
// drop with reason NO_SOCKET, in the sender's own softirq on its own CPU
// (no namespace needed). The socket is closed in tb.Cleanup. Unconnected,
// because a connected socket turns the ICMP port unreachable into
// ECONNREFUSED on the next send. It takes a host-wide lock first (see
// closedPortLock): make the sender before starting to count.
func ClosedPortSender(tb testing.TB) func(n int) {
	tb.Helper()
	holdClosedPortLock(tb)
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { unix.Close(fd) })
	// Bind a probe then close it to learn a port nobody listens on.
	probe, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		tb.Fatal(err)
	}
	lo := [4]byte{127, 0, 0, 1}
	if err := unix.Bind(probe, &unix.SockaddrInet4{Addr: lo}); err != nil {
		tb.Fatal(err)
	}
	sa, err := unix.Getsockname(probe)
	if err != nil {
		tb.Fatal(err)
	}
	unix.Close(probe)
	dst := &unix.SockaddrInet4{Addr: lo, Port: sa.(*unix.SockaddrInet4).Port}
	payload := []byte("slowpath")
	return func(n int) {
		for i := 0; i < n; i++ {
			if err := unix.Sendto(fd, payload, 0, dst); err != nil {
				tb.Fatalf("sendto %v: %v", dst, err)
			}
		}
	}
}

// PinToLastCPU locks the calling goroutine to its thread and the thread to
// the last CPU, so a sender does not migrate in the middle of a measured
// round (a migration costs more than a tracer does). The returned func
// restores the thread's CPU set and unlocks it; defer it on the same
// goroutine.
func PinToLastCPU(tb testing.TB) (unpin func()) {
	tb.Helper()
	runtime.LockOSThread()
	var was, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		runtime.UnlockOSThread()
		tb.Fatal(err)
	}
	one.Set(runtime.NumCPU() - 1)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		runtime.UnlockOSThread()
		tb.Fatalf("pin the sender: %v", err)
	}
	return func() {
		if err := unix.SchedSetaffinity(0, &was); err != nil {
			tb.Errorf("unpin the sender: %v", err)
		}
		runtime.UnlockOSThread()
	}
}
