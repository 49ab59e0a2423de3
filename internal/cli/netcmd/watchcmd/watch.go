// Package watchcmd implements `slowpath net watch`: per-second rates of every
// drop, miss and squeeze counter, grouped by the layer of the data path it
// belongs to, with the top offender highlighted.
package watchcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/collect/network"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/model/netmodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Options are the flags of `slowpath net watch`.
type Options struct {
	Interval time.Duration
	Duration time.Duration
	Format   string
	// Netns runs the watch inside the named network namespace (ip netns):
	// socket counters (/proc/net/snmp) and interfaces are per namespace;
	// softnet counters are global.
	Netns string
	// Args are the command-line arguments, kept to re-run inside Netns.
	Args []string
}

// netnsDir is where ip netns keeps its named namespaces.
const netnsDir = "/run/netns"

// envInNetns marks a process already re-run inside --netns.
const envInNetns = "SLOWPATH_WATCH_IN_NETNS"

// NewCmdWatch builds the command; runF replaces the action in tests.
func NewCmdWatch(env *clienv.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{}
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Live per-second rates of every drop, miss and squeeze counter, by layer",
		Long: `Watch samples the drop counters of the data path every --interval and prints
their per-second rates grouped by layer: ring (NIC out of RX descriptors),
driver, backlog (per-CPU input queue full), budget (softirq time_squeeze),
socket (receive/send buffers full) and qdisc. It reads counters only.

On a terminal it redraws a table with the top offender highlighted; piped, it
prints one JSON object per interval (see docs/json.md). --format json or
--format text chooses either explicitly (text when piped: plain lines).
It prints nothing at the end, so it has no Markdown: for a ticket,
'slowpath net --net-interval 30s --format markdown' prints each layer's
drop rate over one window and the top offender, and
'slowpath net drops --format markdown' the drops by kernel reason.`,
		Args: cobra.NoArgs,
		RunE: clienv.Action(o, func([]string) error { o.Args = os.Args[1:]; return nil }, runF,
			func(ctx context.Context) error { return run(ctx, env, o) }),
	}
	f := cmd.Flags()
	f.DurationVar(&o.Interval, "interval", time.Second, "time between samples")
	f.DurationVar(&o.Duration, "duration", 0, "stop after this long (0: until interrupted)")
	formats.AddFlag(f, &o.Format)
	f.StringVar(&o.Netns, "netns", "", "watch inside the network namespace `NAME` (as ip netns exec NAME would)")
	return cmd
}

// formats are net watch's --format values; auto picks text or json.
var formats = clienv.Formats{Names: []string{"text", "json", "auto"}, Default: "auto",
	Notes: map[string]string{"json": "one object per interval", "auto": "a table on a terminal, JSON lines when piped"},
	Also:  []string{""}} // "": auto

