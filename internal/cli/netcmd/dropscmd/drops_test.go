package dropscmd

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/bpf/dropcounter"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/dropreport"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testing/golden"
	"github.com/slowpath/slowpath/internal/testing/netlab"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

func testEnv() (*clienv.Env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &clienv.Env{Stdout: &out, Stderr: &errb, FS: hostfs.Default()}, &out, &errb
}

func TestFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    Options
		wantErr string
	}{
		{args: nil, want: Options{Duration: 30 * time.Second, Format: "text", Top: 3, StackEvery: DefaultStackEvery}},
		{args: []string{"--duration", "5s", "--stacks", "--interface", "eth0", "--format", "json", "--all"},
			want: Options{Duration: 5 * time.Second, Stacks: true, Interface: "eth0", Format: "json", All: true, Top: 3, StackEvery: DefaultStackEvery}},
		// A flame graph needs stacks.
		{args: []string{"--svg", "x.svg"}, want: Options{Duration: 30 * time.Second, Stacks: true, SVG: "x.svg", Format: "text", Top: 3, StackEvery: DefaultStackEvery}},
		{args: []string{"--folded", "x.folded", "--duration", "0"}, want: Options{Stacks: true, Folded: "x.folded", Format: "text", Top: 3, StackEvery: DefaultStackEvery}},
		{args: []string{"--format", "yaml"}, wantErr: `unknown --format "yaml"`},
		{args: []string{"--duration", "-1s"}, wantErr: "negative"},
		{args: []string{"--top", "0"}, wantErr: "--top 0"},
		{args: []string{"--stacks", "--stack-every", "0"}, wantErr: "--stack-every 0"},
		{args: []string{"--stacks", "--stack-every", "1"}, want: Options{Duration: 30 * time.Second, Stacks: true, Format: "text", Top: 3, StackEvery: 1}},
		{args: []string{"--replay", "c.json", "--interface", "lo"}, wantErr: "--replay"},
		{args: []string{"extra"}, wantErr: "unknown command"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			env, _, _ := testEnv()
			var got *Options
			cmd := NewCmdDrops(env, func(_ context.Context, o *Options) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			err := cmd.Execute()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, *got); diff != "" {
				t.Errorf("options (-want +got)\n%s", diff)
			}
		})
	}
}

// runCmd runs the command in-process with args and returns stdout.
func runCmd(ctx context.Context, t *testing.T, args ...string) (string, error) {
	t.Helper()
	env, out, errb := testEnv()
	cmd := NewCmdDrops(env, nil)
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	err := cmd.ExecuteContext(ctx)
	if errb.Len() > 0 {
		t.Logf("stderr: %s", errb.String())
	}
	return out.String(), err
}

