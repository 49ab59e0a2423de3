package netlab

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

const floodTime = 3 * time.Second

// flood runs one flood at backlog n and returns the counter deltas.
func flood(t *testing.T, l *Lab, n int) (FloodResult, Counters) {
	t.Helper()
	if err := l.SetBacklog(n); err != nil {
		t.Fatal(err)
	}
	res, d, err := l.FloodCounted(context.Background(), floodTime, FloodOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("backlog %4d: sent %d, received %d (%.0f pkt/s, %.1f Mbit/s), iperf3 lost %d; %v",
		n, res.SentPackets, res.ReceivedPackets, res.ReceivedPacketsPerSecond(), res.ReceivedBitsPerSecond/1e6, res.LostPackets, d)
	if res.SentPackets == 0 || res.ReceivedPackets == 0 || res.ReceivedPackets > res.SentPackets {
		t.Fatalf("implausible iperf3 result %+v", res)
	}
	// The kernel's count of datagrams delivered in the receiver netns must
	// agree with iperf3's. Not exactly: iperf3 infers loss from sequence
	// gaps, and datagrams still queued when the test ends count as received.
	if diff := int64(d.UDPInDatagrams) - int64(res.ReceivedPackets); diff > int64(res.ReceivedPackets/100+16) || -diff > int64(res.ReceivedPackets/100+16) {
		t.Errorf("Udp InDatagrams delta %d, iperf3 received %d", d.UDPInDatagrams, res.ReceivedPackets)
	}
	return res, d
}

// TestBacklogDrops is the reproduction of issue 4: with RPS steering every
// packet to one CPU, a 16-packet backlog overflows under a UDP flood, a
// 1000-packet backlog does not.
func TestBacklogDrops(t *testing.T) {
	l := New(t, Options{RPSCPU: 0})

	_, big := flood(t, l, 1000)
	_, small := flood(t, l, 16)

	dropsBig, dropsSmall := big.TotalSoftnetDropped(), small.TotalSoftnetDropped()
	if dropsSmall == 0 {
		t.Fatalf("no softnet backlog drops with netdev_max_backlog=16")
	}
	if dropsSmall < 10*dropsBig {
		t.Errorf("softnet drops: %d with backlog 16, %d with backlog 1000: want at least 10x", dropsSmall, dropsBig)
	}
	// RPS put every packet in CPU 0's backlog, so that is where it overflows.
	if onCPU := uint64(small.SoftnetDropped[0]); onCPU*10 < dropsSmall*9 {
		t.Errorf("only %d of %d softnet drops on the RPS CPU 0", onCPU, dropsSmall)
	}
	// The same flood also overflows the iperf3 socket: that is a different
	// counter, which tests of drop attribution must keep apart.
	if small.UDPRcvbufErrors == 0 && big.UDPRcvbufErrors == 0 {
		t.Logf("note: no UDP receive buffer errors in either flood")
	}
}

func namespaces(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names
}

func pidsIn(t *testing.T, ns string) []int {
	t.Helper()
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		p, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, p)
	}
	return pids
}

