package network

import (
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// StatsKeys are the /sys/class/net/IF/statistics files a sample reads:
// packet totals for context and every drop and error counter of struct
// rtnl_link_stats64 that means a packet was lost on receive or transmit
// (Documentation/networking/statistics.rst).
var StatsKeys = []string{
	"rx_packets", "tx_packets",
	"rx_dropped", "rx_missed_errors", "rx_fifo_errors", "rx_over_errors", "rx_errors", "rx_nohandler",
	"tx_dropped", "tx_fifo_errors", "tx_errors", "tx_aborted_errors", "tx_carrier_errors",
}

// Sampler reads only counters: what `slowpath net watch` reads every
// interval, and what the collector reads twice. It lists interfaces each
// time (interfaces come and go) but reads no static attributes.
type Sampler struct {
	fs   hostfs.FS
	src  sources
	mono func() int64
	// noStats remembers interfaces whose driver has no ethtool stats, so
	// later samples skip the ioctl.
	noStats map[string]bool
	// linkStatsByNetlink reads link counters with one netlink dump
	// instead of sysfs files.
	linkStatsByNetlink bool
	buf                [32]byte // a u64 in decimal and a newline fit
}

// NewSampler returns a sampler over the host roots f. The caller closes it.
func NewSampler(f hostfs.FS, o Options) *Sampler {
	src, _ := o.sources(f)
	return newSampler(f, o, src)
}

func newSampler(f hostfs.FS, o Options, src sources) *Sampler {
	return &Sampler{fs: f, src: src, mono: o.monotonic(),
		// Netlink answers for the caller's own namespace and host: use it
		// for link counters only when sysfs is the live one too.
		linkStatsByNetlink: o.Netlink == nil && src.nl != nil}
}

// Close releases the ethtool socket when the sampler opened it.
func (s *Sampler) Close() {
	if c, ok := s.src.eth.(interface{ Close() }); ok {
		c.Close()
	}
}

// SampleError is what one sample could not read.
type SampleError struct {
	Collector, Path string
	Err             error
}

// Sample reads every drop counter once.
func (s *Sampler) Sample() (snapshot.NetSample, []SampleError) {
	var errs []SampleError
	smp := snapshot.NetSample{MonotonicNS: s.mono()}
	names, err := ListInterfaces(s.fs)
	if err != nil {
		errs = append(errs, SampleError{"net.interfaces", s.fs.SysPath("class", "net"), err})
	}
	var qd map[string]snapshot.QdiscCounters
	if s.src.nl != nil {
		if qd, err = s.src.nl.RootQdiscs(); err != nil {
			errs = append(errs, SampleError{"net.qdisc", "RTM_GETQDISC", err})
		}
	}
	if s.noStats == nil {
		s.noStats = map[string]bool{}
	}
	var linkStats map[string]map[string]uint64
	if s.linkStatsByNetlink {
		if linkStats, err = s.src.nl.LinkStats(); err != nil {
			errs = append(errs, SampleError{"net.stats", "RTM_GETLINK", err})
		}
	}
	for _, name := range names {
		c := snapshot.NetCounters{Name: name}
		if st, ok := linkStats[name]; ok {
			c.Stats = st
		} else {
			c.Stats, errs = s.readStatistics(name, errs)
		}
		if s.src.eth != nil && !s.noStats[name] {
			all, err := s.src.eth.Stats(name)
			switch {
			case err == nil:
				c.Driver = filterDriverStats(all)
			case isUnsupported(err):
				s.noStats[name] = true
			default:
				errs = append(errs, SampleError{"net.ethtool.stats", "SIOCETHTOOL " + name, err})
			}
		}
		if q, ok := qd[name]; ok {
			c.Qdisc = &q
		}
		smp.Interfaces = append(smp.Interfaces, c)
	}
	sort.Slice(smp.Interfaces, func(i, j int) bool { return smp.Interfaces[i].Name < smp.Interfaces[j].Name })
	sn, width, err := readSoftnet(s.fs)
	if err != nil {
		errs = append(errs, SampleError{"net.softnet", s.fs.ProcPath("net", "softnet_stat"), err})
	}
	smp.Softnet, smp.SoftnetColumns = sn, width
	snmp, serrs := readSNMP(s.fs)
	errs = append(errs, serrs...)
	if len(snmp) > 0 {
		smp.SNMP = snmp
	}
	return smp, errs
}

// monotonicNow is CLOCK_MONOTONIC in nanoseconds: sample intervals must not
// jump with wall-clock changes.
func monotonicNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// readStatistics reads /sys/class/net/IF/statistics/<StatsKeys>.
func (s *Sampler) readStatistics(name string, errs []SampleError) (map[string]uint64, []SampleError) {
	var out map[string]uint64
	dir := s.fs.SysPath("class", "net", name, "statistics")
	for _, k := range StatsKeys {
		p := dir + "/" + k
		v, err := s.readCounterFile(p)
		if err != nil {
			if hostfs.Classify(err) != hostfs.KindMissing {
				errs = append(errs, SampleError{"net.stats", p, err})
			}
			continue
		}
		if out == nil {
			out = make(map[string]uint64, len(StatsKeys))
		}
		out[k] = v
	}
	return out, errs
}

// readCounterFile reads a one-number sysfs file with open, read and close
// only (os.ReadFile adds an fstat and a second read): a 64-NIC host has
// hundreds of these per sample.
func (s *Sampler) readCounterFile(p string) (uint64, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	n, err := unix.Read(fd, s.buf[:])
	unix.Close(fd)
	if err != nil {
		return 0, &fs.PathError{Op: "read", Path: p, Err: err}
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(s.buf[:max(n, 0)])), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", p, err)
	}
	return v, nil
}
