package netlab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/testing/lockedbuf"
)

// FloodOptions shapes the iperf3 UDP flood. The zero value floods as fast as
// the sender can with 64-byte datagrams, which maximises the packet rate.
type FloodOptions struct {
	// PacketSize is the UDP payload size in bytes (iperf3 -l); default 64.
	PacketSize int
	// Bitrate is iperf3's -b target ("0" or "" = unlimited, "100M", ...).
	Bitrate string
	// Port of the iperf3 server in the receiver namespace; default 5201.
	Port int
	// Affinity is passed to iperf3 -A ("n" pins the sender to CPU n,
	// "n,m" also pins the receiver to CPU m). Empty means: the receiver on
	// the RPS CPU and the sender on another one, so that packets cross CPUs
	// and the RPS CPU's backlog fills while it also runs the receiver. (A
	// sender on the RPS CPU drains the backlog itself after every packet,
	// in the softirq run when veth_xmit re-enables bottom halves, so it
	// rarely overflows.) "none" leaves both unpinned.
	Affinity string
}

// FloodResult is what iperf3 measured, from the client's JSON report (which
// carries the receiver's numbers too).
type FloodResult struct {
	Seconds           float64 // length of the test, receiver side
	SentPackets       uint64
	SentBitsPerSecond float64
	// ReceivedPackets reached the iperf3 server socket; LostPackets are
	// the sequence-number gaps it saw (dropped anywhere on the way).
	ReceivedPackets       uint64
	LostPackets           uint64
	LostPercent           float64
	ReceivedBitsPerSecond float64
}

// ReceivedPacketsPerSecond is the delivered packet rate.
func (r FloodResult) ReceivedPacketsPerSecond() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.ReceivedPackets) / r.Seconds
}

// Flood runs an iperf3 server in the receiver namespace and a UDP flood from
// the sender namespace to ReceiverAddr for duration (whole seconds, at least
// one). It returns when the test ends, or kills both iperf3 processes when
// ctx is done. Floods on one lab at the same time need different Ports.
func (l *Lab) Flood(ctx context.Context, duration time.Duration, opts FloodOptions) (FloodResult, error) {
	if _, err := exec.LookPath("iperf3"); err != nil {
		return FloodResult{}, errors.New("iperf3 not found: apt-get install iperf3")
	}
	secs := int(math.Ceil(duration.Seconds()))
	if secs < 1 {
		return FloodResult{}, fmt.Errorf("flood duration %v: iperf3 needs at least 1s", duration)
	}
	if opts.PacketSize == 0 {
		opts.PacketSize = 64
	}
	if opts.Bitrate == "" {
		opts.Bitrate = "0"
	}
	if opts.Port == 0 {
		opts.Port = 5201
	}
	port := strconv.Itoa(opts.Port)
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+20*time.Second)
	defer cancel()

	server, err := l.Command(ctx, l.Receiver, "iperf3", "-s", "-1", "-B", ReceiverAddr, "-p", port, "--json")
	if err != nil {
		return FloodResult{}, err
	}
	var serverOut lockedbuf.Buffer // read below while the server may still write
	server.Stdout, server.Stderr = &serverOut, &serverOut
	if err := l.Start(server); err != nil {
		return FloodResult{}, fmt.Errorf("start iperf3 server: %w", err)
	}
	serverDone := make(chan error, 1)
	go func() { serverDone <- l.Wait(server) }()
	clientOK := false
	defer func() {
		// -1 makes the server exit after one test; after a failed client
		// it may wait for another: kill it.
		grace := 3 * time.Second
		if !clientOK {
			grace = 0
		}
		select {
		case <-serverDone:
		case <-time.After(grace):
			_ = server.Process.Kill()
			<-serverDone
		}
	}()
	if err := waitListening(ctx, server.Process.Pid, opts.Port, serverDone); err != nil {
		return FloodResult{}, fmt.Errorf("iperf3 server in %s: %w: %s", l.Receiver, err, strings.TrimSpace(serverOut.String()))
	}

	args := []string{"iperf3", "-c", ReceiverAddr, "-p", port, "-u", "-b", opts.Bitrate,
		"-l", strconv.Itoa(opts.PacketSize), "-t", strconv.Itoa(secs), "--json"}
	switch aff := opts.Affinity; aff {
	case "none":
	case "":
		if aff = l.defaultAffinity(); aff != "" {
			args = append(args, "-A", aff)
		}
	default:
		args = append(args, "-A", aff)
	}
	client, err := l.Command(ctx, l.Sender, args...)
	if err != nil {
		return FloodResult{}, err
	}
	var clientOut, clientErr bytes.Buffer
	client.Stdout, client.Stderr = &clientOut, &clientErr
	runErr := l.run(client)
	res, perr := parseIperf3(bytes.NewReader(clientOut.Bytes()))
	if ctx.Err() != nil {
		return FloodResult{}, fmt.Errorf("iperf3 flood: %w", ctx.Err())
	}
	if runErr != nil {
		// iperf3 explains a parameter error on stderr (and prints usage,
		// not JSON); a run-time error in the JSON "error" field.
		msg := strings.TrimSpace(clientErr.String())
		if msg == "" && perr != nil {
			msg = perr.Error()
		}
		return FloodResult{}, fmt.Errorf("iperf3 client: %w: %s", runErr, msg)
	}
	if perr != nil {
		return FloodResult{}, perr
	}
	clientOK = true
	return res, nil
}

