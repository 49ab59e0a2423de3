// Package dropscmd implements `slowpath net drops`: count dropped packets in
// the kernel by drop reason, location, interface and (optionally) kernel
// stack with eBPF, then print the reasons mapped to data-path layers and
// slowpath checks, and write folded stacks and a flame graph.
package dropscmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/bpf/dropcounter"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/dropreport"
	"github.com/slowpath/slowpath/internal/report/dropsreport"
	"github.com/slowpath/slowpath/internal/stdfile"
)

// Options are the flags of `slowpath net drops`.
type Options struct {
	Duration time.Duration
	Stacks   bool
	// StackEvery samples stack walks: see bpfdrops.Options.StackEvery.
	StackEvery uint32
	Interface  string
	Folded     string
	SVG        string
	Format     string
	All        bool
	Top        int
	ReadyFile  string
	Record     string
	Replay     string
}

// NewCmdDrops builds the command; runF replaces the action in tests.
func NewCmdDrops(env *clienv.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{}
	cmd := &cobra.Command{
		Use:   "drops",
		Short: "Attribute dropped packets to kernel reasons and code paths (eBPF)",
		Long: `Drops counts every packet the kernel drops (tracepoint skb:kfree_skb) in
eBPF maps, keyed by drop reason, kernel function, interface and, with --stacks,
kernel stack. Nothing is copied to user space per packet, so it is cheap enough
to leave running. At the end it prints the reasons with counts and rates, the
data-path layer and slowpath check each relates to, and the kernel functions
that dropped.

Frees without a reason (NOT_SPECIFIED) are counted but not listed: most are
not drops. --all lists them. On a kernel whose skb:kfree_skb has no reason
argument (read from its BTF; upstream before 5.17) drops are attributed by
location, and say so: the function that freed each packet (with --stacks, the
caller of a free helper such as kfree_skb_list), known drop sites mapped to
layers (enqueue_to_backlog is the CPU backlog).

Needs root, or CAP_BPF and CAP_PERFMON, and kernel BTF (/sys/kernel/btf/vmlinux).
See docs/drops.md.`,
		Example: `  slowpath net drops --duration 10s
  slowpath net drops --stacks --svg drops.svg --folded drops.folded
  slowpath net drops --interface eth0 --format json`,
		Args: cobra.NoArgs,
		RunE: clienv.Action(o, func([]string) error {
			if o.Folded != "" || o.SVG != "" {
				o.Stacks = true // both need stacks
			}
			return o.validate()
		}, runF, func(ctx context.Context) error { return run(ctx, env, o) }),
	}
	f := cmd.Flags()
	f.DurationVar(&o.Duration, "duration", 30*time.Second, "how long to count; 0 counts until Ctrl-C (Ctrl-C also ends a timed run early)")
	f.BoolVar(&o.Stacks, "stacks", false, "record kernel stacks of drops (implied by --folded and --svg)")
	f.Uint32Var(&o.StackEvery, "stack-every", DefaultStackEvery, "with stacks, walk the stack of one drop in `N` like it (same reason, function, interface; the others count under it); 1 walks every drop, at microseconds each")
	f.StringVar(&o.Interface, "interface", "", "count only drops on interface `IF` (filtered in the kernel)")
	f.StringVar(&o.Folded, "folded", "", "write folded stacks to `FILE` (flamegraph.pl, speedscope and inferno read them); - for stdout, the report then goes to stderr")
	f.StringVar(&o.SVG, "svg", "", "write a flame graph of drop stacks to `FILE`; - for stdout, the report then goes to stderr")
	formats.AddFlag(f, &o.Format)
	f.BoolVar(&o.All, "all", false, "also list NOT_SPECIFIED frees (and record their stacks)")
	f.IntVar(&o.Top, "top", 3, "kernel functions to show per reason in text and Markdown output")
	f.StringVar(&o.ReadyFile, "ready-file", "", "create `FILE` once the tracer is attached (for scripts)")
	f.StringVar(&o.Record, "record", "", "also write the raw in-kernel counters, with the symbols they need, to `FILE` (JSON); - for stdout, the report then goes to stderr")
	f.StringVar(&o.Replay, "replay", "", "report from the capture `FILE` written by --record instead of tracing this host")
	return cmd
}

