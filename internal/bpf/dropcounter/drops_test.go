package dropcounter

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/slowpath/slowpath/internal/dropreport"
	"github.com/slowpath/slowpath/internal/report/dropsreport"
	"github.com/slowpath/slowpath/internal/testing/netlab"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

func TestProbeKernelNamesReasons(t *testing.T) {
	k, err := ProbeKernel()
	if err != nil {
		testenv.Unavailable(t, err.Error())
	}
	if !k.HasReasons {
		// 5.10: what the kernel offers is the location only, and the
		// probe must not invent reasons.
		if k.Prototype != "kfree_skb(struct sk_buff *, void *)" || len(k.Reasons) != 0 {
			t.Errorf("kernel without drop reasons: prototype %q, %d reason names", k.Prototype, len(k.Reasons))
		}
		return
	}
	if !strings.HasPrefix(k.Prototype, "kfree_skb(struct sk_buff *, void *, enum skb_drop_reason") {
		t.Errorf("kernel with drop reasons: prototype %q", k.Prototype)
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

// traceClosedPort counts drops with opts while n datagrams go to a closed
// port on loopback, and returns what the tracer read after detaching.
func traceClosedPort(t *testing.T, opts Options, n int) *dropreport.Capture {
	t.Helper()
	// The sender first: it takes the closed-port lock before counting starts.
	send := netlab.ClosedPortSender(t)
	tr, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	send(n)
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
	if rep.DropReasons || rep.Attribution != "location" {
		t.Errorf("report without reasons says drop_reasons %v, attribution %q", rep.DropReasons, rep.Attribution)
	}
	var found bool
	for _, rc := range rep.Reasons {
		if rc.Reason == "__udp4_lib_rcv" {
			found = rc.Count >= 4 && rc.Layer == "socket" && strings.HasPrefix(rc.Hint, "udp: no socket") && rc.AttributedBy == "location"
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

// TestFullMap fills the per-CPU drops hash to capacity with keys no real
// drop has, then makes real drops (a closed port on loopback): their key
// cannot be inserted, so each must be counted as not counted
// (LostRecords), never silently lost, and the report must say so. Only
// the last run of drops on each CPU is still pending outside the hash at
// the end and is counted normally: counted + lost = sent, exactly.
func TestFullMap(t *testing.T) {
	testenv.RequireRoot(t)
	self, err := NetnsOf("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Start(Options{Ifindex: 1, Netns: self})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	capacity := int(tr.objs.Drops.MaxEntries())
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	zero := make([]uint64, cpus)
	// Reason 0xffff and ifindex 0xffffffff: no real drop has this key.
	for i := 0; i < capacity; i++ {
		k := bpfDropKey{Reason: 0xffff, Ifindex: 0xffffffff, Location: uint64(i), StackId: -1}
		if err := tr.objs.Drops.Update(&k, zero, ebpf.UpdateNoExist); err != nil {
			t.Fatalf("fill entry %d of %d: %v", i, capacity, err)
		}
	}
	// The map is full: one more key is refused.
	extra := bpfDropKey{Reason: 0xffff, Ifindex: 0xffffffff, Location: uint64(capacity), StackId: -1}
	if err := tr.objs.Drops.Update(&extra, zero, ebpf.UpdateNoExist); err == nil {
		t.Fatalf("map took more than %d entries", capacity)
	}
	// Drops of one key stay in the per-CPU run and never reach the hash;
	// alternating two keys (closed UDP ports over IPv4 and IPv6: two drop
	// locations) flushes every run into the full map.
	const sent = 400
	v4, v6 := closedPortConn(t, "udp4", "127.0.0.1"), closedPortConn(t, "udp6", "::1")
	for i := 0; i < sent/2; i++ {
		v4()
		v6()
	}
	if err := tr.Stop(); err != nil {
		t.Fatal(err)
	}
	c, err := tr.Read()
	if err != nil {
		t.Fatal(err)
	}
	var counted uint64
	for _, r := range c.Records {
		if r.Reason == 0xffff {
			continue
		}
		counted += r.Count
	}
	t.Logf("capacity %d: %d drops counted (pending runs), %d not counted", capacity, counted, c.LostRecords)
	if c.LostRecords == 0 {
		t.Fatal("the map was full and no drop was reported as not counted")
	}
	if counted+c.LostRecords < sent {
		t.Errorf("counted %d + not counted %d < %d sent: drops were lost silently", counted, c.LostRecords, sent)
	}
	rep := dropreport.Summarize(c, nil, dropreport.SummaryOptions{ShowUnspecified: true})
	if rep.LostRecords != c.LostRecords {
		t.Errorf("report lost_records %d, capture %d", rep.LostRecords, c.LostRecords)
	}
	var text strings.Builder
	if err := dropsreport.WriteText(&text, rep, dropsreport.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d drops not counted: the in-kernel map was full", c.LostRecords)
	if !strings.Contains(text.String(), want) {
		t.Errorf("text report does not say %q:\n%s", want, text.String())
	}
}

// closedPortConn returns a function that sends one datagram to a closed
// UDP port of network ("udp4" or "udp6") on loopback address ip.
func closedPortConn(t *testing.T, network, ip string) func() {
	t.Helper()
	l, err := net.ListenPacket(network, net.JoinHostPort(ip, "0"))
	if err != nil {
		testenv.Unavailable(t, network+" on loopback: "+err.Error())
	}
	dst := l.LocalAddr()
	l.Close()
	c, err := net.ListenPacket(network, net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return func() {
		if _, err := c.WriteTo([]byte("slowpath"), dst); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecursionMissesRead: the kernel's recursion-miss count is read as a
// number (0 is a real 0) when the program's stats can be read, and as
// unknown, with the error, when they cannot: here the program is closed
// before the read, so BPF_OBJ_GET_INFO_BY_FD fails for real.
func TestRecursionMissesRead(t *testing.T) {
	testenv.RequireRoot(t)
	self, err := NetnsOf("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	c := traceClosedPort(t, Options{Ifindex: 1, Netns: self}, 3)
	if c.RecursionMisses == nil || c.RecursionMissesError != "" {
		t.Errorf("readable stats: recursion misses %v, error %q", c.RecursionMisses, c.RecursionMissesError)
	}
	tr, err := Start(Options{Ifindex: 1, Netns: self})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := tr.objs.OnKfreeSkb.Close(); err != nil {
		t.Fatal(err)
	}
	c, err = tr.Read()
	if err != nil {
		t.Fatal(err)
	}
	if c.RecursionMisses != nil || c.RecursionMissesError == "" {
		t.Errorf("unreadable stats reported as %v (error %q), want unknown with the error", *c.RecursionMisses, c.RecursionMissesError)
	}
	rep := dropreport.Summarize(c, nil, dropreport.SummaryOptions{})
	var text strings.Builder
	if err := dropsreport.WriteText(&text, rep, dropsreport.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "recursion misses unknown") {
		t.Errorf("text report:\n%s", text.String())
	}
}
