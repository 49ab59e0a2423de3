package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/slowpath/slowpath/internal/collect"
	"github.com/slowpath/slowpath/internal/collect/cipherlimit"
	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/taxtree"
)

// clock is a Live.Now the test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTaxLive(tr *taxtree.Tree, c *clock) *Live {
	return &Live{FS: tr.FS, Version: "test", Cloud: cloud.Options{Cloud: "none"}, TopologyInterval: time.Hour,
		OpenDM: tr.OpenDM, Cipher: collect.Cipher{BytesPerSec: 2.5e9, What: "given with --collector.cipher.bytes-per-second"}, Now: c.now}
}

func advance(t *testing.T, tr *taxtree.Tree, steps int, topUS, bottomUS uint64) {
	t.Helper()
	for range steps {
		if err := tr.Advance(1000, 16384, topUS, bottomUS); err != nil {
			t.Fatal(err)
		}
	}
}

// series reports whether a scrape of e holds line (a series and its value).
func hasLine(t *testing.T, e prometheus.Collector, line string) bool {
	t.Helper()
	for _, l := range strings.Split(string(Scrape(t, e)), "\n") {
		if l == line {
			return true
		}
	}
	return false
}

// TestTaxOverScrapeInterval: the agent reads dm-0 and nvme0n1's counters on
// every scrape and dmcrypt.tax judges the interval between two scrapes. The
// incident's 18 ms over 0.45 ms fires; a tuned interval after it (+7 µs)
// does not, though the since-boot means are still the incident's. The
// counters are exported as counters in seconds and bytes, the layer graph
// and span as info series.
func TestTaxOverScrapeInterval(t *testing.T) { taxOverScrapeInterval(t, false) }

// TestTaxTableUnread: the same node as an agent without CAP_SYS_ADMIN (the
// default DaemonSet) or with --live-sources off sees it: dm-0's table is
// not read, but its uuid (CRYPT-LUKS2-…, readable in sysfs) makes it
// dm-crypt for the tax: the span (table="unread"), the counters and a
// judged dmcrypt.tax, while the layer graph still says its encryption is
// unknown.
func TestTaxTableUnread(t *testing.T) { taxOverScrapeInterval(t, true) }