// DefaultStackEvery keeps --stacks cheap in a flood: a stack walk costs
// 3–4 µs here against ~15 ns for the rest of the program, so walking one
// drop in 64 adds ~50–100 ns per drop, while a drop unlike the last one
// walked, and so every rare drop, still has its stack walked.
const DefaultStackEvery = 64

// formats are net drops' --format values.
var formats = clienv.Formats{Names: []string{"text", "json", "markdown"}, Default: "text",
	Notes: map[string]string{"markdown": "the report as a Markdown table, for a ticket"}}

func (o *Options) validate() error {
	if err := formats.Check(o.Format); err != nil {
		return err
	}
	if o.Duration < 0 {
		return fmt.Errorf("--duration %v is negative", o.Duration)
	}
	if o.StackEvery < 1 {
		return errors.New("--stack-every 0: want at least 1 (1 walks every drop's stack)")
	}
	if o.Top < 1 {
		return fmt.Errorf("--top %d: want at least 1", o.Top)
	}
	if o.Replay != "" && (o.Interface != "" || o.Record != "" || o.ReadyFile != "") {
		return errors.New("--replay reads a recorded capture: --interface, --record and --ready-file do not apply")
	}
	var dashes []string
	for _, f := range []struct{ flag, v string }{{"--folded", o.Folded}, {"--svg", o.SVG}, {"--record", o.Record}} {
		if f.v == stdfile.Dash {
			dashes = append(dashes, f.flag)
		}
	}
	if len(dashes) > 1 {
		return fmt.Errorf("%s all write to - (stdout), where only one can go: give the others a FILE", strings.Join(dashes, " and "))
	}
	return nil
}

// reportTo is where the report goes: stdout, or stderr when one of the
// files is "-" and stdout carries that file.
func (o *Options) reportTo(env *clienv.Env) io.Writer {
	if o.Folded == stdfile.Dash || o.SVG == stdfile.Dash || o.Record == stdfile.Dash {
		return env.Stderr
	}
	return env.Stdout
}

func run(ctx context.Context, env *clienv.Env, o *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	var (
		c       *dropreport.Capture
		syms    *dropreport.Symbols
		ifNames map[uint32]string
		symErr  error
	)
	if o.Replay != "" {
		b, err := stdfile.ReadFile(o.Replay)
		if err != nil {
			return fmt.Errorf("read capture: %w", err)
		}
		if c, err = dropreport.DecodeCapture(b); err != nil {
			return fmt.Errorf("parse capture %s: %w", stdfile.Name(o.Replay), err)
		}
		syms = dropreport.NewSymbols(c.Symbols)
		ifNames = c.IfNames
	} else {
		var err error
		if c, err = trace(ctx, env, o); err != nil {
			return err
		}
		syms, symErr = readKallsyms(env)
		if symErr != nil {
			fmt.Fprintf(env.Stderr, "slowpath: warning: %v; functions are shown as addresses\n", symErr)
		}
		ifNames = interfaceNames()
		if o.Record != "" {
			c.EmbedSymbols(syms)
			c.IfNames = ifNames
			c.Stamp()
			if err := writeJSONFile(o.Record, env.Stdout, c); err != nil {
				return err
			}
		}
	}
	rep := dropreport.Summarize(c, syms, dropreport.SummaryOptions{ShowUnspecified: o.All, IfNames: ifNames, Interface: o.Interface})
	if o.Stacks || o.Replay != "" {
		if err := writeStacks(env, c, syms, o); err != nil {
			return err
		}
	}
	out := o.reportTo(env)
	if o.Format == "json" {
		return clienv.EncodeJSON(out, 1, rep, true)
	}
	if o.Format == "markdown" {
		return dropsreport.WriteMarkdown(out, rep, dropsreport.TextOptions{TopFunctions: o.Top})
	}
	// A table on a terminal; tab-separated rows when piped.
	return dropsreport.WriteText(out, rep, dropsreport.TextOptions{TopFunctions: o.Top, Tabs: out != env.Stdout || !env.StdoutTTY})
}

