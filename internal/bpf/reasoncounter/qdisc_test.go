package reasoncounter

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/bpf/dropcounter"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// qdiscDropper makes a network namespace where every datagram sent is a
// qdisc drop: a veth whose root qdisc is pfifo with limit 0, which turns
// off the empty-queue bypass and drops every enqueue (net/sched/sch_fifo.c
// fifo_init and pfifo_enqueue) onto the to_free list that __dev_xmit_skb
// frees with kfree_skb_list_reason (net/core/dev.c, 6.x). A static
// neighbour keeps ARP out of it. It returns a sender of n datagrams and a
// reader of the qdisc's own drop counter; the namespace goes in Cleanup.
func qdiscDropper(t *testing.T) (send func(n int), qdiscDrops func() uint64) {
	t.Helper()
	ip := testenv.RequireTool(t, "ip", "iproute2")
	tc := testenv.RequireTool(t, "tc", "iproute2")
	ns := fmt.Sprintf("sp-qdisc-%d", os.Getpid())
	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run(ip, "netns", "add", ns)
	t.Cleanup(func() { exec.Command(ip, "netns", "del", ns).Run() })
	run(ip, "-n", ns, "link", "add", "v0", "type", "veth", "peer", "name", "v1")
	// No IPv6 in the namespace (its sysctls go with it): router and
	// listener solicitations would be qdisc drops too.
	for _, dev := range []string{"all", "default", "v0", "v1"} {
		run(ip, "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf."+dev+".disable_ipv6=1")
	}
	run(ip, "-n", ns, "link", "set", "v0", "up")
	run(ip, "-n", ns, "link", "set", "v1", "up")
	run(ip, "-n", ns, "addr", "add", "10.213.0.1/24", "dev", "v0")
	run(ip, "-n", ns, "neigh", "add", "10.213.0.2", "lladdr", "02:00:00:00:00:02", "dev", "v0")
	if out, err := exec.Command(ip, "netns", "exec", ns, tc, "qdisc", "add", "dev", "v0", "root", "pfifo", "limit", "0").CombinedOutput(); err != nil {
		testenv.Unavailable(t, fmt.Sprintf("pfifo qdisc: %v: %s (CONFIG_NET_SCH_FIFO)", err, out))
	}

	// The socket belongs to the namespace its creating thread was in.
	fd := func() int {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			t.Fatal(err)
		}
		defer self.Close()
		target, err := os.Open("/run/netns/" + ns)
		if err != nil {
			runtime.UnlockOSThread()
			t.Fatal(err)
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			t.Fatal(err)
		}
		fd, serr := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			// The thread stays locked and dies with the goroutine,
			// rather than run others in the wrong namespace.
			t.Fatalf("return to our network namespace: %v", err)
		}
		runtime.UnlockOSThread()
		if serr != nil {
			t.Fatal(serr)
		}
		return fd
	}()
	t.Cleanup(func() { unix.Close(fd) })
	dst := &unix.SockaddrInet4{Addr: [4]byte{10, 213, 0, 2}, Port: 9}
	send = func(n int) {
		for range n {
			// A dropped enqueue is not an error for a datagram socket.
			if err := unix.Sendto(fd, []byte("slowpath"), 0, dst); err != nil && err != unix.ENOBUFS {
				t.Fatalf("sendto %v: %v", dst, err)
			}
		}
	}
	dropped := regexp.MustCompile(`dropped (\d+)`)
	qdiscDrops = func() uint64 {
		m := dropped.FindStringSubmatch(run(ip, "netns", "exec", ns, tc, "-s", "qdisc", "show", "dev", "v0"))
		if m == nil {
			t.Fatal("tc -s qdisc shows no dropped count")
		}
		n, _ := strconv.ParseUint(m[1], 10, 64)
		return n
	}
	return send, qdiscDrops
}

func qdiscDropCount(tb testing.TB, c *Counter) uint64 {
	tb.Helper()
	cp, err := c.Read()
	if err != nil {
		tb.Fatal(err)
	}
	var n uint64
	for _, r := range cp.Records {
		if cp.Kernel.Name(r.Reason) == "QDISC_DROP" {
			n += r.Count
		}
	}
	return n
}

// TestQdiscDropsCounted: drops the kernel frees in a list (a qdisc's
// to_free) are counted as QDISC_DROP by tp_btf, at least one per datagram
// sent (drops elsewhere on the host may add). fentry is checked
// against the kernel's source: on 6.11+ kfree_skb_list_reason inlines
// __sk_skb_reason_drop and never calls sk_skb_reason_drop
// (net/core/skbuff.c in 6.12), so fentry there sees none of these drops;
// on 5.17-6.10 it calls kfree_skb_reason and fentry sees them all. This
// machine refuses fentry programs; the VM lab's 6.1 and 6.12 run both.
func TestQdiscDropsCounted(t *testing.T) {
	testenv.RequireRoot(t)
	send, qdiscDrops := qdiscDropper(t)
	const n = 200
	for _, a := range []Attach{TPBTF, Fentry} {
		t.Run(string(a), func(t *testing.T) {
			if a == Fentry && fentryRefused(t) {
				return
			}
			c := startOrRefused(t, a)
			if c == nil {
				return
			}
			defer c.Close()
			before, qBefore := qdiscDropCount(t, c), qdiscDrops()
			send(n)
			got, q := qdiscDropCount(t, c)-before, qdiscDrops()-qBefore
			t.Logf("%s %s: QDISC_DROP +%d, qdisc dropped +%d", a, c.Target, got, q)
			if q < n {
				t.Fatalf("the qdisc dropped %d of %d datagrams: the lab did not drop what it should", q, n)
			}
			switch {
			case a == TPBTF || c.Target == "kfree_skb_reason":
				if got < n {
					t.Errorf("%s on %s: QDISC_DROP +%d after %d datagrams the qdisc dropped", a, c.Target, got, n)
				}
			default: // fentry on sk_skb_reason_drop (6.11+)
				if got >= n {
					t.Errorf("fentry on sk_skb_reason_drop counted %d of %d list-freed qdisc drops: "+
						"the kernel calls it from kfree_skb_list_reason after all; docs/drops.md says it does not", got, n)
				}
			}
		})
	}
}

// startOrRefused starts the counter, or, on a kernel without drop reasons
// (5.10), checks that Start refused with ErrNoDropReasons and returns nil:
// there the refusal is the behaviour under test.
func startOrRefused(t *testing.T, a Attach) *Counter {
	t.Helper()
	c, err := Start(a)
	if err == nil {
		return c
	}
	k, perr := dropcounter.ProbeKernel()
	if perr == nil && !k.HasReasons {
		if !errors.Is(err, ErrNoDropReasons) {
			t.Fatalf("kernel without drop reasons (%s): Start(%s) = %v, want ErrNoDropReasons", k.Prototype, a, err)
		}
		t.Logf("kernel without drop reasons (%s): Start(%s) refused: %v", k.Prototype, a, err)
		return nil
	}
	t.Fatal(err)
	return nil
}
