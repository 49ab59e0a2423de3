package watchcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/collect/network"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

func samples() (snapshot.NetSample, snapshot.NetSample) {
	a := snapshot.NetSample{MonotonicNS: 0,
		Softnet:    []snapshot.SoftnetCPU{{CPU: 0, Dropped: 100}, {CPU: 1}},
		SNMP:       map[string]int64{"Udp.RcvbufErrors": 0, "Udp.InErrors": 0},
		Interfaces: []snapshot.NetCounters{{Name: "veth0", Stats: map[string]uint64{"rx_dropped": 100}}}}
	b := snapshot.NetSample{MonotonicNS: 2e9,
		Softnet:    []snapshot.SoftnetCPU{{CPU: 0, Dropped: 700}, {CPU: 1}},
		SNMP:       map[string]int64{"Udp.RcvbufErrors": 200, "Udp.InErrors": 200},
		Interfaces: []snapshot.NetCounters{{Name: "veth0", Stats: map[string]uint64{"rx_dropped": 700}}}}
	return a, b
}

func TestNewInterval(t *testing.T) {
	iv, err := NewInterval(samples())
	if err != nil {
		t.Fatal(err)
	}
	if iv.IntervalSeconds != 2 || len(iv.Rates) != 4 {
		t.Fatalf("interval %v rates %+v", iv.IntervalSeconds, iv.Rates)
	}
	// veth0 rx_dropped repeats the backlog drops (aggregate): the top
	// offender is the backlog, at 300/s.
	if iv.Top == nil || iv.Top.Layer != "backlog" || iv.Top.Subject != "cpu0" || iv.Top.PerSecond != 300 {
		t.Errorf("top = %+v", iv.Top)
	}
	layers := map[string]float64{}
	for _, l := range iv.Layers {
		layers[string(l.Layer)] = l.PerSecond
	}
	if layers["backlog"] != 300 || layers["socket"] != 100 || layers["driver"] != 0 || len(layers) != 6 {
		t.Errorf("layers = %v", layers)
	}
}

func TestPrinters(t *testing.T) {
	iv, _ := NewInterval(samples())
	var js bytes.Buffer
	p := &printer{w: &js, format: "json"}
	if err := p.print(iv); err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	if err := json.Unmarshal(js.Bytes(), &generic); err != nil || strings.Count(js.String(), "\n") != 1 {
		t.Fatalf("json line: %v %q", err, js.String())
	}
	for _, k := range []string{"rates", "layers", "top", "interval_seconds"} {
		if _, ok := generic[k]; !ok {
			t.Errorf("json lacks %q", k)
		}
	}
	rate := generic["rates"].([]any)[0].(map[string]any)
	for _, k := range []string{"layer", "counter", "subject", "per_second"} {
		if _, ok := rate[k]; !ok {
			t.Errorf("rate lacks %q: %v", k, rate)
		}
	}
	var lines bytes.Buffer
	p = &printer{w: &lines, format: "text", start: time.Now()}
	_ = p.print(iv)
	if !strings.Contains(lines.String(), "backlog\tcpu0\tsoftnet_dropped\t300.0/s\ttop") || strings.Contains(lines.String(), "\x1b[") {
		t.Errorf("plain lines:\n%s", lines.String())
	}
	var table bytes.Buffer
	p = &printer{w: &table, format: "text", tty: true, color: true}
	_ = p.print(iv)
	if !strings.Contains(table.String(), "\x1b[31;1m") || !strings.Contains(table.String(), "<- top") {
		t.Errorf("tty table lacks the highlighted top offender:\n%q", table.String())
	}
}

func TestFlags(t *testing.T) {
	var got *Options
	cmd := NewCmdWatch(&clienv.Env{}, func(_ context.Context, o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"--interval", "250ms", "--duration", "3s", "--format", "json", "--netns", "x"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Interval != 250*time.Millisecond || got.Duration != 3*time.Second || got.Format != "json" || got.Netns != "x" {
		t.Errorf("options: %+v", got)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	env := &clienv.Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
	for _, o := range []Options{{Interval: 0, Format: "text"}, {Interval: time.Second, Format: "xml"}} {
		err := run(context.Background(), env, &o)
		if ee := (*clienv.ExitError)(nil); !errors.As(err, &ee) || ee.Code != clienv.ExitUsage {
			t.Errorf("%+v: err = %v, want usage error", o, err)
		}
	}
}

type noEthtool struct{}

func (noEthtool) DriverInfo(string) (network.DriverInfo, error) {
	return network.DriverInfo{}, syscall.EOPNOTSUPP
}
func (noEthtool) Ring(string) (snapshot.Ring, error) { return snapshot.Ring{}, syscall.EOPNOTSUPP }
func (noEthtool) Channels(string) (snapshot.Channels, error) {
	return snapshot.Channels{}, syscall.EOPNOTSUPP
}
func (noEthtool) Stats(string) (map[string]uint64, error)                { return nil, syscall.EOPNOTSUPP }
func (noEthtool) LinkKinds() (map[string]string, error)                  { return nil, nil }
func (noEthtool) RootQdiscs() (map[string]snapshot.QdiscCounters, error) { return nil, nil }
func (noEthtool) LinkStats() (map[string]map[string]uint64, error)       { return nil, nil }

// TestLoopOnFixtureTree runs the watch loop on a fixture tree whose
// softnet_stat grows between samples.
func TestLoopOnFixtureTree(t *testing.T) {
	dir := t.TempDir()
	sn := filepath.Join(dir, "proc/net/softnet_stat")
	if err := os.MkdirAll(filepath.Dir(sn), 0o755); err != nil {
		t.Fatal(err)
	}
	line := func(dropped int) string {
		return fmt.Sprintf("00000010 %08x 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n", dropped)
	}
	if err := os.WriteFile(sn, []byte(line(1)), 0o644); err != nil {
		t.Fatal(err)
	}
	var n int64
	s := network.NewSampler(hostfs.New(dir), network.Options{Ethtool: noEthtool{}, Netlink: noEthtool{},
		Monotonic: func() int64 { n += 1e9; return n }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []Interval
	err := Loop(ctx, s, time.Millisecond, func(iv Interval) error {
		got = append(got, iv)
		if len(got) == 2 {
			cancel()
			return nil
		}
		return os.WriteFile(sn, []byte(line(51)), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Top != nil || got[1].Top == nil || got[1].Top.PerSecond != 50 || got[1].Top.Layer != "backlog" {
		t.Errorf("intervals: %+v", got)
	}
}

// TestAutoFormatPiped: without --format, piped output is JSON lines (one
// object with rates per interval), read from this host's live counters.
func TestAutoFormatPiped(t *testing.T) {
	var out bytes.Buffer
	env := &clienv.Env{Stdout: &out, Stderr: &bytes.Buffer{}, FS: hostfs.Default()}
	o := &Options{Interval: 100 * time.Millisecond, Duration: 450 * time.Millisecond, Format: "auto"}
	if err := run(context.Background(), env, o); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 2 {
		t.Fatalf("want at least 2 intervals in 450ms at 100ms, got %q", out.String())
	}
	for _, l := range lines {
		var iv struct {
			Rates *[]Rate `json:"rates"`
		}
		if err := json.Unmarshal([]byte(l), &iv); err != nil || iv.Rates == nil {
			t.Errorf("piped line is not a JSON interval with rates: %q (%v)", l, err)
		}
	}
}
