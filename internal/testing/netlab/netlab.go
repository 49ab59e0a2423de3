// Package netlab builds a throwaway network lab for real-kernel tests: two
// network namespaces joined by a veth pair, RPS on the receiving end steering
// every packet to one CPU, a settable net.core.netdev_max_backlog and an
// iperf3 UDP flood between the two. It reproduces per-CPU backlog drops
// (enqueue_to_backlog, drop reason CPU_BACKLOG) and socket buffer drops
// (SOCKET_RCVBUFF) without any traffic leaving the namespaces it made.
//
// Everything the lab creates carries a unique "sp-<random>" name and is
// recorded; Close removes exactly that and restores every sysctl it changed.
// Labs are serialised across processes with a file lock, because the
// backlog sysctl and /proc/net/softnet_stat are global to the host.
//
// It needs root, iproute2 (ip) and iperf3.
package netlab

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/slowpath/slowpath/internal/lab/hostlock"
)

// Addresses inside the namespaces. The /30 lives only on the veth pair in the
// lab's own namespaces, so traffic to it can never leave them; each lab has
// its own namespaces, so labs never see each other's addresses.
const (
	SenderAddr   = "10.213.0.1"
	ReceiverAddr = "10.213.0.2"
	prefixLen    = 30
)

// NamePrefix starts the name of every namespace and link a lab creates.
const NamePrefix = "sp-"

// Options configures Setup. The zero value steers RPS to CPU 0.
type Options struct {
	// RPSCPU is the CPU that RPS steers every received packet to.
	RPSCPU int
	// NoRPS leaves rps_cpus untouched (packets stay on the CPU that sent them).
	NoRPS bool

	// Test hooks. failAt makes Setup fail after the named step, to check
	// that Close undoes a partial Setup; onID learns the ID of a lab whose
	// Setup fails; keepLock makes Close keep the host lock, so a test can
	// inspect the host before another package's lab changes it.
	failAt   string
	onID     func(string)
	keepLock bool
}

// Lab is a running network lab. Its methods are safe for concurrent use.
type Lab struct {
	// ID is the random part shared by all names of this lab.
	ID string
	// Sender and Receiver are the namespace names; SenderLink and
	// ReceiverLink the veth ends inside them.
	Sender, Receiver         string
	SenderLink, ReceiverLink string

	opts Options
	lock *hostlock.Lock

	mu         sync.Mutex
	closed     bool
	namespaces []string               // created by us, in creation order
	procs      map[*exec.Cmd]struct{} // running processes we started
	holder     *exec.Cmd              // sleeps in the receiver netns so its /proc/<pid>/net is readable
	holderDone chan struct{}          // closed when holder exits
	sysctls    map[string]string      // sysctl path -> original value
	state      *stateFile
}

var errInjected = errors.New("injected failure")

// Setup creates a lab. It waits (bounded by ctx) for any other lab on the
// host to close. On error everything already created is removed again.
func Setup(ctx context.Context, opts Options) (*Lab, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("netlab needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN to create network namespaces)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, errors.New("ip not found: apt-get install iproute2")
	}
	if !opts.NoRPS && (opts.RPSCPU < 0 || opts.RPSCPU >= onlineCPUs()) {
		return nil, fmt.Errorf("rps cpu %d out of range (host has %d CPUs)", opts.RPSCPU, onlineCPUs())
	}
	id, err := randomID()
	if err != nil {
		return nil, err
	}
	lock, err := acquireLock(ctx)
	if err != nil {
		return nil, err
	}
	l := &Lab{
		ID:           id,
		Sender:       NamePrefix + id + "-tx",
		Receiver:     NamePrefix + id + "-rx",
		SenderLink:   NamePrefix + id + "-t",
		ReceiverLink: NamePrefix + id + "-r",
		opts:         opts,
		lock:         lock,
		procs:        map[*exec.Cmd]struct{}{},
		sysctls:      map[string]string{},
	}
	// Leftovers of a lab whose process was killed before Close: we hold the
	// lock, so every state file left belongs to a dead lab.
	if err := recoverStale(ctx); err != nil {
		l.Close()
		return nil, err
	}
	trackOpen(l)
	l.state = newStateFile(l.ID)
	if opts.onID != nil {
		opts.onID(l.ID)
	}
	if err := l.setup(ctx); err != nil {
		if cerr := l.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("cleanup after failed setup: %w", cerr))
		}
		return nil, fmt.Errorf("netlab setup: %w", err)
	}
	return l, nil
}

