package network

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// fakeEthtool answers like mlx5 for ethN and like lo (EOPNOTSUPP) otherwise.
type fakeEthtool struct{ stats map[string]uint64 }

func (f *fakeEthtool) DriverInfo(n string) (DriverInfo, error) {
	if !strings.HasPrefix(n, "eth") {
		return DriverInfo{}, syscall.EOPNOTSUPP
	}
	return DriverInfo{Driver: "mlx5_core", BusInfo: "0000:00:03.0"}, nil
}
func (f *fakeEthtool) Ring(n string) (snapshot.Ring, error) {
	if !strings.HasPrefix(n, "eth") {
		return snapshot.Ring{}, syscall.EOPNOTSUPP
	}
	return snapshot.Ring{RX: 1024, RXMax: 8192, TX: 1024, TXMax: 8192}, nil
}
func (f *fakeEthtool) Channels(n string) (snapshot.Channels, error) {
	return snapshot.Channels{}, syscall.EOPNOTSUPP
}
func (f *fakeEthtool) Stats(n string) (map[string]uint64, error) {
	if !strings.HasPrefix(n, "eth") {
		return nil, syscall.EOPNOTSUPP
	}
	return f.stats, nil
}

type fakeNetlink struct{}

func (fakeNetlink) LinkKinds() (map[string]string, error)            { return map[string]string{}, nil }
func (fakeNetlink) LinkStats() (map[string]map[string]uint64, error) { return nil, nil }
func (fakeNetlink) RootQdiscs() (map[string]snapshot.QdiscCounters, error) {
	return map[string]snapshot.QdiscCounters{"eth0": {Kind: "mq", Drops: 3}}, nil
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeTree builds a fixture host with nics interfaces eth0.. and cpus
// CPUs in softnet_stat (15 columns, as on 6.x kernels).
func writeTree(t testing.TB, dir string, nics, cpus int) {
	for i := 0; i < nics; i++ {
		d := filepath.Join(dir, "sys/class/net", fmt.Sprintf("eth%d", i))
		write(t, filepath.Join(d, "ifindex"), fmt.Sprintf("%d\n", i+2))
		write(t, filepath.Join(d, "iflink"), fmt.Sprintf("%d\n", i+2))
		write(t, filepath.Join(d, "mtu"), "1500\n")
		write(t, filepath.Join(d, "operstate"), "up\n")
		write(t, filepath.Join(d, "speed"), "25000\n")
		write(t, filepath.Join(d, "queues/rx-0/rps_cpus"), "00000000\n")
		write(t, filepath.Join(d, "queues/tx-0/xps_cpus"), "1\n")
		for j, k := range StatsKeys {
			write(t, filepath.Join(d, "statistics", k), fmt.Sprintf("%d\n", i*100+j))
		}
	}
	write(t, filepath.Join(dir, "sys/class/net/lo/ifindex"), "1\n")
	write(t, filepath.Join(dir, "sys/class/net/lo/speed"), "") // EINVAL on a live host; empty here
	var sn strings.Builder
	for c := 0; c < cpus; c++ {
		fmt.Fprintf(&sn, "%08x %08x %08x 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 %08x 00000000 00000000\n", 1000+c, c, 2*c, c)
	}
	write(t, filepath.Join(dir, "proc/net/softnet_stat"), sn.String())
	write(t, filepath.Join(dir, "proc/net/snmp"), "Udp: InDatagrams InErrors RcvbufErrors SndbufErrors\nUdp: 10 4 3 0\n")
	write(t, filepath.Join(dir, "proc/net/netstat"), "TcpExt: ListenDrops ListenOverflows\nTcpExt: 2 2\n")
	write(t, filepath.Join(dir, "proc/interrupts"), "           CPU0\n 40:  1  PCI-MSI 1-edge  eth0-TxRx-0\n")
	write(t, filepath.Join(dir, "proc/irq/40/smp_affinity_list"), "0\n")
	for _, k := range Sysctls {
		write(t, filepath.Join(dir, "proc/sys", strings.ReplaceAll(k, ".", "/")), "1000\n")
	}
}

func driverStats(n int) map[string]uint64 {
	m := map[string]uint64{"rx_out_of_buffer": 42}
	for i := 0; i < n; i++ {
		m[fmt.Sprintf("rx%d_packets", i)] = uint64(i)
		m[fmt.Sprintf("rx%d_buff_alloc_err", i)] = 0
	}
	return m
}

func TestCollectFixtureTree(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, 2, 4)
	var clock int64
	o := Options{
		Interval:  time.Second,
		Ethtool:   &fakeEthtool{stats: driverStats(2)},
		Netlink:   fakeNetlink{},
		Monotonic: func() int64 { clock += 1e9; return clock },
		Sleep:     func(context.Context, time.Duration) error { return nil },
	}
	s := &snapshot.Snapshot{}
	Collect(context.Background(), hostfs.New(dir), o, s)
	n := s.Net
	if len(n.Samples) != 2 || n.Samples[1].MonotonicNS-n.Samples[0].MonotonicNS != 1e9 {
		t.Fatalf("want two samples 1s apart, got %d", len(n.Samples))
	}
	if len(n.Interfaces) != 3 {
		t.Fatalf("interfaces: %+v", n.Interfaces)
	}
	eth0 := n.Interfaces[0]
	speed := int64(25000)
	want := snapshot.NetInterface{
		Name: "eth0", Ifindex: 2, MTU: 1500, OperState: "up", SpeedMbps: &speed, Driver: "mlx5_core", BusInfo: "0000:00:03.0",
		Ring:        &snapshot.Ring{RX: 1024, RXMax: 8192, TX: 1024, TXMax: 8192},
		Queues:      []snapshot.NetQueue{{Name: "rx-0", RPSCPUs: "00000000"}, {Name: "tx-0", XPSCPUs: "1"}},
		IRQs:        []snapshot.IRQ{{Number: 40, Name: "eth0-TxRx-0", AffinityList: "0"}},
		Unsupported: []string{"channels"},
	}
	if d := cmp.Diff(want, eth0); d != "" {
		t.Errorf("eth0 (-want +got):\n%s", d)
	}
	lo := n.Interfaces[2]
	if lo.Name != "lo" || lo.Ring != nil || !cmp.Equal(lo.Unsupported, []string{"drvinfo", "ring", "channels"}) {
		t.Errorf("lo: %+v", lo)
	}
	smp := n.Samples[0]
	if smp.SoftnetColumns != 15 || len(smp.Softnet) != 4 || smp.Softnet[3].Dropped != 3 || smp.Softnet[3].TimeSqueeze != 6 {
		t.Errorf("softnet: %d columns %+v", smp.SoftnetColumns, smp.Softnet)
	}
	if smp.SNMP["Udp.RcvbufErrors"] != 3 || smp.SNMP["TcpExt.ListenDrops"] != 2 {
		t.Errorf("snmp: %v", smp.SNMP)
	}
	c := smp.Interfaces[0]
	if d := cmp.Diff(map[string]uint64{"rx_out_of_buffer": 42, "rx0_buff_alloc_err": 0, "rx1_buff_alloc_err": 0}, c.Driver); d != "" {
		t.Errorf("driver stats kept (-want +got):\n%s", d)
	}
	if c.Qdisc == nil || c.Qdisc.Drops != 3 || c.Stats["rx_missed_errors"] != 3 {
		t.Errorf("eth0 counters: %+v", c)
	}
	if n.Sysctls["net.core.netdev_max_backlog"] != 1000 {
		t.Errorf("sysctls: %v", n.Sysctls)
	}
	if n.DropReasons == nil || n.DropReasons.Status != "unknown" {
		t.Errorf("drop reasons without tracefs or BTF: %+v", n.DropReasons)
	}
	for _, e := range s.Manifest.Errors {
		if !strings.Contains(e.Path, "snmp6") && e.Kind != hostfs.KindMissing {
			t.Errorf("unexpected collect error: %+v", e)
		}
	}
}

