package network

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

func TestParseSNMP(t *testing.T) {
	in := "Tcp: RtoAlgorithm MaxConn InErrs\nTcp: 1 -1 0\nUdp: InDatagrams InErrors RcvbufErrors\nUdp: 66 5 4\n"
	got, err := parseSNMP(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"Tcp.RtoAlgorithm": 1, "Tcp.MaxConn": -1, "Tcp.InErrs": 0, "Udp.InDatagrams": 66, "Udp.InErrors": 5, "Udp.RcvbufErrors": 4}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	for name, bad := range map[string]string{
		"truncated":      "Udp: InErrors RcvbufErrors\n",
		"count mismatch": "Udp: InErrors RcvbufErrors\nUdp: 1\n",
		"group mismatch": "Udp: InErrors\nTcp: 1\n",
		"not a number":   "Udp: InErrors\nUdp: x\n",
		"no group":       "garbage\n",
	} {
		if _, err := parseSNMP(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParseSNMP6(t *testing.T) {
	got, err := parseSNMP6(strings.NewReader("Ip6InReceives   1\nUdp6RcvbufErrors\t7\nUdpLite6InErrors 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"Ip6.InReceives": 1, "Udp6.RcvbufErrors": 7, "UdpLite6.InErrors": 0}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if _, err := parseSNMP6(strings.NewReader("Udp6RcvbufErrors\n")); err == nil {
		t.Error("line without value: no error")
	}
}

const interruptsText = `           CPU0       CPU1
  0:         44          0   IO-APIC   2-edge      timer
 37:          0          0 PCI-MSIX-0000:00:03.0   0-edge      virtio2-config
 38:          0       8093 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0
 40:        100          0  PCI-MSI 524288-edge      eth1-TxRx-0
 41:        100          0  PCI-MSI 524289-edge      eth10-TxRx-0
 50:          1          2  mlx5_comp0@pci:7870:00:02.0
NMI:          0          0   Non-maskable interrupts
`

func TestParseInterrupts(t *testing.T) {
	got, err := parseInterrupts(strings.NewReader(interruptsText))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 {
		t.Fatalf("got %d lines, want 6: %+v", len(got), got)
	}
	match := func(ifname, bus string) []int {
		var out []int
		for _, l := range got {
			if irqMatches(l, ifname, bus) {
				out = append(out, l.Number)
			}
		}
		return out
	}
	if d := cmp.Diff([]int{37, 38}, match("eth0", "0000:00:03.0")); d != "" {
		t.Errorf("virtio by bus (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int{40}, match("eth1", "")); d != "" {
		t.Errorf("eth1 must not match eth10 (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int{50}, match("enP30832s1", "7870:00:02.0")); d != "" {
		t.Errorf("mlx5 by bus (-want +got):\n%s", d)
	}
	if _, err := parseInterrupts(strings.NewReader("")); err == nil {
		t.Error("empty: no error")
	}
}

func TestKeepDriverStat(t *testing.T) {
	for name, want := range map[string]bool{
		"rx_out_of_buffer": true, "hc_rx_discards_no_wqe": true, "rx_comp_busy": true, "rx_no_memory": true,
		"pps_allowance_exceeded": true, "rx_queue_0_drops": true, "rx0_drops": true, "rx_discards_phy": true,
		"rx_queue_0_xdp_drops": false, "rx_packets": false, "tx_bytes": false, "": false,
	} {
		if got := KeepDriverStat(name); got != want {
			t.Errorf("KeepDriverStat(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestFormatHasReason(t *testing.T) {
	withReason := "name: kfree_skb\nformat:\n\tfield:void * skbaddr;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:enum skb_drop_reason reason;\toffset:36;\tsize:4;\tsigned:0;\n"
	without := "name: kfree_skb\nformat:\n\tfield:void * skbaddr;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:unsigned short protocol;\toffset:24;\tsize:2;\tsigned:0;\n"
	if !formatHasReason([]byte(withReason)) || formatHasReason([]byte(without)) {
		t.Error("formatHasReason misread the tracepoint format")
	}
}

// TestFormatHasReasonByKernel: the kfree_skb format file of each kernel
// generation, laid out from its TRACE_EVENT(kfree_skb) (include/trace/events/skb.h
// of 5.10, 6.1 and 6.12: reason added at offset 28, then moved to 36 when
// rx_sk came in before it). Only a field declaration counts: the print
// format's "reason" text on 6.x does not, and 5.10 has neither.
func TestFormatHasReasonByKernel(t *testing.T) {
	for file, want := range map[string]bool{"format-5.10": false, "format-6.1": true, "format-6.12": true} {
		b, err := os.ReadFile(filepath.Join("testdata", "kfree_skb", file))
		if err != nil {
			t.Fatal(err)
		}
		if got := formatHasReason(b); got != want {
			t.Errorf("%s: formatHasReason = %v, want %v", file, got, want)
		}
	}
}

func FuzzParseSNMP(f *testing.F) {
	f.Add("Udp: InErrors RcvbufErrors\nUdp: 1 2\n")
	f.Add("Tcp: MaxConn\nTcp: -1\n")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parseSNMP(strings.NewReader(s))
		if err == nil {
			for k := range m {
				if !strings.Contains(k, ".") {
					t.Fatalf("key %q has no group", k)
				}
			}
		}
		_, _ = parseSNMP6(strings.NewReader(s))
	})
}

func FuzzParseInterrupts(f *testing.F) {
	f.Add(interruptsText)
	f.Fuzz(func(t *testing.T, s string) {
		lines, err := parseInterrupts(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, l := range lines {
			_ = irqMatches(l, "eth0", "0000:00:03.0")
		}
	})
}

// FuzzDriverStats decodes arbitrary `ethtool -S` names: the filter must
// keep only bounded, non-XDP names and never panic.
func FuzzDriverStats(f *testing.F) {
	f.Add("rx_out_of_buffer", uint64(7))
	f.Add("rx_queue_0_xdp_drops", uint64(1))
	f.Fuzz(func(t *testing.T, name string, v uint64) {
		got := filterDriverStats(map[string]uint64{name: v, "rx_packets": 1})
		if _, ok := got["rx_packets"]; ok {
			t.Fatal("kept rx_packets")
		}
		if x, ok := got[name]; ok && (x != v || strings.Contains(name, "xdp") || len(name) > 64) {
			t.Fatalf("kept %q=%d", name, x)
		}
	})
}

func TestReadSoftnetColumns(t *testing.T) {
	tests := []struct {
		name, text string
		cpus, cols int
		lastCPU    int
	}{
		{"11 columns (4.18)", "00000010 00000002 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n00000010 00000003 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n", 2, 11, 1},
		// 13 columns (5.14) name the CPU: offline CPU 1 is absent.
		{"13 columns (5.14)", "00000010 00000002 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n00000010 00000003 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000002\n", 2, 13, 2},
		{"15 columns (6.x)", "0000000e 00000000 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n", 1, 15, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir+"/proc/net/softnet_stat", tt.text)
			got, cols, err := readSoftnet(hostfs.New(dir))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.cpus || cols != tt.cols || got[len(got)-1].CPU != tt.lastCPU {
				t.Errorf("got %d CPUs, %d columns, last cpu %d: %+v", len(got), cols, got[len(got)-1].CPU, got)
			}
		})
	}
	dir := t.TempDir()
	write(t, dir+"/proc/net/softnet_stat", "00000010 00000002\n")
	if _, _, err := readSoftnet(hostfs.New(dir)); err == nil {
		t.Error("truncated softnet_stat: no error")
	}
}

// FuzzReadSoftnet feeds arbitrary softnet_stat content through the reader
// (prometheus/procfs parses it): an error or sane rows, never a panic.
func FuzzReadSoftnet(f *testing.F) {
	f.Add("0000000e 00000000 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n")
	f.Add("00000010 00000002 00000001 00000000 00000000 00000000 00000000 00000000 00000000\n")
	dir := f.TempDir()
	write(f, dir+"/proc/net/softnet_stat", "")
	f.Fuzz(func(t *testing.T, s string) {
		write(t, dir+"/proc/net/softnet_stat", s)
		rows, cols, err := readSoftnet(hostfs.New(dir))
		if err == nil && len(rows) > 0 && cols < 9 {
			t.Fatalf("accepted %d columns", cols)
		}
	})
}

func TestKernelBTF(t *testing.T) {
	dir := t.TempDir()
	if got := kernelBTF(hostfs.New(dir)); got != "no" {
		t.Errorf("empty sysfs: %q, want no", got)
	}
	p := filepath.Join(dir, "sys", "kernel", "btf")
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "vmlinux"), []byte("\x9f\xeb"), 0o444); err != nil {
		t.Fatal(err)
	}
	if got := kernelBTF(hostfs.New(dir)); got != "yes" {
		t.Errorf("with vmlinux: %q, want yes", got)
	}
	s := &snapshot.Snapshot{}
	Collect(context.Background(), hostfs.New(dir), Options{Ethtool: &fakeEthtool{}, Netlink: fakeNetlink{}}, s)
	if s.Net == nil || s.Net.DropReasons == nil || s.Net.DropReasons.KernelBTF != "yes" {
		t.Errorf("collected drop reasons: %+v", s.Net)
	}
}