// startCmd runs the command in the background until ctx ends; it returns
// once the tracer is attached.
func startCmd(ctx context.Context, t *testing.T, args ...string) <-chan result {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	done := make(chan result, 1)
	go func() {
		out, err := runCmd(ctx, t, append(args, "--duration", "0", "--ready-file", ready)...)
		done <- result{out, err}
	}()
	for {
		if _, err := os.Stat(ready); err == nil {
			return done
		}
		select {
		case r := <-done:
			t.Fatalf("drops ended before attaching: %v\n%s", r.err, r.out)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

type result struct {
	out string
	err error
}

func parseReport(t *testing.T, s string) dropreport.Report {
	t.Helper()
	var r dropreport.Report
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		t.Fatalf("json output: %v\n%s", err, s)
	}
	return r
}

// TestNoSocketLoopback sends datagrams to a closed UDP port on loopback
// and expects them as NO_SOCKET drops in __udp4_lib_rcv on lo.
func TestNoSocketLoopback(t *testing.T) {
	testenv.RequireRoot(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := startCmd(ctx, t, "--format", "json", "--interface", "lo")

	l, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dst := l.LocalAddr()
	l.Close() // now nobody listens on that port
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const sent = 5
	for i := 0; i < sent; i++ {
		if _, err := c.WriteTo([]byte("slowpath"), dst); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond) // softirq delivery on loopback is immediate; be generous
	cancel()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	rep := parseReport(t, r.out)
	var ns *dropreport.ReasonCount
	for i := range rep.Reasons {
		if rep.Reasons[i].Reason == "NO_SOCKET" {
			ns = &rep.Reasons[i]
		}
	}
	if ns == nil {
		t.Fatalf("no NO_SOCKET in %s", r.out)
	}
	if ns.Count < sent {
		t.Errorf("NO_SOCKET count %d, sent %d", ns.Count, sent)
	}
	if ns.Layer != "socket" || len(ns.Locations) == 0 || ns.Locations[0].Function != "__udp4_lib_rcv" {
		t.Errorf("NO_SOCKET: layer %q, locations %+v; want socket, __udp4_lib_rcv", ns.Layer, ns.Locations)
	}
	for _, rc := range rep.Reasons {
		for _, i := range rc.Interfaces {
			if i.Name != "lo" {
				t.Errorf("%s counted on %+v despite --interface lo", rc.Reason, i)
			}
		}
	}
}

// TestBacklogFlood is the reproduction of issue 4 seen by the tracer: with
// RPS steering a veth's packets to one CPU and netdev_max_backlog 16, an
// iperf3 UDP flood overflows the backlog. CPU_BACKLOG must dominate, match
// the softnet_stat dropped delta within 5%, and show enqueue_to_backlog in
// the folded stacks and the flame graph.
func TestBacklogFlood(t *testing.T) {
	lab := netlab.New(t, netlab.Options{RPSCPU: 0})
	if err := lab.SetBacklog(16); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	folded, svg := filepath.Join(dir, "drops.folded"), filepath.Join(dir, "drops.svg")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	record := filepath.Join(dir, "capture.json")
	if golden.Update() {
		// Refresh the recorded capture that internal/dropreport tests replay.
		record = "../../../dropreport/testdata/flood.capture.json"
	}
	args := []string{"--format", "json", "--folded", folded, "--svg", svg, "--record", record}
	done := startCmd(ctx, t, args...)
	// Attached after slowpath's tracer and detached before it, so its
	// window lies inside slowpath's and around the counter reads.
	ref := startReasonCounter(t, "SOCKET_RCVBUFF")

	res, d, err := lab.FloodCounted(ctx, 3*time.Second, netlab.FloodOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refN, refMisses := ref.stop(t)
	cancel()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	rep := parseReport(t, r.out)
	link := receiverLink(t, lab)
	t.Logf("flood: %d sent, %d received; counters %v", res.SentPackets, res.ReceivedPackets, d)
	for _, rc := range rep.Reasons {
		t.Logf("%s %d (%s) %v %v", rc.Reason, rc.Count, rc.Layer, rc.Locations, rc.Interfaces)
	}

	softnet := d.TotalSoftnetDropped()
	if softnet == 0 {
		t.Fatal("the flood caused no softnet backlog drops")
	}
	bl := checkBacklogDominates(t, rep, link, softnet)
	rcv := checkSocketDrops(t, rep, link, refN, refMisses, d)
	if rep.RecursionMisses == nil {
		t.Errorf("recursion misses unknown after a live run: %s", rep.RecursionMissesError)
	} else {
		t.Logf("recursion misses %d, not counted (map full) %d, stack walks %d (%d failed)", *rep.RecursionMisses, rep.LostRecords, rep.StackWalks, rep.StackWalksFailed)
	}
	t.Logf("CPU_BACKLOG %d, softnet dropped %d; SOCKET_RCVBUFF on the lab veth %d, RcvbufErrors %d", bl.Count, softnet, rcv, d.UDPRcvbufErrors)
	checkFloodStacks(t, rep, bl, folded, svg, record)
}

// labLink is the lab's receiving veth, where the lab's drops must be
// attributed: by its index inside the receiver namespace and that
// namespace's inode.
type labLink struct {
	name    string
	netns   uint32
	ifindex uint32
}

func receiverLink(t *testing.T, lab *netlab.Lab) labLink {
	t.Helper()
	rxNetns, err := dropcounter.NetnsOf("/run/netns/" + lab.Receiver)
	if err != nil {
		t.Fatal(err)
	}
	link, err := lab.Exec(context.Background(), lab.Receiver, "ip", "-o", "link", "show", "dev", lab.ReceiverLink)
	if err != nil {
		t.Fatal(err)
	}
	idx, _, ok := strings.Cut(string(link), ":")
	rxIfindex, err := strconv.ParseUint(idx, 10, 32)
	if !ok || err != nil {
		t.Fatalf("ifindex of %s from %q: %v", lab.ReceiverLink, link, err)
	}
	return labLink{name: lab.ReceiverLink, netns: rxNetns, ifindex: uint32(rxIfindex)}
}

// count is rc's count on the link.
func (l labLink) count(rc dropreport.ReasonCount) uint64 {
	for _, i := range rc.Interfaces {
		if i.Netns == l.netns && i.Ifindex == l.ifindex {
			return i.Count
		}
	}
	return 0
}

// checkBacklogDominates: of the lab veth's drops before the socket
// layer, CPU_BACKLOG dominates, matches the softnet_stat dropped delta
// within 5% and is nearly all on the lab veth. It returns CPU_BACKLOG's
// count.
func checkBacklogDominates(t *testing.T, rep dropreport.Report, link labLink, softnet uint64) dropreport.ReasonCount {
	t.Helper()
	// The iperf3 receiver cannot keep up with the sender either, so its
	// socket overflows too (SOCKET_RCVBUFF, checked against Udp
	// RcvbufErrors below) and on this 2-CPU machine outnumbers the backlog
	// drops in every flood shape we tried. Of the lab veth's drops before
	// the socket layer, CPU_BACKLOG must dominate. (Only the lab's: other
	// test packages running at the same time drop packets on loopback.)
	var bl dropreport.ReasonCount
	var top string
	var topN, others uint64
	for _, rc := range rep.Reasons {
		n := link.count(rc)
		switch {
		case rc.Reason == "CPU_BACKLOG":
			bl = rc
		case rc.Reason != "SOCKET_RCVBUFF":
			others += n
		}
		if rc.Reason != "SOCKET_RCVBUFF" && n > topN {
			top, topN = rc.Reason, n
		}
	}
	if top != "CPU_BACKLOG" {
		t.Fatalf("top reason on the lab veth apart from SOCKET_RCVBUFF is %q, not CPU_BACKLOG: %+v", top, rep.Reasons)
	}
	if others*20 > link.count(bl) {
		t.Errorf("CPU_BACKLOG %d does not dominate the %d other non-socket drops on the lab veth", link.count(bl), others)
	}
	if diff := float64(bl.Count) - float64(softnet); diff > 0.05*float64(softnet) || -diff > 0.05*float64(softnet) {
		t.Errorf("CPU_BACKLOG %d vs softnet_stat dropped delta %d: more than 5%% apart", bl.Count, softnet)
	}
	// Other namespaces may drop a few packets into their backlog at the
	// same time; the flood's own must be nearly all of them.
	if n := link.count(bl); n*100 < bl.Count*95 {
		t.Errorf("only %d of %d CPU_BACKLOG drops attributed to %s (ifindex %d, netns %d): %+v", n, bl.Count, link.name, link.ifindex, link.netns, bl.Interfaces)
	}
	if bl.Layer != "backlog" || bl.Check != "net.backlog-drops" || bl.Locations[0].Function != "enqueue_to_backlog" {
		t.Errorf("CPU_BACKLOG: layer %q check %q locations %+v", bl.Layer, bl.Check, bl.Locations)
	}
	return bl
}

// checkSocketDrops: socket buffer drops are told apart from backlog drops,
// against the reference counter (refN, refMisses) and the receiver
// namespace's Udp RcvbufErrors. It returns SOCKET_RCVBUFF's count on the
// lab veth.
func checkSocketDrops(t *testing.T, rep dropreport.Report, link labLink, refN, refMisses uint64, d netlab.Counters) uint64 {
	t.Helper()
	// Every SOCKET_RCVBUFF free the kernel handed to BPF programs is
	// counted: slowpath's count (all interfaces) plus the hits the kernel
	// reports it skipped because the tracer was running (a hit nesting in
	// it still runs the reference) is at least the reference program's,
	// whose window lies inside slowpath's, and exceeds it only by the few
	// drops outside that window.
	var rcv, rcvAll, misses uint64
	for _, rc := range rep.Reasons {
		if rc.Reason == "SOCKET_RCVBUFF" {
			rcv, rcvAll = link.count(rc), rc.Count
		}
	}
	if rep.RecursionMisses != nil {
		misses = *rep.RecursionMisses
	}
	if rcvAll+misses < refN || rcvAll*100 > refN*101 {
		t.Errorf("slowpath counted %d SOCKET_RCVBUFF drops (recursion misses %d), a reference tp_btf counter over a shorter window %d", rcvAll, misses, refN)
	}
	// Against the receiver namespace's counter the match is not exact, and
	// not by slowpath's fault: under load the kernel does not run the
	// raw-tracepoint BPF programs for some skb:kfree_skb hits on the
	// RPS CPU, and counts no recursion miss for them. Measured on 6.18
	// (2 vCPUs, load 3-6): perf stat -e skb:kfree_skb --filter
	// 'reason == 6' matched RcvbufErrors exactly in every run, while in
	// about half the runs slowpath and the 10-instruction reference
	// counter above both lacked the same 70 to 1,200 of them (0.02-0.5%;
	// 1.34% in one CI run), with run_cnt equal to slowpath's total.
	// The bound leaves room for that loss, and still catches drops
	// counted under another reason or interface.
	t.Logf("SOCKET_RCVBUFF: slowpath %d (lab veth %d), reference counter %d (recursion misses %d), RcvbufErrors delta %d: %d not run by the kernel",
		rcvAll, rcv, refN, refMisses, d.UDPRcvbufErrors, int64(d.UDPRcvbufErrors)-int64(refN))
	if rcv*100 < d.UDPRcvbufErrors*95 || rcv*100 > d.UDPRcvbufErrors*101 {
		t.Errorf("SOCKET_RCVBUFF %d vs Udp RcvbufErrors delta %d in the receiver namespace", rcv, d.UDPRcvbufErrors)
	}
	return rcv
}

// checkFloodStacks: the folded stacks and the flame graph show
// enqueue_to_backlog, every CPU_BACKLOG drop is accounted for by a stack
// through it or a failed walk, and walks are sampled.
func checkFloodStacks(t *testing.T, rep dropreport.Report, bl dropreport.ReasonCount, folded, svg, record string) {
	t.Helper()
	for _, p := range []string{folded, svg} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "enqueue_to_backlog") {
			t.Errorf("%s does not contain enqueue_to_backlog", p)
		}
	}
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	var c dropreport.Capture
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	// Stacks are sampled: a drop is counted under the stack of the last
	// like drop walked on its CPU, one walk per DefaultStackEvery drops. A
	// walk that fails (bpf_get_stackid finds another stack in the hash
	// bucket: 0.5-1.8% of walks in 10 runs here, with 700-1,100 distinct
	// stacks in the 16,384-entry map) leaves the up to
	// DefaultStackEvery drops counted under it with no stack. So the
	// share of CPU_BACKLOG drops with a stack is the share of their walks
	// that succeeded, in steps of up to 64 drops: a flood of 3,000 drops
	// is about 50 walks, and two or three failures cost 5%. What holds for
	// any flood: every CPU_BACKLOG drop with a stack was walked through
	// enqueue_to_backlog (which frees with that reason, net/core/dev.c),
	// every one without is covered by a failed walk, and walks rarely
	// fail.
	b, _ = os.ReadFile(folded)
	var through, noStack, elsewhere uint64
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "CPU_BACKLOG;") {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseUint(line[sp+1:], 10, 64)
		if err != nil {
			t.Fatalf("folded line %q: %v", line, err)
		}
		frames := strings.Split(line[:sp], ";")
		switch {
		case frames[1] == dropreport.FrameNoStack:
			noStack += n
		case slices.Contains(frames, "enqueue_to_backlog"):
			through += n
		default:
			elsewhere += n
		}
	}
	t.Logf("CPU_BACKLOG: %d drops with a stack through enqueue_to_backlog, %d elsewhere, %d without; %d of %d walks failed (%d stacks)",
		through, elsewhere, noStack, rep.StackWalksFailed, rep.StackWalks, len(c.Stacks))
	if through+elsewhere+noStack != bl.Count {
		t.Errorf("folded CPU_BACKLOG drops %d+%d+%d, report %d", through, elsewhere, noStack, bl.Count)
	}
	if through == 0 || elsewhere != 0 {
		t.Errorf("CPU_BACKLOG drops with a stack: %d through enqueue_to_backlog, %d not", through, elsewhere)
	}
	if noStack > rep.StackWalksFailed*DefaultStackEvery {
		t.Errorf("%d CPU_BACKLOG drops without a stack, more than the %d failed walks can leave (%d each)", noStack, rep.StackWalksFailed, DefaultStackEvery)
	}
	if rep.StackWalksFailed*20 > rep.StackWalks {
		t.Errorf("%d of %d stack walks failed: more than 5%%", rep.StackWalksFailed, rep.StackWalks)
	}
	// Stack walks are sampled: about one per DefaultStackEvery drops of a
	// kind, even with other frees interleaved on the same CPU. Allow for
	// the kinds that are walked at once (rare drops, each CPU's first).
	var wanted uint64
	for _, r := range c.Records {
		if c.Kernel.Name(r.Reason) != "NOT_SPECIFIED" {
			wanted += r.Count
		}
	}
	t.Logf("%d stack walks for %d drops (stack_every %d)", c.StackWalks, wanted, c.StackEvery)
	if c.StackEvery != DefaultStackEvery || c.StackWalks == 0 || c.StackWalks > wanted/DefaultStackEvery*2+100 {
		t.Errorf("%d stack walks for %d drops with stack_every %d: not sampled", c.StackWalks, wanted, c.StackEvery)
	}
}

// reasonCounter is a minimal second program on skb:kfree_skb that counts
// the frees of one reason in a per-CPU array: what the kernel delivered to
// BPF programs, to tell slowpath's accounting from the kernel's delivery.
type reasonCounter struct {
	counts *ebpf.Map
	prog   *ebpf.Program
	link   link.Link
}

func startReasonCounter(t *testing.T, reason string) *reasonCounter {
	t.Helper()
	k, err := dropcounter.ProbeKernel()
	if err != nil {
		t.Fatal(err)
	}
	value, ok := uint32(0), false
	for v, name := range k.Reasons {
		if name == reason {
			value, ok = v, true
		}
	}
	if !ok {
		t.Fatalf("kernel has no drop reason %s", reason)
	}
	r := &reasonCounter{}
	t.Cleanup(func() { r.close() })
	if r.counts, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1}); err != nil {
		t.Fatal(err)
	}
	r.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp, AttachTo: "kfree_skb", License: "GPL",
		Instructions: asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 16, asm.DWord), // ctx[2]: the reason
			asm.JNE.Imm(asm.R2, int32(value), "exit"),
			asm.StoreImm(asm.RFP, -4, 0, asm.Word),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.LoadMapPtr(asm.R1, r.counts.FD()),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "exit"),
			asm.Mov.Imm(asm.R1, 1),
			asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
			asm.Return(),
		},
	})
	if err != nil {
		t.Fatalf("load reference counter: %v", err)
	}
	if r.link, err = link.AttachTracing(link.TracingOptions{Program: r.prog}); err != nil {
		t.Fatalf("attach reference counter: %v", err)
	}
	return r
}