func TestCollectOneSample(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, 1, 2)
	s := &snapshot.Snapshot{}
	Collect(context.Background(), hostfs.New(dir), Options{Ethtool: &fakeEthtool{}, Netlink: fakeNetlink{}}, s)
	if len(s.Net.Samples) != 1 {
		t.Fatalf("--net-interval 0 must take one sample, got %d", len(s.Net.Samples))
	}
}

func TestCollectMissingSoftnetIsRecorded(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, 1, 2)
	if err := os.Remove(filepath.Join(dir, "proc/net/softnet_stat")); err != nil {
		t.Fatal(err)
	}
	s := &snapshot.Snapshot{}
	Collect(context.Background(), hostfs.New(dir), Options{Ethtool: &fakeEthtool{}, Netlink: fakeNetlink{}}, s)
	found := false
	for _, e := range s.Manifest.Errors {
		if e.Collector == "net.softnet" && e.Kind == hostfs.KindMissing {
			found = true
		}
	}
	if !found {
		t.Errorf("missing softnet_stat not recorded: %+v", s.Manifest.Errors)
	}
}

// TestCollectEmptyRootRecordsEachErrorOnce: the sampler re-reads the
// interface list, which must not record a missing /sys/class/net twice.
func TestCollectEmptyRootRecordsEachErrorOnce(t *testing.T) {
	fs := hostfs.New(t.TempDir())
	s := &snapshot.Snapshot{}
	Collect(context.Background(), fs, Options{Ethtool: &fakeEthtool{}, Netlink: fakeNetlink{}}, s)
	seen := map[string]int{}
	for _, e := range s.Manifest.Errors {
		seen[e.Collector+" "+e.Path]++
	}
	for k, n := range seen {
		if n > 1 {
			t.Errorf("%s recorded %d times", k, n)
		}
	}
	if seen["net.interfaces "+fs.SysPath("class", "net")] != 1 {
		t.Errorf("missing /sys/class/net not recorded: %+v", s.Manifest.Errors)
	}
}