func (l *Lab) step(name string) error {
	if l.opts.failAt == name {
		return fmt.Errorf("%s: %w", name, errInjected)
	}
	return nil
}

func (l *Lab) setup(ctx context.Context) error {
	for _, n := range []struct{ role, ns string }{{"sender", l.Sender}, {"receiver", l.Receiver}} {
		ns := n.ns
		// Record the name first so a process killed mid-step still gets it
		// cleaned; "ip netns add" refuses an existing name, so a name we
		// did not create is never deleted by us (checked on removal too).
		if err := l.recordNamespace(ns); err != nil {
			return err
		}
		if _, err := runIP(ctx, "netns", "add", ns); err != nil {
			l.forgetNamespace(ns)
			return err
		}
		if err := l.step("netns " + n.role); err != nil {
			return err
		}
	}
	// Both ends are created directly inside their namespaces: the links never
	// exist in the host namespace, not even for a moment.
	if _, err := runIP(ctx, "link", "add", l.SenderLink, "netns", l.Sender, "type", "veth",
		"peer", "name", l.ReceiverLink, "netns", l.Receiver); err != nil {
		return err
	}
	if err := l.step("veth"); err != nil {
		return err
	}
	for _, c := range [][]string{
		{"-n", l.Sender, "addr", "add", SenderAddr + "/" + strconv.Itoa(prefixLen), "dev", l.SenderLink},
		{"-n", l.Receiver, "addr", "add", ReceiverAddr + "/" + strconv.Itoa(prefixLen), "dev", l.ReceiverLink},
		{"-n", l.Sender, "link", "set", "lo", "up"},
		{"-n", l.Receiver, "link", "set", "lo", "up"},
		{"-n", l.Sender, "link", "set", l.SenderLink, "up"},
		{"-n", l.Receiver, "link", "set", l.ReceiverLink, "up"},
	} {
		if _, err := runIP(ctx, c...); err != nil {
			return err
		}
	}
	if err := l.step("addr"); err != nil {
		return err
	}
	if !l.opts.NoRPS {
		if err := l.SetRPS(ctx, l.opts.RPSCPU); err != nil {
			return err
		}
	}
	if err := l.step("rps"); err != nil {
		return err
	}
	if err := l.startHolder(); err != nil {
		return err
	}
	return l.step("holder")
}

// SetRPS steers every packet received on the receiver's veth to cpu. sysfs is
// per network namespace, so the write runs inside the receiver namespace
// ("ip netns exec" mounts that namespace's /sys).
// See Documentation/networking/scaling.rst (RPS).
func (l *Lab) SetRPS(ctx context.Context, cpu int) error {
	if cpu < 0 || cpu >= onlineCPUs() {
		return fmt.Errorf("rps cpu %d out of range (host has %d CPUs)", cpu, onlineCPUs())
	}
	p := "/sys/class/net/" + l.ReceiverLink + "/queues/rx-0/rps_cpus"
	mask := cpuMask(cpu)
	out, err := l.Exec(ctx, l.Receiver, "sh", "-c", `printf '%s\n' "$1" > "$2" && cat "$2"`, "sh", mask, p)
	if err != nil {
		return fmt.Errorf("set rps mask %s on %s (kernel needs CONFIG_RPS): %w", mask, p, err)
	}
	// The kernel prints the mask zero-padded; compare the bits.
	bits := func(s string) string { return strings.TrimLeft(strings.ReplaceAll(strings.TrimSpace(s), ",", ""), "0") }
	if bits(string(out)) != bits(mask) {
		return fmt.Errorf("rps mask on %s reads %q after writing %q", p, strings.TrimSpace(string(out)), mask)
	}
	return nil
}

