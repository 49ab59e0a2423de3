package netlab

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseIperf3(t *testing.T) {
	// Recorded on this project's dev VM: 2 s flood, backlog 16, 64-byte datagrams.
	recorded, err := os.ReadFile("testdata/iperf3-udp-client.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		in      string
		want    FloodResult
		wantErr string
	}{
		{
			name: "recorded client report",
			in:   string(recorded),
			want: FloodResult{
				Seconds:               2.000106,
				SentPackets:           599760,
				SentBitsPerSecond:     153535873.12222037,
				ReceivedPackets:       599197 - 383134,
				LostPackets:           383134,
				LostPercent:           63.8812191543284,
				ReceivedBitsPerSecond: 55309196.61257953,
			},
		},
		{name: "iperf3 error", in: `{"start":{},"intervals":[],"end":{},"error":"unable to connect to server: Connection refused"}`, wantErr: "unable to connect"},
		{name: "truncated", in: string(recorded[:len(recorded)/2]), wantErr: "parse iperf3 JSON"},
		{name: "empty", in: "", wantErr: "parse iperf3 JSON"},
		{name: "tcp test", in: `{"start":{"test_start":{"protocol":"TCP"}},"end":{}}`, wantErr: `protocol "TCP"`},
		{name: "no sums", in: `{"start":{"test_start":{"protocol":"UDP"}},"end":{}}`, wantErr: "sum_received missing"},
		{
			name:    "no packet counts",
			in:      `{"start":{"test_start":{"protocol":"UDP"}},"end":{"sum_sent":{"bytes":1},"sum_received":{"bytes":1}}}`,
			wantErr: "packet counts missing",
		},
		{
			name: "lost more than counted",
			in: `{"start":{"test_start":{"protocol":"UDP"}},"end":{
				"sum_sent":{"seconds":1,"bits_per_second":1,"packets":10},
				"sum_received":{"seconds":1,"bits_per_second":1,"packets":5,"lost_packets":6}}}`,
			wantErr: "lost 6 of 5",
		},
		{
			name:    "negative count",
			in:      `{"start":{"test_start":{"protocol":"UDP"}},"end":{"sum_sent":{"packets":-1}}}`,
			wantErr: "parse iperf3 JSON",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseIperf3(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseIperf3 (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseIperf3(f *testing.F) {
	if b, err := os.ReadFile("testdata/iperf3-udp-client.json"); err == nil {
		f.Add(string(b))
	}
	f.Add(`{"start":{"test_start":{"protocol":"UDP"}},"end":{"sum_sent":{"seconds":1,"bits_per_second":1,"packets":10},"sum_received":{"seconds":1,"bits_per_second":1,"packets":5,"lost_packets":1}}}`)
	f.Add(`{"error":"x"}`)
	f.Fuzz(func(t *testing.T, in string) {
		r, err := parseIperf3(strings.NewReader(in))
		if err != nil {
			return
		}
		if r.LostPackets+r.ReceivedPackets < r.ReceivedPackets {
			t.Fatalf("overflowing counts: %+v", r)
		}
	})
}

func TestCPUMask(t *testing.T) {
	for cpu, want := range map[int]string{0: "1", 1: "2", 3: "8", 31: "80000000", 32: "1,00000000", 65: "2,00000000,00000000"} {
		if got := cpuMask(cpu); got != want {
			t.Errorf("cpuMask(%d) = %q, want %q", cpu, got, want)
		}
	}
}

func TestCountersSub(t *testing.T) {
	before := Counters{SoftnetDropped: []uint32{4294967290, 7}, SoftnetSqueezed: []uint32{1, 1}, UDPInDatagrams: 10, UDPRcvbufErrors: 2, UDPInErrors: 2}
	after := Counters{SoftnetDropped: []uint32{4, 9, 5}, SoftnetSqueezed: []uint32{3, 1, 0}, UDPInDatagrams: 110, UDPRcvbufErrors: 12, UDPInErrors: 13}
	want := Counters{SoftnetDropped: []uint32{10, 2, 5}, SoftnetSqueezed: []uint32{2, 0, 0}, UDPInDatagrams: 100, UDPRcvbufErrors: 10, UDPInErrors: 11}
	got := after.Sub(before)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Sub (-want +got):\n%s", diff)
	}
	if n := got.TotalSoftnetDropped(); n != 17 {
		t.Errorf("TotalSoftnetDropped = %d, want 17", n)
	}
}

func TestTCPListening(t *testing.T) {
	// Shape of /proc/net/tcp with an iperf3 server on 10.213.0.2:5201.
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0200D50A:1451 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 123 1 0000000000000000 100 0 0 10 0
   1: 0200D50A:1452 0100D50A:9C40 01 00000000:00000000 00:00000000 00000000     0        0 124 1 0000000000000000 20 4 30 10 -1
`
	for port, want := range map[int]bool{5201: true, 5202: false, 40000: false} {
		if got := tcpListening(table, port); got != want {
			t.Errorf("tcpListening(%d) = %v, want %v", port, got, want)
		}
	}
	if tcpListening("garbage\n0: x 0A", 5201) {
		t.Errorf("garbage table reported listening")
	}
}