// stop detaches the counter and returns its count and the kernel's
// recursion misses for it.
func (r *reasonCounter) stop(t *testing.T) (count, misses uint64) {
	t.Helper()
	if err := r.link.Close(); err != nil {
		t.Fatal(err)
	}
	var per []uint64
	if err := r.counts.Lookup(uint32(0), &per); err != nil {
		t.Fatal(err)
	}
	for _, n := range per {
		count += n
	}
	st, err := r.prog.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return count, st.RecursionMisses
}

func (r *reasonCounter) close() {
	if r.link != nil {
		r.link.Close()
	}
	if r.prog != nil {
		r.prog.Close()
	}
	if r.counts != nil {
		r.counts.Close()
	}
}

// TestReplay reports from the capture the real flood test recorded: the
// command's whole output path, without privileges.
func TestReplay(t *testing.T) {
	dir := t.TempDir()
	folded, svg := filepath.Join(dir, "f"), filepath.Join(dir, "s.svg")
	out, err := runCmd(context.Background(), t, "--replay", "../../../dropreport/testdata/flood.capture.json", "--folded", folded, "--svg", svg)
	if err != nil {
		t.Fatal(err)
	}
	// Not a terminal: tab-separated rows.
	want, err := os.ReadFile("../../../dropreport/testdata/flood.report.tsv")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), out); diff != "" {
		t.Errorf("replayed text report (-want +got)\n%s", diff)
	}
	wantFolded, _ := os.ReadFile("../../../dropreport/testdata/flood.folded")
	gotFolded, _ := os.ReadFile(folded)
	if diff := cmp.Diff(string(wantFolded), string(gotFolded)); diff != "" {
		t.Errorf("folded (-want +got)\n%s", diff)
	}
	b, err := os.ReadFile(svg)
	if err != nil || !bytes.Contains(b, []byte(">enqueue_to_backlog<")) && !bytes.Contains(b, []byte("<title>enqueue_to_backlog ")) {
		t.Errorf("flame graph lacks enqueue_to_backlog (%v)", err)
	}
	// --format markdown prints dropsreport's Markdown of the same report.
	md, err := runCmd(context.Background(), t, "--replay", "../../../dropreport/testdata/flood.capture.json", "--format", "markdown")
	if err != nil {
		t.Fatal(err)
	}
	wantMD, err := os.ReadFile("../../../dropreport/testdata/flood.report.md")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(wantMD), md); diff != "" {
		t.Errorf("replayed Markdown report (-want +got)\n%s", diff)
	}
	if _, err := runCmd(context.Background(), t, "--replay", filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "read capture") {
		t.Errorf("missing capture: err = %v", err)
	}
}