// cpuMask formats a one-CPU mask the way rps_cpus takes it: hex, comma
// between 32-bit groups.
func cpuMask(cpu int) string {
	groups := make([]string, cpu/32+1)
	for i := range groups {
		groups[i] = "00000000"
	}
	groups[0] = fmt.Sprintf("%x", uint32(1)<<(cpu%32))
	return strings.Join(groups, ",")
}

// Exec runs argv inside one of the lab's namespaces and returns its stdout.
// It refuses namespaces the lab did not create.
func (l *Lab) Exec(ctx context.Context, ns string, argv ...string) ([]byte, error) {
	cmd, err := l.Command(ctx, ns, argv...)
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := l.run(cmd); err != nil {
		return stdout.Bytes(), fmt.Errorf("%s in netns %s: %w: %s", strings.Join(argv, " "), ns, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// Command prepares argv to run inside one of the lab's namespaces. Start it
// with Lab.Start (not cmd.Start) so Close kills it if the caller does not.
func (l *Lab) Command(ctx context.Context, ns string, argv ...string) (*exec.Cmd, error) {
	if len(argv) == 0 {
		return nil, errors.New("netlab exec: empty command")
	}
	if !l.owns(ns) {
		return nil, fmt.Errorf("netlab: refusing to run in netns %q: not created by this lab", ns)
	}
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns}, argv...)...)
	// "ip netns exec" execs argv in place, so killing cmd kills the command.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 2 * time.Second
	return cmd, nil
}

// Start starts cmd and tracks it until Wait returns, so Close can kill it.
func (l *Lab) Start(cmd *exec.Cmd) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("netlab: lab is closed")
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	l.procs[cmd] = struct{}{}
	return nil
}

// Wait waits for a command started with Start and stops tracking it.
func (l *Lab) Wait(cmd *exec.Cmd) error {
	err := cmd.Wait()
	l.mu.Lock()
	delete(l.procs, cmd)
	l.mu.Unlock()
	return err
}

func (l *Lab) run(cmd *exec.Cmd) error {
	if err := l.Start(cmd); err != nil {
		return err
	}
	return l.Wait(cmd)
}

func (l *Lab) owns(ns string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.closed && slices.Contains(l.namespaces, ns) && strings.HasPrefix(ns, NamePrefix+l.ID)
}

func (l *Lab) recordNamespace(ns string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.namespaces = append(l.namespaces, ns)
	return l.state.save(l.namespaces, l.sysctls)
}

func (l *Lab) forgetNamespace(ns string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.namespaces = slices.DeleteFunc(l.namespaces, func(s string) bool { return s == ns })
	_ = l.state.save(l.namespaces, l.sysctls)
}