func run(ctx context.Context, env *clienv.Env, o *Options) error {
	if o.Interval <= 0 {
		return clienv.Usage(fmt.Errorf("--interval must be positive, got %s", o.Interval))
	}
	if o.Duration < 0 || (o.Duration > 0 && o.Duration < o.Interval) {
		return clienv.Usage(fmt.Errorf("--duration %s: no interval of %s would end in it: give at least --interval, or 0 to watch until interrupted", o.Duration, o.Interval))
	}
	if err := formats.Check(o.Format); err != nil {
		return clienv.Usage(err)
	}
	format := o.Format
	if format == "auto" || format == "" {
		// Piped output is read by programs (issue 4: JSON lines when piped).
		format = "json"
		if env.StdoutTTY {
			format = "text"
		}
	}
	if o.Netns != "" && os.Getenv(envInNetns) != o.Netns {
		return reexecInNetns(o)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := clienv.Interruptible(ctx)
	defer stop()
	if o.Duration > 0 {
		// Half an interval past the last tick due: the interval that ends
		// at --duration is printed, not lost to the deadline it meets.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Duration/o.Interval*o.Interval+o.Interval/2)
		defer cancel()
	}
	// ethtool and netlink counters only when the roots are this host's.
	s := network.NewSampler(env.FS.WithLiveSources(hostfs.LiveAuto), network.Options{})
	defer s.Close()
	out := newPrinter(env, format)
	return Loop(ctx, s, o.Interval, out.print)
}

// Loop samples every interval until ctx ends and hands each interval's
// rates to emit. The first sample only sets the baseline.
func Loop(ctx context.Context, s *network.Sampler, interval time.Duration, emit func(Interval) error) error {
	prev, errs := s.Sample()
	if len(errs) > 0 && len(prev.Softnet) == 0 && len(prev.Interfaces) == 0 {
		return fmt.Errorf("nothing to watch: %s %s: %v", errs[0].Collector, errs[0].Path, errs[0].Err)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		// select picks at random when the tick and the cancel are both
		// ready; a cancelled watch must not print one more interval.
		if ctx.Err() != nil {
			return nil
		}
		cur, _ := s.Sample()
		iv, err := NewInterval(prev, cur)
		if err != nil {
			return err
		}
		prev = cur
		if err := emit(iv); err != nil {
			return err
		}
	}
}

// Rate is one rising counter in one interval. Field names are the JSON
// contract (docs/json.md).
type Rate struct {
	Layer     netmodel.Layer `json:"layer"`
	Counter   string         `json:"counter"`
	Subject   string         `json:"subject"`
	PerSecond float64        `json:"per_second"`
	// Aggregate counters repeat drops other layers count (rx_dropped).
	Aggregate bool `json:"aggregate,omitempty"`
}

// LayerRate is a layer's summed rate, aggregate counters left out.
type LayerRate struct {
	Layer     netmodel.Layer `json:"layer"`
	PerSecond float64        `json:"per_second"`
}

// Interval is what one interval printed as JSON.
type Interval struct {
	IntervalSeconds float64     `json:"interval_seconds"`
	Rates           []Rate      `json:"rates"`
	Layers          []LayerRate `json:"layers"`
	// Top is the non-aggregate counter with the highest rate; nil when
	// nothing rose.
	Top *Rate `json:"top"`
}

// NewInterval computes the rates between two samples. Counters that did
// not rise are left out of Rates.
func NewInterval(prev, cur snapshot.NetSample) (Interval, error) {
	cs, err := netmodel.Rates(prev, cur)
	if err != nil {
		return Interval{}, err
	}
	iv := Interval{IntervalSeconds: float64(cur.MonotonicNS-prev.MonotonicNS) / 1e9, Rates: []Rate{}}
	for _, c := range cs {
		if !c.Rising() {
			continue
		}
		iv.Rates = append(iv.Rates, Rate{Layer: c.Layer, Counter: c.Counter, Subject: c.Subject, PerSecond: *c.PerSecond, Aggregate: c.Aggregate})
	}
	for _, l := range netmodel.Summarize(cs) {
		lr := LayerRate{Layer: l.Layer}
		if l.PerSecond != nil {
			lr.PerSecond = *l.PerSecond
		}
		iv.Layers = append(iv.Layers, lr)
	}
	if top, ok := netmodel.Top(cs); ok {
		iv.Top = &Rate{Layer: top.Layer, Counter: top.Counter, Subject: top.Subject, PerSecond: *top.PerSecond}
	}
	return iv, nil
}

type printer struct {
	w      io.Writer
	format string
	tty    bool
	color  bool
	start  time.Time
}

func newPrinter(env *clienv.Env, format string) *printer {
	return &printer{w: env.Stdout, format: format, tty: env.StdoutTTY, color: env.Color(), start: time.Now()}
}

func (p *printer) print(iv Interval) error {
	switch {
	case p.format == "json":
		return clienv.EncodeJSON(p.w, 1, iv, false)
	case p.tty:
		return p.table(iv)
	default:
		return p.lines(iv)
	}
}

// lines prints one line per rising counter, prefixed by the seconds since
// start, for logs and pipes.
func (p *printer) lines(iv Interval) error {
	el := time.Since(p.start).Seconds()
	if len(iv.Rates) == 0 {
		_, err := fmt.Fprintf(p.w, "%.0fs\tno drops\n", el)
		return err
	}
	for _, r := range iv.Rates {
		mark := ""
		if iv.Top != nil && r.Layer == iv.Top.Layer && r.Counter == iv.Top.Counter && r.Subject == iv.Top.Subject {
			mark = "\ttop"
		}
		if _, err := fmt.Fprintf(p.w, "%.0fs\t%s\t%s\t%s\t%.1f/s%s\n", el, r.Layer, r.Subject, r.Counter, r.PerSecond, mark); err != nil {
			return err
		}
	}
	return nil
}

// table redraws the screen: per-layer totals, then every rising counter.
func (p *printer) table(iv Interval) error {
	var b strings.Builder
	b.WriteString("\x1b[H\x1b[2J")
	fmt.Fprintf(&b, "slowpath net watch — drops per second over %.1fs (Ctrl-C to stop)\n\n", iv.IntervalSeconds)
	for _, l := range iv.Layers {
		fmt.Fprintf(&b, "  %-8s %12.1f/s\n", l.Layer, l.PerSecond)
	}
	b.WriteString("\n  LAYER    SUBJECT      COUNTER                          PER SECOND\n")
	if len(iv.Rates) == 0 {
		b.WriteString("  (no counter rose)\n")
	}
	for _, r := range iv.Rates {
		line := fmt.Sprintf("  %-8s %-12s %-32s %10.1f", r.Layer, r.Subject, r.Counter, r.PerSecond)
		if r.Aggregate {
			line += "  (aggregate)"
		}
		if iv.Top != nil && r.Layer == iv.Top.Layer && r.Counter == iv.Top.Counter && r.Subject == iv.Top.Subject {
			line += "  <- top"
			if p.color {
				line = "\x1b[31;1m" + line + "\x1b[0m"
			}
		}
		b.WriteString(line + "\n")
	}
	_, err := io.WriteString(p.w, b.String())
	return err
}

// reexecInNetns runs this same command inside the named namespace through
// `ip netns exec`, which also remounts /sys so that /sys/class/net shows
// the namespace's interfaces.
func reexecInNetns(o *Options) error {
	// ip netns exec finds NAME under /run/netns; asked first, so a wrong
	// name is slowpath's usage error, not ip's message and exit 255.
	if o.Netns == "." || o.Netns == ".." || strings.ContainsAny(o.Netns, "/\x00") {
		return clienv.Usage(fmt.Errorf("--netns %q: not a namespace name", o.Netns))
	}
	if _, err := os.Stat(filepath.Join(netnsDir, o.Netns)); err != nil {
		return clienv.Usage(fmt.Errorf("--netns %s: no such network namespace in %s (ip netns list shows those there are)", o.Netns, netnsDir))
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		return clienv.Usage(errors.New("--netns needs ip: apt-get install iproute2"))
	}
	self, err := os.Executable()
	if err != nil {
		return clienv.Usage(fmt.Errorf("--netns: find own executable: %w", err))
	}
	argv := append([]string{"ip", "netns", "exec", o.Netns, self}, o.Args...)
	env := append(os.Environ(), envInNetns+"="+o.Netns)
	if err := syscall.Exec(ip, argv, env); err != nil {
		return clienv.Usage(fmt.Errorf("--netns %s: exec ip netns exec: %w (needs root or CAP_SYS_ADMIN)", o.Netns, err))
	}
	return nil
}