func taxOverScrapeInterval(t *testing.T, unread bool) {
	tr := taxtree.Write(t, 4)
	c := &clock{time.Unix(1_800_000_000, 0)}
	live := newTaxLive(tr, c)
	if unread {
		live.OpenDM = nil // the tree is not this host's: the ioctl is not run
	}
	// Every scrape reads the topology again: it must still judge the
	// interval since the scrape before.
	live.TopologyInterval = 10 * time.Second
	defer live.Close()
	e := &Exporter{Source: live}

	// First scrape: the topology's own reading, no interval yet. The
	// counters since boot already hold the incident: they are not judged.
	advance(t, tr, 3, 18000, 450)
	const taxFires = `slowpath_finding{id="dmcrypt.tax",severity="warning",subject="/dev/mapper/data"} 1`
	const taxSilent = `slowpath_finding{id="dmcrypt.tax",severity="warning",subject=""} 0`
	if !hasLine(t, e, `slowpath_finding_unknown{id="dmcrypt.tax",subject="/dev/mapper/data"} 1`) {
		t.Error("first scrape: dmcrypt.tax not unknown without an interval")
	}

	advance(t, tr, 3, 18000, 450)
	c.t = c.t.Add(15 * time.Second)
	want := `
# HELP slowpath_disk_ios_total I/Os completed by a device on an encrypted path (/sys/class/block/NAME/stat reads, writes).
# TYPE slowpath_disk_ios_total counter
slowpath_disk_ios_total{device="dm-0",direction="read"} 6000
slowpath_disk_ios_total{device="dm-0",direction="write"} 0
slowpath_disk_ios_total{device="nvme0n1",direction="read"} 6000
slowpath_disk_ios_total{device="nvme0n1",direction="write"} 0
# HELP slowpath_disk_io_time_seconds_total Time the device's completed I/Os took, summed over I/Os (stat read_ticks, write_ticks): over _disk_ios_total it is the await.
# TYPE slowpath_disk_io_time_seconds_total counter
slowpath_disk_io_time_seconds_total{device="dm-0",direction="read"} 108
slowpath_disk_io_time_seconds_total{device="dm-0",direction="write"} 0
slowpath_disk_io_time_seconds_total{device="nvme0n1",direction="read"} 2.7
slowpath_disk_io_time_seconds_total{device="nvme0n1",direction="write"} 0
# HELP slowpath_disk_io_bytes_total Bytes the device's completed I/Os moved (stat sectors × 512).
# TYPE slowpath_disk_io_bytes_total counter
slowpath_disk_io_bytes_total{device="dm-0",direction="read"} 9.8304e+07
slowpath_disk_io_bytes_total{device="dm-0",direction="write"} 0
slowpath_disk_io_bytes_total{device="nvme0n1",direction="read"} 9.8304e+07
slowpath_disk_io_bytes_total{device="nvme0n1",direction="write"} 0
# HELP slowpath_cipher_bytes_per_second One core's AES-XTS throughput as measured at the last topology refresh (host.cipher), or as given with --collector.cipher.bytes-per-second (driver="").
# TYPE slowpath_cipher_bytes_per_second gauge
slowpath_cipher_bytes_per_second{algorithm="xts(aes)",driver="",key_bits="512"} 2.5e+09
# HELP slowpath_cpus CPUs of the node: the cores that can encrypt at once, in the cipher's expected cost per I/O.
# TYPE slowpath_cpus gauge
slowpath_cpus 4
# HELP slowpath_dmcrypt_tax_span The dm-crypt layers of a path's encryption chain (the value), from the topmost dm-crypt device (device) to the one device beneath the lowest (lower): where the encryption tax is read. table="unread": a layer's device-mapper table was not read (no CAP_SYS_ADMIN) and it is dm-crypt by its cryptsetup uuid, its cipher assumed AES-XTS.
# TYPE slowpath_dmcrypt_tax_span gauge
slowpath_dmcrypt_tax_span{device="dm-0",lower="nvme0n1",mountpoint="/data",table="read"} 1
# HELP slowpath_storage_layer_info One edge of the storage layer graph: the block device of a layer of mountpoint's path and the device directly beneath it (lower="" at the bottom); joins node_exporter's node_disk_* by device.
# TYPE slowpath_storage_layer_info gauge
slowpath_storage_layer_info{device="dm-0",encrypts="true",kind="dm-crypt",lower="nvme0n1",mountpoint="/data",runs_on="kernel-cpu"} 1
slowpath_storage_layer_info{device="nvme0n1",encrypts="false",kind="disk",lower="",mountpoint="/data",runs_on=""} 1
`
	if unread {
		want = strings.NewReplacer(`table="read"`, `table="unread"`,
			`encrypts="true",kind="dm-crypt",lower="nvme0n1",mountpoint="/data",runs_on="kernel-cpu"`,
			`encrypts="unknown",kind="dm",lower="nvme0n1",mountpoint="/data",runs_on=""`).Replace(want)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e)
	// One gather: a scrape is an interval, so the finding is read from it too.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	g := prometheus.Gatherers{prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return mfs, nil })}
	if err := testutil.GatherAndCompare(g, strings.NewReader(want), "slowpath_disk_ios_total", "slowpath_disk_io_time_seconds_total",
		"slowpath_disk_io_bytes_total", "slowpath_cipher_bytes_per_second", "slowpath_cpus", "slowpath_dmcrypt_tax_span", "slowpath_storage_layer_info"); err != nil {
		t.Error(err)
	}
	var buf strings.Builder
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(buf.String(), taxFires+"\n") {
		t.Error("18 ms over 0.45 ms in the interval: dmcrypt.tax does not fire")
	}

	advance(t, tr, 2, 107, 100)
	c.t = c.t.Add(15 * time.Second)
	if got := string(Scrape(t, e)); !strings.Contains(got, taxSilent+"\n") || strings.Contains(got, `slowpath_finding_unknown{id="dmcrypt.tax"`) {
		t.Errorf("+7 µs in the interval after the incident: dmcrypt.tax not silent:\n%s", grep(got, "dmcrypt.tax"))
	}

	// No I/O in the next interval: unknown (idle), not the old verdict.
	c.t = c.t.Add(15 * time.Second)
	if !hasLine(t, e, `slowpath_finding_unknown{id="dmcrypt.tax",subject="/dev/mapper/data"} 1`) {
		t.Error("idle interval: dmcrypt.tax not unknown")
	}
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestCipherCollector: the host.cipher collector runs once per topology
// refresh, only on the host's own roots, and not at all when turned off.
func TestCipherCollector(t *testing.T) {
	calls := 0
	fake := func(context.Context, hostfs.FS, cipherlimit.Options) (*cipherlimit.Result, error) {
		calls++
		return &cipherlimit.Result{Algorithm: "xts(aes)", KeyBits: 512, Method: "af_alg", PerCore: 3e9,
			Kernel: &cipherlimit.Implementation{Driver: "xts-aes-aesni"}}, nil
	}
	const measured = `slowpath_cipher_bytes_per_second{algorithm="xts(aes)",driver="xts-aes-aesni",key_bits="512"} 3e+09`

	t.Run("measured once per topology refresh", func(t *testing.T) {
		calls = 0
		tr := taxtree.Write(t, 2)
		c := &clock{time.Unix(1_800_000_000, 0)}
		live := newTaxLive(tr, c)
		defer live.Close()
		live.FS.Live = true // as --live-sources on says of a tree
		live.Cipher = collect.Cipher{Measure: fake}
		e := &Exporter{Source: live}
		for i := range 3 {
			c.t = c.t.Add(time.Minute)
			if !hasLine(t, e, measured) {
				t.Errorf("scrape %d: no %s", i, measured)
			}
		}
		if calls != 1 {
			t.Errorf("%d measurements in three scrapes within the topology interval, want 1", calls)
		}
		c.t = c.t.Add(time.Hour)
		hasLine(t, e, measured)
		if calls != 2 {
			t.Errorf("%d measurements after the topology was read again, want 2", calls)
		}
	})
	t.Run("never for another root", func(t *testing.T) {
		calls = 0
		tr := taxtree.Write(t, 2)
		live := newTaxLive(tr, &clock{time.Unix(1_800_000_000, 0)})
		defer live.Close()
		live.Cipher = collect.Cipher{Measure: fake}
		got := string(Scrape(t, &Exporter{Source: live}))
		if calls != 0 || strings.Contains(got, "slowpath_cipher_bytes_per_second{") {
			t.Errorf("foreign tree measured: %d calls\n%s", calls, grep(got, "cipher"))
		}
		if !strings.Contains(got, `slowpath_scrape_collector_success{collector="cipher"} 0`) ||
			!strings.Contains(got, `slowpath_scrape_collector_errors{collector="cipher"} 1`) {
			t.Errorf("the cipher collector does not say it did not measure:\n%s", grep(got, "cipher"))
		}
	})
	t.Run("turned off", func(t *testing.T) {
		calls = 0
		tr := taxtree.Write(t, 2)
		live := newTaxLive(tr, &clock{time.Unix(1_800_000_000, 0)})
		defer live.Close()
		live.FS.Live = true
		live.Cipher = collect.Cipher{Off: true, Measure: fake}
		got := string(Scrape(t, &Exporter{Source: live}))
		if calls != 0 || strings.Contains(got, "slowpath_cipher_bytes_per_second{") || strings.Contains(got, `collector="cipher"`) {
			t.Errorf("--collector.cipher=false measured: %d calls\n%s", calls, grep(got, "cipher"))
		}
	})
}

// TestSubStat: a counter that went backwards (the device made again) gives
// no window; in_flight is a gauge, taken as it is.
func TestSubStat(t *testing.T) {
	prev := &snapshot.BlockStat{ReadIOs: 10, ReadTicksMS: 5, InFlight: 3}
	if d := subStat(&snapshot.BlockStat{ReadIOs: 15, ReadTicksMS: 9, InFlight: 1}, prev); d == nil || d.ReadIOs != 5 || d.ReadTicksMS != 4 || d.InFlight != 1 {
		t.Errorf("forward: %+v", d)
	}
	if d := subStat(&snapshot.BlockStat{ReadIOs: 2, ReadTicksMS: 9}, prev); d != nil {
		t.Errorf("backwards: %+v, want nil", d)
	}
}

// BenchmarkTaxScrape is one scrape of a node with dm-crypt: the stat files
// of the encrypted path read, the interval judged, every series built. The
// topology (and the cipher) is read once, before the timer.
func BenchmarkTaxScrape(b *testing.B) {
	tr := taxtree.Write(b, 4)
	c := &clock{time.Unix(1_800_000_000, 0)}
	live := newTaxLive(tr, c)
	defer live.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(&Exporter{Source: live})
	if _, err := reg.Gather(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if err := tr.Advance(1000, 16384, 18000, 450); err != nil {
			b.Fatal(err)
		}
		c.t = c.t.Add(15 * time.Second)
		b.StartTimer()
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
