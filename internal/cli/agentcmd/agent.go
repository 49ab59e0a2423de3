// Package agentcmd implements `slowpath agent`: a Prometheus exporter of
// findings, storage encryption layers, dm-crypt flags, NIC rings and drop
// counters (internal/agent), served with exporter-toolkit so TLS and basic
// auth come from the same web config file node_exporter reads.
package agentcmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/agent"
	"github.com/slowpath/slowpath/internal/bpf/reasoncounter"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/collect"
	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/collect/storage"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// DefaultListen is loopback: the exporter shows how a host's storage is
// encrypted, which is not for every network it sits on. The DaemonSet
// listens on the pod network explicitly.
const DefaultListen = "127.0.0.1:9877"

// Options are the flags of `slowpath agent`.
type Options struct {
	Listen            string
	WebConfig         string
	From              string
	TopologyInterval  time.Duration
	Drops             bool
	DropsAttach       string
	ReadyFile         string
	Cloud             cloud.Options
	LiveSources       hostfs.LiveSources
	Cipher            bool
	CipherBytesPerSec float64
	// OpenDM answers the device-mapper ioctl for the tree read; nil is the
	// host's own (when live). Not a flag: tests of a fixture tree set it.
	OpenDM func() (storage.DMControl, error)
}

// NewCmdAgent builds the command; runF replaces the action in tests.
func NewCmdAgent(env *clienv.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Serve findings, encryption layers, rings and drop counters as Prometheus metrics",
		Long: `Agent serves /metrics for Prometheus. On each scrape it analyses this host as
doctor does and exports every finding (every known check, at 0 when it does not
fire), storage encryption layers, dm-crypt flags, NIC rings and drop counters
grouped by layer. The storage and network topology is read again every
--topology-interval; counters are read on every scrape.

--web.config.file takes the exporter-toolkit web configuration (TLS, basic auth),
as node_exporter does. --collector.drops adds slowpath_skb_drops_total from the
eBPF drop counter of 'slowpath net drops' (needs CAP_BPF and CAP_PERFMON).

The encryption tax: where dm-crypt or fscrypt encrypts, one core's AES-XTS is
measured at start and at each topology refresh (about 150 ms, only on this
host's own roots; --collector.cipher=false turns it off, and
--collector.cipher.bytes-per-second gives a figure instead), the counters of
the devices on encrypted paths are read on every scrape, and dmcrypt.tax
judges the interval between two scrapes.
Metrics and their labels: docs/agent.md.`,
		Example: `  slowpath agent
  slowpath agent --web.listen-address :9877 --web.config.file web.yml
  slowpath agent --from node-a.tar.gz --web.listen-address 127.0.0.1:0 --ready-file addr`,
		Args: cobra.NoArgs,
		RunE: clienv.Action(o, func([]string) error { return o.validate() }, runF,
			func(ctx context.Context) error { return Run(ctx, env, o) }),
	}
	f := cmd.Flags()
	f.StringVar(&o.Listen, "web.listen-address", DefaultListen, "`ADDRESS` to serve /metrics on")
	f.StringVar(&o.WebConfig, "web.config.file", "", "exporter-toolkit web configuration `FILE` (TLS, basic auth)")
	f.StringVar(&o.From, "from", "", "serve the metrics of a saved snapshot `FILE` instead of this host")
	f.DurationVar(&o.TopologyInterval, "topology-interval", 5*time.Minute, "how often to read the storage and network topology again (counters are read on every scrape)")
	f.BoolVar(&o.Drops, "collector.drops", false, "export slowpath_skb_drops_total{reason,layer} from an eBPF counter on skb:kfree_skb")
	f.StringVar(&o.DropsAttach, "collector.drops.attach", string(reasoncounter.TPBTF), "how the drop counter attaches: tp_btf (skb:kfree_skb) or fentry (the kernel's drop function); docs/drops.md compares them")
	f.StringVar(&o.ReadyFile, "ready-file", "", "write the address served on to `FILE` once listening (for scripts; useful with port 0)")
	f.Var(&o.LiveSources, "live-sources", hostfs.FlagUsage)
	f.BoolVar(&o.Cipher, "collector.cipher", true, "measure one core's AES-XTS at start and at each topology refresh (about 150 ms, only where dm-crypt or fscrypt encrypts and the roots are this host's) for dmcrypt.tax and slowpath_cipher_bytes_per_second")
	f.Float64Var(&o.CipherBytesPerSec, "collector.cipher.bytes-per-second", 0, "use this one-core AES-XTS figure (`BYTES/S`, from slowpath lab crypto-limit on a node of the same type) instead of measuring")
	o.Cloud.AddFlags(f)
	return cmd
}