// TestCloseLeavesNothing closes a lab in the middle of a flood and checks
// that its namespaces, processes and sysctl change are all gone.
func TestCloseLeavesNothing(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "ip", "iproute2")
	testenv.RequireTool(t, "iperf3", "iperf3")
	// keepLock: no other lab may change the backlog before we check it.
	l, err := Setup(context.Background(), Options{RPSCPU: 0, keepLock: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(); _ = l.lock.Release() })
	orig, err := Backlog()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetBacklog(orig/2 + 7); err != nil {
		t.Fatal(err)
	}
	if got, _ := Backlog(); got != orig/2+7 {
		t.Fatalf("backlog %d after SetBacklog(%d)", got, orig/2+7)
	}
	if _, err := l.Exec(context.Background(), "sp-000000-rx", "true"); err == nil {
		t.Errorf("Exec in a namespace the lab did not create succeeded")
	}
	out, err := l.Exec(context.Background(), l.Receiver, "ip", "-o", "-4", "addr", "show", "dev", l.ReceiverLink)
	if err != nil || !strings.Contains(string(out), ReceiverAddr+"/30") {
		t.Fatalf("receiver address: %q, %v", out, err)
	}

	floodErr := make(chan error, 1)
	go func() {
		_, err := l.Flood(context.Background(), 30*time.Second, FloodOptions{})
		floodErr <- err
	}()
	// Wait until both iperf3 processes run.
	var pids []int
	for deadline := time.Now().Add(10 * time.Second); ; {
		pids = append(pidsIn(t, l.Sender), pidsIn(t, l.Receiver)...)
		if len(pids) >= 3 { // holder, server, client
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("flood did not start: pids %v", pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
	start := time.Now()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-floodErr:
		if err == nil {
			t.Errorf("flood interrupted by Close returned no error")
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("flood returned %v after Close", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("flood still running 20s after Close")
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	for _, ns := range namespaces(t) {
		if strings.HasPrefix(ns, NamePrefix+l.ID) {
			t.Errorf("namespace %s left after Close", ns)
		}
	}
	if got, err := Backlog(); err != nil || got != orig {
		t.Errorf("netdev_max_backlog = %d (%v) after Close, want %d", got, err, orig)
	}
	for _, p := range pids {
		if _, err := os.Stat("/proc/" + strconv.Itoa(p)); err == nil {
			t.Errorf("process %d of the lab still exists", p)
		}
	}
	if _, err := os.Stat(newStateFile(l.ID).path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file left: %v", err)
	}
	if err := l.SetBacklog(16); err == nil {
		t.Errorf("SetBacklog on a closed lab succeeded")
	}
}

// TestCloseAfterFailedSetup makes Setup fail after each step and checks that
// nothing of it is left and the host lock is free again.
func TestCloseAfterFailedSetup(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "ip", "iproute2")
	for _, step := range []string{"netns sender", "netns receiver", "veth", "addr", "rps", "holder"} {
		t.Run(strings.ReplaceAll(step, " ", "-"), func(t *testing.T) {
			var id string
			opts := Options{failAt: step, onID: func(s string) { id = s }}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			l, err := Setup(ctx, opts)
			if err == nil {
				l.Close()
				t.Fatal("Setup with an injected failure succeeded")
			}
			if !errors.Is(err, errInjected) {
				t.Fatalf("Setup: %v, want the injected failure", err)
			}
			if id == "" {
				t.Fatal("Setup failed before choosing a lab ID")
			}
			for _, ns := range namespaces(t) {
				if strings.HasPrefix(ns, NamePrefix+id) {
					t.Errorf("namespace %s left after failed Setup", ns)
				}
			}
			if _, err := os.Stat(newStateFile(id).path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("state file left after failed Setup: %v", err)
			}
			// The lock must be released. Another package's lab may hold it
			// for a while; a leaked lock would be held forever.
			ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel2()
			lock, err := acquireLock(ctx2)
			if err != nil {
				t.Fatalf("host lock still held after failed Setup: %v", err)
			}
			lock.Release()
		})
	}
}

// sendToClosedPort sends n datagrams to the discard port on the receiver
// namespace's loopback, where nothing listens, and returns how the lab's
// counters moved meanwhile.
func sendToClosedPort(t *testing.T, l *Lab, n int) Counters {
	t.Helper()
	before, err := l.ReadCounters()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SendUDP(context.Background(), l.Receiver, "127.0.0.1", 9, n); err != nil {
		t.Fatal(err)
	}
	after, err := l.ReadCounters()
	if err != nil {
		t.Fatal(err)
	}
	return after.Sub(before)
}

// TestSendUDPClosedPort sends to a closed port on the receiver namespace's
// loopback and finds exactly those datagrams in its Udp NoPorts.
func TestSendUDPClosedPort(t *testing.T) {
	l := New(t, Options{NoRPS: true})
	if d := sendToClosedPort(t, l, 25); d.UDPNoPorts != 25 {
		t.Errorf("Udp NoPorts delta %d, want 25 (%v)", d.UDPNoPorts, d)
	}
	if err := l.SendUDP(context.Background(), l.Receiver, "192.0.2.1", 9, 1); err == nil {
		t.Errorf("SendUDP to an address outside the lab was not refused")
	}
}

// TestSetRPS steers to every CPU in turn; SetRPS reads each mask back.
func TestSetRPS(t *testing.T) {
	l := New(t, Options{NoRPS: true})
	ctx := context.Background()
	for cpu := range onlineCPUs() {
		if err := l.SetRPS(ctx, cpu); err != nil {
			t.Errorf("SetRPS(%d): %v", cpu, err)
		}
	}
	out, err := l.Exec(ctx, l.Receiver, "cat", "/sys/class/net/"+l.ReceiverLink+"/queues/rx-0/rps_cpus")
	if want := cpuMask(onlineCPUs() - 1); err != nil || strings.TrimLeft(strings.TrimSpace(string(out)), "0") != want {
		t.Errorf("rps_cpus = %q (%v), want %s", out, err, want)
	}
	if err := l.SetRPS(ctx, onlineCPUs()); err == nil {
		t.Errorf("SetRPS to a CPU the host does not have succeeded")
	}
}