// trace attaches the tracer, waits for the duration or a signal, and reads
// the counters.
func trace(ctx context.Context, env *clienv.Env, o *Options) (*dropreport.Capture, error) {
	// The handler goes in before anything can tell the world we are
	// ready: a script that sends SIGINT as soon as --ready-file appears
	// must get a report, not a process killed by the signal's default.
	ctx, stop := clienv.Interruptible(ctx)
	defer stop()
	bo := dropcounter.Options{Stacks: o.Stacks, StacksUnspecified: o.All && o.Stacks, StackEvery: o.StackEvery}
	if o.Interface != "" {
		ifi, err := net.InterfaceByName(o.Interface)
		if err != nil {
			return nil, fmt.Errorf("--interface %s: %w (interfaces of this network namespace only)", o.Interface, err)
		}
		bo.Ifindex = uint32(ifi.Index)
	}
	self, err := dropcounter.NetnsOf(env.FS.ProcPath("self", "ns", "net"))
	if err != nil {
		return nil, err
	}
	bo.Netns = self
	tr, err := dropcounter.Start(bo)
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	if o.ReadyFile != "" {
		if err := os.WriteFile(o.ReadyFile, nil, 0o644); err != nil {
			return nil, fmt.Errorf("write ready file: %w", err)
		}
	}
	if env.StdoutTTY {
		msg := "until Ctrl-C"
		if o.Duration > 0 {
			msg = "for " + o.Duration.String() + " (Ctrl-C stops early)"
		}
		fmt.Fprintf(env.Stderr, "Counting packet drops %s...\n", msg)
	}
	var timeout <-chan time.Time
	if o.Duration > 0 {
		t := time.NewTimer(o.Duration)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ctx.Done():
	case <-timeout:
	}
	if err := tr.Stop(); err != nil {
		return nil, fmt.Errorf("detach drop tracer: %w", err)
	}
	c, err := tr.Read()
	if err != nil {
		return nil, err
	}
	c.Netns = self
	return c, nil
}

func readKallsyms(env *clienv.Env) (*dropreport.Symbols, error) {
	p := env.FS.ProcPath("kallsyms")
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	defer f.Close()
	s, err := dropreport.ParseKallsyms(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return s, nil
}

// interfaceNames names the interfaces of our network namespace. Drops in
// other namespaces carry their own ifindex space and may stay unnamed
// (or, rarely, take a host interface's name: docs/drops.md).
func interfaceNames() map[uint32]string {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	m := make(map[uint32]string, len(ifs))
	for _, i := range ifs {
		m[uint32(i.Index)] = i.Name
	}
	return m
}

func writeStacks(env *clienv.Env, c *dropreport.Capture, syms *dropreport.Symbols, o *Options) error {
	if o.Folded == "" && o.SVG == "" {
		return nil
	}
	stacks := dropreport.Fold(c, syms, o.All)
	if o.Folded != "" {
		if err := writeFile(o.Folded, env.Stdout, func(w io.Writer) error { return dropsreport.WriteFolded(w, stacks) }); err != nil {
			return err
		}
	}
	if o.SVG != "" {
		var replaced int
		if err := writeFile(o.SVG, env.Stdout, func(w io.Writer) (err error) {
			replaced, err = dropsreport.WriteSVG(w, stacks, dropsreport.SVGOptions{Interface: o.Interface, StackEvery: c.StackEvery})
			return err
		}); err != nil {
			return err
		}
		if replaced > 0 {
			fmt.Fprintf(env.Stderr, "slowpath: note: %d frame name(s) in %s held characters XML cannot carry; the SVG shows them as U+FFFD (the --folded stacks keep them as read)\n", replaced, o.SVG)
		}
	}
	return nil
}

func writeJSONFile(path string, stdout io.Writer, v any) error {
	return writeFile(path, stdout, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", " ")
		return enc.Encode(v)
	})
}

// writeFile writes through a temporary file in the same directory, so a
// failed run never leaves half a file under the name asked for; "-" writes
// to stdout.
func writeFile(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == stdfile.Dash {
		return write(stdout)
	}
	return stdfile.WriteFile(path, write)
}
