package netlab

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/procfs"
)

// Counters is the drop evidence the lab reproduces, read at one moment.
type Counters struct {
	// SoftnetDropped and SoftnetSqueezed are per CPU (index = CPU) from
	// /proc/net/softnet_stat, which is global to the host: "dropped" counts
	// packets enqueue_to_backlog refused because the CPU's backlog held
	// netdev_max_backlog packets. The kernel keeps them as 32-bit counters.
	SoftnetDropped  []uint32
	SoftnetSqueezed []uint32
	// UDP counters of the receiver namespace (/proc/net/snmp is per netns).
	UDPInDatagrams  uint64
	UDPNoPorts      uint64 // datagrams to a port nobody listens on
	UDPRcvbufErrors uint64
	UDPInErrors     uint64
}

// ReadCounters reads softnet_stat of the host and the UDP counters of the
// receiver namespace.
func (l *Lab) ReadCounters() (Counters, error) {
	var c Counters
	fs, err := procfs.NewFS("/proc")
	if err != nil {
		return c, err
	}
	stats, err := fs.NetSoftnetStat()
	if err != nil {
		return c, fmt.Errorf("read /proc/net/softnet_stat: %w", err)
	}
	for _, s := range stats {
		cpu := int(s.Index)
		for len(c.SoftnetDropped) <= cpu {
			c.SoftnetDropped = append(c.SoftnetDropped, 0)
			c.SoftnetSqueezed = append(c.SoftnetSqueezed, 0)
		}
		c.SoftnetDropped[cpu] = s.Dropped
		c.SoftnetSqueezed[cpu] = s.TimeSqueezed
	}

	pid, err := l.holderPID()
	if err != nil {
		return c, err
	}
	p, err := fs.Proc(pid)
	if err != nil {
		return c, fmt.Errorf("receiver netns holder process: %w", err)
	}
	snmp, err := p.Snmp()
	if err != nil {
		return c, fmt.Errorf("read /proc/%d/net/snmp (receiver netns): %w", pid, err)
	}
	for _, f := range []struct {
		dst *uint64
		src *float64
		key string
	}{
		{&c.UDPInDatagrams, snmp.Udp.InDatagrams, "InDatagrams"},
		{&c.UDPNoPorts, snmp.Udp.NoPorts, "NoPorts"},
		{&c.UDPRcvbufErrors, snmp.Udp.RcvbufErrors, "RcvbufErrors"},
		{&c.UDPInErrors, snmp.Udp.InErrors, "InErrors"},
	} {
		if f.src == nil {
			return c, fmt.Errorf("/proc/%d/net/snmp: no Udp %s", pid, f.key)
		}
		*f.dst = uint64(*f.src)
	}
	return c, nil
}

func (l *Lab) holderPID() (int, error) {
	l.mu.Lock()
	h, done := l.holder, l.holderDone
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return 0, fmt.Errorf("netlab: lab is closed")
	}
	if h == nil || h.Process == nil {
		return 0, fmt.Errorf("netlab: no process in the receiver netns")
	}
	select {
	case <-done:
		// Killed by someone, or by its parent-death signal because the OS
		// thread that started it exited (a goroutine that ended while
		// locked to its thread): start another one.
		if err := l.startHolder(); err != nil {
			return 0, fmt.Errorf("netlab: receiver netns holder process %d exited, restart: %w", h.Process.Pid, err)
		}
		return l.holderPID()
	default:
	}
	return h.Process.Pid, nil
}

// Sub returns c - before, counter by counter. 32-bit softnet counters that
// wrapped in between still give the right delta.
func (c Counters) Sub(before Counters) Counters {
	d := Counters{
		UDPInDatagrams:  c.UDPInDatagrams - before.UDPInDatagrams,
		UDPNoPorts:      c.UDPNoPorts - before.UDPNoPorts,
		UDPRcvbufErrors: c.UDPRcvbufErrors - before.UDPRcvbufErrors,
		UDPInErrors:     c.UDPInErrors - before.UDPInErrors,
	}
	d.SoftnetDropped = subPerCPU(c.SoftnetDropped, before.SoftnetDropped)
	d.SoftnetSqueezed = subPerCPU(c.SoftnetSqueezed, before.SoftnetSqueezed)
	return d
}

func subPerCPU(after, before []uint32) []uint32 {
	out := make([]uint32, len(after))
	for i, v := range after {
		var b uint32
		if i < len(before) {
			b = before[i]
		}
		out[i] = v - b
	}
	return out
}

// TotalSoftnetDropped sums SoftnetDropped over all CPUs.
func (c Counters) TotalSoftnetDropped() uint64 {
	var n uint64
	for _, v := range c.SoftnetDropped {
		n += uint64(v)
	}
	return n
}

// String is a one-line summary for test logs.
func (c Counters) String() string {
	s := "softnet dropped"
	for i, v := range c.SoftnetDropped {
		s += " cpu" + strconv.Itoa(i) + "=" + strconv.FormatUint(uint64(v), 10)
	}
	return fmt.Sprintf("%s, udp in=%d no_ports=%d rcvbuf_errors=%d in_errors=%d", s, c.UDPInDatagrams, c.UDPNoPorts, c.UDPRcvbufErrors, c.UDPInErrors)
}

// FloodCounted runs Flood between two reads of the lab's counters and
// returns how they moved: what a flood test asserts on.
func (l *Lab) FloodCounted(ctx context.Context, duration time.Duration, opts FloodOptions) (FloodResult, Counters, error) {
	before, err := l.ReadCounters()
	if err != nil {
		return FloodResult{}, Counters{}, err
	}
	res, err := l.Flood(ctx, duration, opts)
	if err != nil {
		return res, Counters{}, err
	}
	after, err := l.ReadCounters()
	if err != nil {
		return res, Counters{}, err
	}
	return res, after.Sub(before), nil
}