// waitListening polls the TCP table of pid's network namespace until the
// iperf3 control port listens, so the client never races the server.
func waitListening(ctx context.Context, pid, port int, exited <-chan error) error {
	path := "/proc/" + strconv.Itoa(pid) + "/net/tcp"
	deadline := time.After(10 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && tcpListening(string(b), port) {
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("exited before listening: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("not listening on port %d after 10s", port)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// tcpListening reports whether a /proc/net/tcp table has a socket listening
// on port. Rows: "sl local_address rem_address st ...", addresses as
// HEXIP:HEXPORT, st in hex (net/ipv4/tcp_ipv4.c get_tcp4_sock;
// TCP_LISTEN is 0x0A in include/net/tcp_states.h).
func tcpListening(table string, port int) bool {
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[3] != "0A" {
			continue
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil && int(p) == port {
			return true
		}
	}
	return false
}

// iperf3Sum is one end.sum_* object of iperf3's --json report
// (iperf3 src/iperf_api.c, iperf_print_results).
type iperf3Sum struct {
	Seconds       *float64 `json:"seconds"`
	Bytes         *uint64  `json:"bytes"`
	BitsPerSecond *float64 `json:"bits_per_second"`
	Packets       *uint64  `json:"packets"`
	LostPackets   *uint64  `json:"lost_packets"`
	LostPercent   float64  `json:"lost_percent"`
}

// parseIperf3 reads the JSON report of an iperf3 UDP client (3.x).
func parseIperf3(r io.Reader) (FloodResult, error) {
	var doc struct {
		Error string `json:"error"`
		Start struct {
			TestStart struct {
				Protocol string `json:"protocol"`
			} `json:"test_start"`
		} `json:"start"`
		End struct {
			SumSent     *iperf3Sum `json:"sum_sent"`
			SumReceived *iperf3Sum `json:"sum_received"`
		} `json:"end"`
	}
	dec := json.NewDecoder(r)
	if err := dec.Decode(&doc); err != nil {
		return FloodResult{}, fmt.Errorf("parse iperf3 JSON: %w", err)
	}
	if doc.Error != "" {
		return FloodResult{}, fmt.Errorf("iperf3: %s", doc.Error)
	}
	if p := doc.Start.TestStart.Protocol; p != "UDP" {
		return FloodResult{}, fmt.Errorf("iperf3 JSON: protocol %q, want UDP", p)
	}
	sent, recv := doc.End.SumSent, doc.End.SumReceived
	if sent == nil || recv == nil {
		return FloodResult{}, errors.New("iperf3 JSON: end.sum_sent or end.sum_received missing (test did not finish?)")
	}
	if sent.Packets == nil || sent.BitsPerSecond == nil || recv.Packets == nil ||
		recv.LostPackets == nil || recv.BitsPerSecond == nil || recv.Seconds == nil {
		return FloodResult{}, errors.New("iperf3 JSON: UDP packet counts missing in end.sum_sent/sum_received")
	}
	if *recv.LostPackets > *recv.Packets {
		return FloodResult{}, fmt.Errorf("iperf3 JSON: lost %d of %d packets", *recv.LostPackets, *recv.Packets)
	}
	return FloodResult{
		Seconds:               *recv.Seconds,
		SentPackets:           *sent.Packets,
		SentBitsPerSecond:     *sent.BitsPerSecond,
		ReceivedPackets:       *recv.Packets - *recv.LostPackets,
		LostPackets:           *recv.LostPackets,
		LostPercent:           recv.LostPercent,
		ReceivedBitsPerSecond: *recv.BitsPerSecond,
	}, nil
}

func (l *Lab) defaultAffinity() string {
	n := onlineCPUs()
	if l.opts.NoRPS || n < 2 {
		return ""
	}
	rps := l.opts.RPSCPU
	return strconv.Itoa((rps + 1) % n)
}
