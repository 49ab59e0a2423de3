package dmtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WriteCounters adds to a tree written by WriteSynthetic what an exporter
// reads on every scrape: a stat file for every block device and
// /proc/diskstats (Documentation/admin-guide/iostats.rst, the 17 fields
// of Linux 5.5+), nics network interfaces eth0... with their
// /sys/class/net/IF/statistics counters and /proc/net/dev, and a
// two-CPU /proc/net/softnet_stat (13 columns, Linux 5.10+). Values differ
// per device and are fixed: a scrape's cost, not a rate, is measured.
func WriteCounters(dir string, nics int) error {
	w := &treeWriter{root: dir}
	devs, err := os.ReadDir(filepath.Join(dir, "sys/class/block"))
	if err != nil {
		return err
	}
	var diskstats strings.Builder
	for i, d := range devs {
		real, err := filepath.EvalSymlinks(filepath.Join(dir, "sys/class/block", d.Name()))
		if err != nil {
			return err
		}
		mm, err := os.ReadFile(filepath.Join(real, "dev"))
		if err != nil {
			return err
		}
		maj, min, _ := strings.Cut(strings.TrimSpace(string(mm)), ":")
		n := uint64(i + 1)
		stat := fmt.Sprintf("%d 0 %d %d %d 0 %d %d 0 %d %d 0 0 0 0 0 0", 1000*n, 8000*n, 500*n, 900*n, 7200*n, 450*n, 1200*n, 950*n)
		if err := os.WriteFile(filepath.Join(real, "stat"), []byte(stat+"\n"), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(&diskstats, "%4s %7s %s %s\n", maj, min, d.Name(), stat)
	}
	w.file("proc/diskstats", strings.TrimSuffix(diskstats.String(), "\n"))

	var netdev strings.Builder
	netdev.WriteString("Inter-|   Receive                                                |  Transmit\n")
	netdev.WriteString(" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n")
	for i := 0; i < nics; i++ {
		name := fmt.Sprintf("eth%d", i)
		ddir := fmt.Sprintf("devices/pci0000:00/0000:00:%02x.%d/net/%s", 0x10+i/8, i%8, name)
		n := uint64(i + 1)
		for k, v := range map[string]uint64{"rx_packets": 1e6 * n, "tx_packets": 9e5 * n, "rx_bytes": 1e9 * n, "tx_bytes": 8e8 * n,
			"rx_dropped": 3 * n, "rx_missed_errors": n, "rx_fifo_errors": 0, "rx_over_errors": 0, "rx_errors": 2 * n, "rx_nohandler": 0,
			"tx_dropped": 0, "tx_fifo_errors": 0, "tx_errors": 0, "tx_aborted_errors": 0, "tx_carrier_errors": 0,
			"multicast": 0, "collisions": 0, "rx_compressed": 0, "tx_compressed": 0, "rx_crc_errors": 0, "rx_frame_errors": 0,
			"rx_length_errors": 0, "tx_heartbeat_errors": 0, "tx_window_errors": 0} {
			w.file("sys/"+ddir+"/statistics/"+k, fmt.Sprint(v))
		}
		for k, v := range map[string]string{"operstate": "up", "mtu": "9001", "type": "1", "address": fmt.Sprintf("02:00:00:00:%02x:%02x", i/256, i%256),
			"ifindex": fmt.Sprint(i + 2), "carrier": "1", "speed": "25000", "tx_queue_len": "1000", "flags": "0x1003"} {
			w.file("sys/"+ddir+"/"+k, v)
		}
		w.link("sys/class/net/"+name, "../../"+ddir)
		fmt.Fprintf(&netdev, "%6s: %d %d %d %d 0 0 0 0 %d %d 0 0 0 0 0 0\n", name, 1e9*n, 1e6*n, 2*n, 3*n, 8e8*n, 9e5*n)
	}
	w.file("proc/net/dev", strings.TrimSuffix(netdev.String(), "\n"))
	w.file("proc/net/softnet_stat", "000f4240 00000002 00000005 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n"+
		"000e1000 00000001 00000003 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000001")
	return w.err
}