// Run serves until ctx ends: what the command does, for tests that set
// Options fields no flag reaches (OpenDM).
func Run(ctx context.Context, env *clienv.Env, o *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.WebConfig != "" {
		// Fail at start, not on the first scrape.
		if err := web.Validate(o.WebConfig); err != nil {
			return fmt.Errorf("web config %s: %w", o.WebConfig, err)
		}
	}
	var src agent.Source
	if o.From != "" {
		start := time.Now()
		s, err := snapshot.Load(o.From)
		if err != nil {
			return err
		}
		src = &agent.Fixed{S: s, LoadTime: time.Since(start)}
	} else {
		// A DaemonSet reads the host's /proc and /sys under other paths:
		// live-only sources run only where the roots are this host's or
		// --live-sources on says the tree is (as doctor and collect).
		live := &agent.Live{FS: env.FS.WithLiveSources(o.LiveSources), LiveSources: o.LiveSources, Version: env.Version,
			Cloud: o.Cloud, TopologyInterval: o.TopologyInterval, OpenDM: o.OpenDM,
			Cipher: collect.Cipher{Off: !o.Cipher, BytesPerSec: o.CipherBytesPerSec, What: "given with --collector.cipher.bytes-per-second"}}
		defer live.Close()
		src = live
	}
	exp := &agent.Exporter{Source: src}
	if o.Drops {
		t, err := reasoncounter.Start(reasoncounter.Attach(o.DropsAttach))
		if err != nil {
			return fmt.Errorf("--collector.drops: %w", err)
		}
		defer t.Close()
		exp.Drops = t
	}
	// The Go and process collectors go through client_golang; the
	// exporter's own series are written straight as text (agent.Handler).
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	mux := http.NewServeMux()
	// No compression: a scrape is tens of kB; gzip's pooled writers kept
	// 3-4 MB more resident (peak 30-32 MB against 26.5-27 MB without,
	// measured with BenchmarkAgentVsNodeExporter) to save a few kB per
	// scrape.
	mux.Handle("/metrics", exp.Handler(reg, agent.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(slog.NewTextHandler(env.Stderr, nil), slog.LevelError),
		MaxRequestsInFlight: 2,
		Timeout:             30 * time.Second,
	}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "slowpath agent: metrics at /metrics")
	})
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.Listen, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if o.ReadyFile != "" {
		if err := os.WriteFile(o.ReadyFile, []byte(ln.Addr().String()+"\n"), 0o644); err != nil {
			ln.Close()
			return fmt.Errorf("write ready file: %w", err)
		}
	}
	// As node_exporter does at start: what runs, from what, and (from
	// exporter-toolkit, at info) the address and whether TLS is on.
	logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	source := "live host"
	if o.From != "" {
		source = "snapshot " + o.From
	}
	logger.Info("Starting slowpath agent", "version", env.Version, "source", source, "address", ln.Addr().String(),
		"web_config", o.WebConfig != "")
	errc := make(chan error, 1)
	go func() {
		errc <- web.Serve(ln, srv, &web.FlagConfig{WebConfigFile: &o.WebConfig}, logger)
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := srv.Shutdown(sctx)
		if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			return serr
		}
		return err
	}
}

// validate checks the flags before anything runs.
func (o *Options) validate() error {
	if err := o.Cloud.Validate(); err != nil {
		return err
	}
	if o.DropsAttach != string(reasoncounter.TPBTF) && o.DropsAttach != string(reasoncounter.Fentry) {
		return fmt.Errorf("--collector.drops.attach %q: want tp_btf or fentry", o.DropsAttach)
	}
	if o.CipherBytesPerSec < 0 || math.IsNaN(o.CipherBytesPerSec) || math.IsInf(o.CipherBytesPerSec, 0) {
		return fmt.Errorf("--collector.cipher.bytes-per-second %v: want a positive figure from slowpath lab crypto-limit, or 0 to measure", o.CipherBytesPerSec)
	}
	if o.TopologyInterval <= 0 {
		return fmt.Errorf("--topology-interval %v: want a positive duration", o.TopologyInterval)
	}
	return nil
}