// startHolder leaves a sleeping process in the receiver namespace: counters
// that are per namespace (/proc/net/snmp) are then readable from the host as
// /proc/<holder pid>/net/snmp without spawning a process per read.
func (l *Lab) startHolder() error {
	cmd, err := l.Command(context.Background(), l.Receiver, "sleep", "infinity")
	if err != nil {
		return err
	}
	if err := l.Start(cmd); err != nil {
		return fmt.Errorf("start holder process: %w", err)
	}
	done := make(chan struct{})
	l.mu.Lock()
	l.holder, l.holderDone = cmd, done
	l.mu.Unlock()
	go func() {
		_ = l.Wait(cmd)
		close(done)
	}()
	// "ip netns exec" starts in the host namespace and enters the lab's just
	// before exec: until then /proc/<pid>/net shows the host's counters.
	want, err := os.Stat("/run/netns/" + l.Receiver)
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		got, err := os.Stat("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/ns/net")
		if err == nil && os.SameFile(want, got) {
			return nil
		}
		select {
		case <-done:
			return errors.New("holder process in the receiver netns exited")
		default:
		}
		if time.Now().After(deadline) {
			return errors.New("holder process did not enter the receiver netns in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Close kills the lab's processes, deletes its namespaces (which deletes the
// veth pair), restores changed sysctls and releases the host lock. It is
// idempotent and safe after a failed Setup; it touches nothing the lab did not
// create.
func (l *Lab) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	procs := make([]*exec.Cmd, 0, len(l.procs))
	for c := range l.procs {
		procs = append(procs, c)
	}
	namespaces := slices.Clone(l.namespaces)
	sysctls := l.sysctls
	l.mu.Unlock()

	var errs []error
	for _, c := range procs {
		if c.Process != nil {
			_ = c.Process.Kill()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, ns := range slices.Backward(namespaces) {
		if err := removeNamespace(ctx, ns); err != nil {
			errs = append(errs, err)
		}
	}
	for p, v := range sysctls {
		if err := writeSysctl(p, v); err != nil {
			errs = append(errs, fmt.Errorf("restore %s to %s: %w", p, v, err))
		}
	}
	if len(errs) == 0 && l.state != nil {
		// Kept on failure so the next Setup retries the cleanup.
		if err := l.state.remove(); err != nil {
			errs = append(errs, err)
		}
	}
	untrackOpen(l)
	if l.lock != nil && !l.opts.keepLock {
		if err := l.lock.Release(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeNamespace kills every process left in ns, then deletes it. A netns
// with a live process would outlive "ip netns del" with our veth in it.
func removeNamespace(ctx context.Context, ns string) error {
	if !strings.HasPrefix(ns, NamePrefix) {
		return fmt.Errorf("netlab: refusing to delete netns %q without prefix %q", ns, NamePrefix)
	}
	if !namespaceExists(ns) {
		return nil
	}
	for range 50 {
		out, err := runIP(ctx, "netns", "pids", ns)
		if err != nil {
			return err
		}
		pids := strings.Fields(string(out))
		if len(pids) == 0 {
			break
		}
		for _, s := range pids {
			if pid, err := strconv.Atoi(s); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := runIP(ctx, "netns", "del", ns); err != nil {
		return err
	}
	return nil
}

func namespaceExists(ns string) bool {
	_, err := os.Stat("/run/netns/" + ns)
	return err == nil
}

func runIP(ctx context.Context, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

func randomID() (string, error) {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random lab id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// onlineCPUs bounds the CPU numbers RPS may be steered to.
func onlineCPUs() int { return runtime.NumCPU() }

// SendUDP sends count one-byte UDP datagrams from inside namespace ns to
// addr:port, which must be an address of the lab (SenderAddr, ReceiverAddr)
// or loopback, in which case the datagrams stay inside ns. Sent to a port
// nobody listens on, each is dropped with reason NO_SOCKET and counted in
// Udp NoPorts of that namespace.
func (l *Lab) SendUDP(ctx context.Context, ns, addr string, port, count int) error {
	ip := net.ParseIP(addr)
	if ip == nil || !(ip.IsLoopback() || addr == SenderAddr || addr == ReceiverAddr) {
		return fmt.Errorf("netlab: refusing to send to %q: only loopback and the lab's own addresses", addr)
	}
	if port <= 0 || port > 65535 || count < 0 {
		return fmt.Errorf("netlab: bad port %d or count %d", port, count)
	}
	// bash's /dev/udp opens a connected UDP socket per redirection; no
	// extra tool needed in the namespace.
	script := `for ((i = 0; i < $3; i++)); do printf x > "/dev/udp/$1/$2" || exit 1; done`
	_, err := l.Exec(ctx, ns, "bash", "-c", script, "bash", ip.String(), strconv.Itoa(port), strconv.Itoa(count))
	return err
}
