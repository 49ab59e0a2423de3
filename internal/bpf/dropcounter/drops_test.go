package dropcounter

import (
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/dropreport"
	"github.com/slowpath/slowpath/internal/testenv"
)

func TestProbeKernelNamesReasons(t *testing.T) {
	k, err := ProbeKernel()
	if err != nil {
		testenv.Unavailable(t, err.Error())
	}
	if !k.HasReasons {
		testenv.Unavailable(t, "kernel without drop reasons: skb:kfree_skb has no reason argument")
	}
	v, ok := k.Unspecified()
	if !ok {
		t.Fatalf("NOT_SPECIFIED missing from %d reasons", len(k.Reasons))
	}
	found := false
	for _, n := range k.Reasons {
		found = found || n == "CPU_BACKLOG"
	}
	if !found {
		t.Errorf("CPU_BACKLOG not among the kernel's reasons (NOT_SPECIFIED=%d)", v)
	}
}

// sendToClosedPort sends n datagrams to an unused UDP port on loopback.
func sendToClosedPort(t *testing.T, n int) int {
	t.Helper()
	// Bind then close to learn a port nobody listens on.
	l, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.LocalAddr().(*net.UDPAddr).Port
	l.Close()
	// An unconnected socket: a connected one would turn the ICMP port
	// unreachable into ECONNREFUSED on the next write, which is not sent.
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dst := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}
	for i := 0; i < n; i++ {
		if _, err := c.WriteTo([]byte("slowpath"), dst); err != nil {
			t.Fatal(err)
		}
	}
	return port
}

// traceClosedPort counts drops with opts while n datagrams go to a closed
// port on loopback, and returns what the tracer read after detaching.
func traceClosedPort(t *testing.T, opts Options, n int) *dropreport.Capture {
	t.Helper()
	tr, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	sendToClosedPort(t, n)
	if err := tr.Stop(); err != nil {
		t.Fatal(err)
	}
	c, err := tr.Read()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNoSocketOnLoopback(t *testing.T) {
	testenv.RequireRoot(t)
	self, err := NetnsOf("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for _, stacks := range []bool{false, true} {
		// Loopback is ifindex 1 in every namespace: the filter must also
		// match ours.
		c := traceClosedPort(t, Options{Stacks: stacks, Ifindex: 1, Netns: self}, 5)
		var n uint64
		for _, r := range c.Records {
			name := c.Kernel.Name(r.Reason)
			if r.Ifindex != 1 || r.Netns != self {
				t.Errorf("record on ifindex %d passed the loopback filter: %+v", r.Ifindex, r)
			}
			if name == "NO_SOCKET" {
				n += r.Count
				if stacks && (r.StackID < 0 || len(c.Stacks[r.StackID]) == 0) {
					t.Errorf("NO_SOCKET record without a stack: %+v", r)
				}
			}
			t.Logf("%s loc=%#x if=%d stack=%d count=%d", name, r.Location, r.Ifindex, r.StackID, r.Count)
		}
		if n < 5 {
			t.Errorf("stacks=%v: %d NO_SOCKET drops, want >= 5", stacks, n)
		}
	}
}

// TestWithoutReasons loads the program as on a kernel before 5.17 (the
// verifier must accept it without the reason argument) and checks that
// drops are then grouped by location, with known locations named.
func TestWithoutReasons(t *testing.T) {
	testenv.RequireRoot(t)
	self, err := NetnsOf("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	c := traceClosedPort(t, Options{Stacks: true, Ifindex: 1, Netns: self, ignoreReasons: true}, 4)
	if c.Kernel.HasReasons {
		t.Fatal("capture claims drop reasons")
	}
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := dropreport.ParseKallsyms(f)
	if err != nil {
		t.Fatal(err)
	}
	rep := dropreport.Summarize(c, syms, dropreport.SummaryOptions{})
	var found bool
	for _, rc := range rep.Reasons {
		if rc.Reason == "__udp4_lib_rcv" {
			found = rc.Count >= 4 && rc.Layer == "socket" && strings.HasPrefix(rc.Hint, "udp, no socket")
			t.Logf("%+v", rc)
		}
	}
	if !found {
		t.Errorf("no __udp4_lib_rcv group (socket layer, >= 4 drops, named) in %+v", rep.Reasons)
	}
	stacks := dropreport.Fold(c, syms, false)
	if len(stacks) == 0 || !slices.Contains(stacks[0].Frames, "__udp4_lib_rcv") {
		t.Errorf("folded stacks without __udp4_lib_rcv: %+v", stacks)
	}
}

// TestStackSampling sends a run of identical drops (closed port on
// loopback, one sender): with StackEvery n the program walks about one
// stack in n and still counts every drop, each under a real stack; with 1
// it walks every drop's stack.
func TestStackSampling(t *testing.T) {
	testenv.RequireRoot(t)
	self, err := NetnsOf("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	const sent = 2000
	for _, every := range []uint32{1, 50} {
		c := traceClosedPort(t, Options{Stacks: true, StackEvery: every, Ifindex: 1, Netns: self}, sent)
		if c.StackEvery != every {
			t.Errorf("capture says stack_every %d, want %d", c.StackEvery, every)
		}
		var drops, withStack uint64
		for _, r := range c.Records {
			if c.Kernel.Name(r.Reason) != "NO_SOCKET" {
				continue
			}
			drops += r.Count
			if r.StackID >= 0 && len(c.Stacks[r.StackID]) > 0 {
				withStack += r.Count
			}
		}
		if drops < sent {
			t.Errorf("every %d: %d NO_SOCKET drops counted, want >= %d", every, drops, sent)
		}
		if withStack != drops {
			t.Errorf("every %d: %d of %d drops under a stack, want all", every, withStack, drops)
		}
		// Other frees on loopback may interrupt the run (each new run is
		// walked at once), so sampled walks are bounded, not exact.
		lo, hi := uint64(sent/every), uint64(sent/every)*3+10
		if every == 1 {
			lo, hi = sent, sent*2
		}
		if c.StackWalks < lo || c.StackWalks > hi {
			t.Errorf("every %d: %d stacks walked for %d drops, want %d..%d", every, c.StackWalks, drops, lo, hi)
		}
		t.Logf("every %d: %d drops, %d walks, %d records", every, drops, c.StackWalks, len(c.Records))
	}
}