// TestReplaySVGForbiddenChars: a capture whose symbol name holds characters
// XML forbids still gives an SVG that parses, and the command says how many
// names the picture shows with U+FFFD.
func TestReplaySVGForbiddenChars(t *testing.T) {
	b, err := os.ReadFile("../../../dropreport/testdata/flood.capture.json")
	if err != nil {
		t.Fatal(err)
	}
	var c dropreport.Capture
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	renamed := false
	for i := range c.Symbols {
		if c.Symbols[i].Name == "enqueue_to_backlog" {
			c.Symbols[i].Name = "enqueue\x01to_backlog\uFFFE"
			renamed = true
		}
	}
	if !renamed {
		t.Fatal("the capture has no enqueue_to_backlog symbol")
	}
	dir := t.TempDir()
	capPath, svg := filepath.Join(dir, "c.json"), filepath.Join(dir, "s.svg")
	b, err = json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(capPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	env, _, errb := testEnv()
	cmd := NewCmdDrops(env, nil)
	cmd.SetArgs([]string{"--replay", capPath, "--svg", svg})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := "1 frame name(s) in " + svg + " held characters XML cannot carry"; !strings.Contains(errb.String(), want) {
		t.Errorf("stderr %q does not contain %q", errb.String(), want)
	}
	got, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(got))
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
	}
	if !bytes.Contains(got, []byte("<title>enqueue\uFFFDto_backlog\uFFFD ")) {
		t.Error("the renamed frame is not in the SVG with U+FFFD in place of the forbidden characters")
	}
}
