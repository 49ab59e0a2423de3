// Package network reads the host's network data path into snapshot.Net:
// interfaces with driver, rings, channels, queues and IRQs (sysfs, ethtool
// ioctl, rtnetlink), the receive-path sysctls, whether the kernel names skb
// drop reasons, and samples of every drop counter. It is the only network
// code that touches the host; everything it reads goes into the snapshot.
package network

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// DefaultInterval is the wait between the two counter samples of a live
// collection: long enough for a live problem to move its counters, short
// enough not to slow doctor down.
const DefaultInterval = time.Second

// Options configure network collection.
type Options struct {
	// Interval between the two counter samples; 0 takes one sample only,
	// and checks that need rates then report unknown.
	Interval time.Duration
	// Ethtool and Netlink answer the non-file requests. Nil means the live
	// kernel (SIOCETHTOOL ioctl, rtnetlink), used only when the roots are
	// live (hostfs.FS.Live); otherwise they are recorded as skipped. Tests
	// pass fakes.
	Ethtool Ethtool
	Netlink Netlink
	// Monotonic is the clock for sample timestamps; nil means CLOCK_MONOTONIC.
	Monotonic func() int64
	// Sleep waits between samples; nil means a context-aware time.Sleep.
	Sleep func(context.Context, time.Duration) error
}

// AddFlags registers the network collection flags on fs.
// Validate refuses a negative --net-interval (0 is one sample).
func (o Options) Validate() error {
	if o.Interval < 0 {
		return fmt.Errorf("--net-interval %v: want 0 (one sample) or more", o.Interval)
	}
	return nil
}

func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Interval = DefaultInterval
	fs.DurationVar(&o.Interval, "net-interval", DefaultInterval,
		"wait between the two samples of network drop counters (0 takes one sample: rates unknown)")
}

// Collect fills s.Net. What cannot be read is recorded in the manifest;
// expected absences (a driver without ring parameters) are recorded in the
// interface as unsupported instead.
func Collect(ctx context.Context, fs hostfs.FS, o Options, s *snapshot.Snapshot) {
	if ctx == nil {
		ctx = context.Background()
	}
	src, closeSrc := o.sources(fs)
	defer closeSrc()
	n := &snapshot.Net{}
	s.Net = n

	names, err := ListInterfaces(fs)
	if err != nil {
		s.AddError("net.interfaces", fs.SysPath("class", "net"), err)
	}
	var kinds map[string]string
	if src.nl != nil {
		if kinds, err = src.nl.LinkKinds(); err != nil {
			s.AddError("net.netlink", "RTM_GETLINK", err)
		}
	} else {
		// Once for the whole source: per interface it would only repeat.
		s.AddError("net.netlink", "RTM_GETLINK, RTM_GETQDISC", fs.NotLive())
	}
	if src.eth == nil {
		s.AddError("net.ethtool", "SIOCETHTOOL", fs.NotLive())
	}
	irqs, err := readInterrupts(fs)
	if err != nil {
		s.AddError("net.irqs", fs.ProcPath("interrupts"), err)
	}
	for _, name := range names {
		ifc, err := readInterface(fs, name)
		if err != nil {
			s.AddError("net.interfaces", fs.SysPath("class", "net", name), err)
			continue
		}
		ifc.Kind = kinds[name]
		if src.eth != nil {
			addEthtool(src.eth, &ifc, s)
		}
		ifc.IRQs = interfaceIRQs(fs, irqs, ifc.Name, ifc.BusInfo)
		n.Interfaces = append(n.Interfaces, ifc)
	}
	n.Sysctls = readSysctls(fs, s)
	n.DropReasons = readDropReasons(fs)
	n.DropReasons.KernelBTF = kernelBTF(fs)

	sm := newSampler(fs, o, src)
	first, errs := sm.Sample()
	for _, e := range errs {
		// The sampler lists the interfaces again: an error Collect has
		// already recorded for the same source is not recorded twice.
		if slices.ContainsFunc(s.Manifest.Errors, func(m snapshot.CollectError) bool {
			return m.Collector == e.Collector && m.Path == e.Path
		}) {
			continue
		}
		s.AddError(e.Collector, e.Path, e.Err)
	}
	n.Samples = append(n.Samples, first)
	if o.Interval <= 0 {
		return
	}
	sleep := o.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	if err := sleep(ctx, o.Interval); err != nil {
		s.AddError("net.samples", "second sample", err)
		return
	}
	second, _ := sm.Sample() // errors repeat those of the first sample
	n.Samples = append(n.Samples, second)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

type sources struct {
	eth Ethtool
	nl  Netlink
}

// sources returns the ethtool and netlink sources, opening live ones when
// none were given and the roots are live; a nil source is one not used
// (the roots are another host's). A live source that cannot be opened
// answers every request with the error, so it is recorded per request
// like any other.
func (o Options) sources(fs hostfs.FS) (sources, func()) {
	src := sources{eth: o.Ethtool, nl: o.Netlink}
	closeFn := func() {}
	if !fs.Live {
		return src, closeFn
	}
	if src.eth == nil {
		e, err := NewLiveEthtool()
		if err != nil {
			src.eth = failedEthtool{err}
		} else {
			src.eth = e
			closeFn = e.Close
		}
	}
	if src.nl == nil {
		src.nl = LiveNetlink{}
	}
	return src, closeFn
}

func (o Options) monotonic() func() int64 {
	if o.Monotonic != nil {
		return o.Monotonic
	}
	return monotonicNow
}
