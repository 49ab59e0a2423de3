package agent

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/dropreport"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/golden"
)

const hostsDir = "../../testdata/hosts"

func load(t *testing.T, name string) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.Load(filepath.Join(hostsDir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// durations are the only values that change between runs.
var durationLine = regexp.MustCompile(`(?m)^(slowpath_scrape_collector_duration_seconds\{[^}]*\}) \S+$`)

// Scrape gathers e into the text exposition format with durations
// replaced by 0, so it can be compared with a golden file.
func Scrape(t testing.TB, e prometheus.Collector) []byte {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return durationLine.ReplaceAll(buf.Bytes(), []byte("$1 0"))
}

// TestScrapeGolden renders the fixture hosts of the fleet test, and the
// network fixtures, as metrics and compares them with golden files.
func TestScrapeGolden(t *testing.T) {
	for _, name := range []string{"azure-e16dv5-eah", "aws-i4i-luks-default", "aws-i4i-luks-unprivileged", "plain-host", "net-aws-ena", "baremetal-crypt-on-crypt-loop",
		"aws-i4i-mariadb-luks"} {
		t.Run(name, func(t *testing.T) {
			got := Scrape(t, &Exporter{Source: &Fixed{S: load(t, name)}})
			golden.Compare(t, filepath.Join("testdata", name+".prom"), got)
		})
	}
}

// TestEveryCheckExported: absence never reads as healthy. On a host where
// nothing fires, every registered check still has a series, at 0.
func TestEveryCheckExported(t *testing.T) {
	got := string(Scrape(t, &Exporter{Source: &Fixed{S: load(t, "plain-host")}}))
	checks := check.All()
	if len(checks) < 10 {
		t.Fatalf("only %d checks registered", len(checks))
	}
	for _, c := range checks {
		want := `slowpath_finding{id="` + c.ID + `",severity="` + c.Severity.String() + `",subject=""} 0`
		if !strings.Contains(got, want) {
			t.Errorf("missing %s", want)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if strings.HasPrefix(l, "slowpath_finding{") && strings.HasSuffix(l, " 1") {
			t.Errorf("plain host fires: %s", l)
		}
	}
}

// TestStackedEncryptionFiresAndStaysSilent: the incident host fires on
// the temp disk, the same host without encryption at host does not.
func TestStackedEncryptionFiresAndStaysSilent(t *testing.T) {
	fire := `slowpath_finding{id="storage.stacked-encryption",severity="warning",subject="/mnt/data"} 1`
	silent := `slowpath_finding{id="storage.stacked-encryption",severity="warning",subject=""} 0`
	eah := string(Scrape(t, &Exporter{Source: &Fixed{S: load(t, "azure-e16dv5-eah")}}))
	noeah := string(Scrape(t, &Exporter{Source: &Fixed{S: load(t, "azure-e16dv5-noeah")}}))
	if !strings.Contains(eah, fire) || strings.Contains(eah, silent) {
		t.Errorf("eah: want %s only", fire)
	}
	if !strings.Contains(noeah, silent) || strings.Contains(noeah, fire) {
		t.Errorf("noeah: want %s only", silent)
	}
	if !strings.Contains(eah, `slowpath_storage_encryption_layers{device="sdb1",mountpoint="/mnt/data"} 2`) {
		t.Errorf("eah: /mnt/data should count 2 layers:\n%s", eah)
	}
}

// TestLint runs client_golang's metric linter (the rules promtool check
// metrics applies) on every fixture's metrics.
func TestLint(t *testing.T) {
	for _, name := range []string{"azure-e16dv5-eah", "aws-i4i-luks-default", "net-aws-ena", "baremetal-crypt-on-crypt-loop"} {
		probs, err := testutil.CollectAndLint(&Exporter{Source: &Fixed{S: load(t, name)}})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range probs {
			t.Errorf("%s: %s: %s", name, p.Metric, p.Text)
		}
	}
}

// TestCardinality bounds the series of the busiest fixture: labels are
// per check, mount, dm mapping, interface, CPU and counter, never per
// packet or process.
func TestCardinality(t *testing.T) {
	for _, name := range []string{"net-azure-accelnet", "baremetal-crypt-on-crypt-loop"} {
		n, err := testutil.GatherAndCount(registry(t, &Exporter{Source: &Fixed{S: load(t, name)}}))
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 || n > 500 {
			t.Errorf("%s: %d series", name, n)
		}
	}
}

func registry(t *testing.T, c prometheus.Collector) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	return reg
}

// fakeDrops returns captures in turn.
type fakeDrops struct{ caps []*dropreport.Capture }

func (f *fakeDrops) Read() (*dropreport.Capture, error) {
	c := f.caps[0]
	if len(f.caps) > 1 {
		f.caps = f.caps[1:]
	}
	return c, nil
}

// TestDropsExportedAsRead: the counter is exported as read. A read below
// the one before (the map created anew, or a first read that counted too
// much) is a reset for Prometheus to handle, and the drops after it show
// at once: the old clamp to the largest value seen exported 100 three
// times. A reason with no drops since the reset has no series;
// NOT_SPECIFIED is left out.
func TestDropsExportedAsRead(t *testing.T) {
	k := dropreport.Kernel{HasReasons: true, Reasons: map[uint32]string{2: "NOT_SPECIFIED", 63: "CPU_BACKLOG", 6: "SOCKET_RCVBUFF"}}
	c := func(backlog, rcvbuf uint64) *dropreport.Capture {
		rs := []dropreport.Record{{Reason: 2, Count: 1000}, {Reason: 63, Count: backlog, Location: 1}, {Reason: 63, Count: 5, Location: 2}}
		if rcvbuf > 0 {
			rs = append(rs, dropreport.Record{Reason: 6, Count: rcvbuf})
		}
		return &dropreport.Capture{Kernel: k, Records: rs}
	}
	d := &fakeDrops{caps: []*dropreport.Capture{c(100, 7), c(35, 0), c(50, 2)}}
	e := &Exporter{Source: &Fixed{S: load(t, "plain-host")}, Drops: d}
	head := `
# HELP slowpath_skb_drops_total ` + helpOf(t, descSkbDrops.prom()) + `
# TYPE slowpath_skb_drops_total counter
`
	for i, want := range []string{
		`slowpath_skb_drops_total{layer="backlog",reason="CPU_BACKLOG"} 105
slowpath_skb_drops_total{layer="socket",reason="SOCKET_RCVBUFF"} 7
`,
		`slowpath_skb_drops_total{layer="backlog",reason="CPU_BACKLOG"} 40
`,
		`slowpath_skb_drops_total{layer="backlog",reason="CPU_BACKLOG"} 55
slowpath_skb_drops_total{layer="socket",reason="SOCKET_RCVBUFF"} 2
`,
	} {
		if err := testutil.CollectAndCompare(e, strings.NewReader(head+want), "slowpath_skb_drops_total"); err != nil {
			t.Errorf("read %d: %v", i+1, err)
		}
	}
}

func helpOf(t *testing.T, d *prometheus.Desc) string {
	t.Helper()
	m := regexp.MustCompile(`help: "((?:[^"\\]|\\.)*)"`).FindStringSubmatch(d.String())
	if m == nil {
		t.Fatalf("no help in %s", d)
	}
	return m[1]
}

// TestLiveSource reads this host twice: the topology is read once and
// cached, counters are read on each scrape, and from the second scrape on
// the snapshot holds two samples so rate checks can decide.
func TestLiveSource(t *testing.T) {
	now := time.Unix(1000, 0)
	l := &Live{FS: hostfs.Default(), TopologyInterval: time.Minute, Now: func() time.Time { return now }}
	defer l.Close()
	s1, runs1 := l.Snapshot(context.Background())
	if s1.Storage == nil || s1.Host == nil {
		t.Fatalf("no topology: %+v", s1.Manifest.Errors)
	}
	names := map[string]bool{}
	for _, r := range runs1 {
		names[r.Name] = true
	}
	for _, n := range []string{"host", "storage", "cloud", "net", "net.counters"} {
		if !names[n] {
			t.Errorf("collector %s not run", n)
		}
	}
	now = now.Add(10 * time.Second)
	s2, _ := l.Snapshot(context.Background())
	if s2.Storage != s1.Storage {
		t.Error("storage read again before the topology interval")
	}
	if s2.Net == nil || len(s2.Net.Samples) != 2 {
		t.Fatalf("second scrape: want 2 samples (previous and current)")
	}
	if s2.Net.Samples[0].MonotonicNS >= s2.Net.Samples[1].MonotonicNS {
		t.Error("samples not in time order")
	}
	now = now.Add(time.Minute)
	s3, _ := l.Snapshot(context.Background())
	if s3.Storage == s1.Storage {
		t.Error("storage not read again after the topology interval")
	}
	if !Emit(make(chan prometheus.Metric, 100000), s3, check.Config{}) {
		t.Error("analysis of the live snapshot failed")
	}
}

// TestFixApplied: what slowpath's fix changed on the node is a series per
// change at the time it was set (0 when not recorded), and none on a node
// where it changed nothing; the metric passes the linter.
func TestFixApplied(t *testing.T) {
	s := load(t, "net-aws-ena")
	if n := testutil.CollectAndCount(&Exporter{Source: &Fixed{S: s}}, "slowpath_fix_applied"); n != 0 {
		t.Errorf("%d slowpath_fix_applied series on a node without fixes", n)
	}
	s.Host.Fixes = []snapshot.AppliedFix{
		{ID: "net.backlog-drops", Subject: "host", Key: "sysctl net.core.netdev_max_backlog", Value: "32768", AppliedAt: time.Unix(1795766400, 0)},
		{ID: "net.ring-undersized", Subject: "eth0", Key: "ring eth0 rx", Value: "8192"},
	}
	e := &Exporter{Source: &Fixed{S: s}}
	want := `# HELP slowpath_fix_applied A runtime setting slowpath fix --apply changed on this node and that still holds: the Unix time it was set (0 when its state file did not record it). Which node runs which change, for canary verdicts.
# TYPE slowpath_fix_applied gauge
slowpath_fix_applied{id="net.backlog-drops",key="sysctl net.core.netdev_max_backlog",subject="host",value="32768"} 1.7957664e+09
slowpath_fix_applied{id="net.ring-undersized",key="ring eth0 rx",subject="eth0",value="8192"} 0
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "slowpath_fix_applied"); err != nil {
		t.Error(err)
	}
	probs, err := testutil.CollectAndLint(e, "slowpath_fix_applied")
	if err != nil || len(probs) != 0 {
		t.Errorf("lint: %v %+v", err, probs)
	}
}

// TestEngineSeriesBounded: an engine's settings are series, cleaned and at
// most maxEngineSeries a path, whatever the snapshot lists.
func TestEngineSeriesBounded(t *testing.T) {
	s := load(t, "aws-i4i-mariadb-luks")
	e := &s.Engines.Processes[0]
	for i := range 100 {
		e.Encryption = append(e.Encryption, snapshot.EngineEncryption{Setting: fmt.Sprintf("x_%d\x1b[2J", i), Value: "ON", Enabled: true})
	}
	got := string(Scrape(t, &Exporter{Source: &Fixed{S: s}}))
	if n := strings.Count(got, "slowpath_storage_engine_encryption{"); n != maxEngineSeries {
		t.Errorf("%d engine series, want %d", n, maxEngineSeries)
	}
	if strings.Contains(got, "\x1b") {
		t.Error("a control character reached a label")
	}
}
