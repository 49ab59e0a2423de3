package netcheck

import (
	"fmt"
	"math"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/netmodel"
	"github.com/slowpath/slowpath/internal/units"
)

const (
	keyBacklog = "net.core.netdev_max_backlog"
	// kernelDefaultBacklog is netdev_max_backlog's default (net/core/net-sysfs.c, Documentation/admin-guide/sysctl/net.rst).
	kernelDefaultBacklog = 1000
	// burstWindow is how long a CPU's backlog must absorb line-rate
	// arrivals: softirq processing can be held off for a scheduler tick or
	// more when ksoftirqd competes with the workload (10 ms at HZ=100).
	burstWindowSeconds    = 0.010
	maxRecommendedBacklog = 65536
)

func init() {
	check.Register(check.Check{
		ID:       idBacklogDrops,
		Title:    "Per-CPU input backlog overflowing (net.core.netdev_max_backlog)",
		Severity: check.Warning,
		Run:      backlogDrops,
		Watch:    backlogWatch,
		Series: &check.Series{Name: "backlog_drops_per_second",
			Expr: `sum by ($node) (rate(slowpath_net_drops_total{layer="backlog"}[$__rate_interval]))`},
		DropReasons: []string{"CPU_BACKLOG"},
	})
}

const idBacklogDrops = "net.backlog-drops"

// backlogWatch is what the check reads and its fix should lower.
var backlogWatch = &check.Watch{Layer: netmodel.LayerBacklog, Counters: []string{"softnet_dropped"}}

func backlogDrops(in *check.Input) []check.Finding {
	m := in.Network
	if m == nil {
		return nil
	}
	cs := watched(m, backlogWatch)
	if m.CPUs == 0 {
		// Missing input is not a finding about the host: info, like an
		// incomplete storage path, so it does not fail --fail-on warning.
		return []check.Finding{{Status: check.Unknown, Severity: check.Info, Subject: "softnet",
			Summary: "/proc/net/softnet_stat was not read (see Not collected), so backlog drops cannot be checked: collect again where it is readable (--path.procfs must point at a procfs)."}}
	}
	cur, haveCur := m.Sysctls[keyBacklog]
	rec, why := recommendBacklog(m, cur)
	refs := []string{"https://www.kernel.org/doc/html/latest/admin-guide/sysctl/net.html#netdev-max-backlog", "https://www.kernel.org/doc/html/latest/networking/scaling.html"}
	// The remedy and the plan come from one decision: a backlog already at
	// or above what this check proposes is never lowered; the remedy then
	// points at what a larger backlog cannot fix.
	sysFix := raiseSysctls(m, map[string]int64{keyBacklog: rec})
	var fix string
	if sysFix != nil {
		fix = check.SysctlRemedy(idBacklogDrops, sysFix.Sysctls) + comment(why)
	} else {
		fix = comment(fmt.Sprintf("%s is already %d, at or above the %d this check proposes (%s): a larger backlog is not the remedy. Spread the receive load over more CPUs (more RSS queues, or RPS: rps_cpus of each rx queue, Documentation/networking/scaling.rst; see net.time-squeeze) or find what keeps the CPU from draining its backlog (slowpath net watch).", keyBacklog, cur, rec, why))
	}
	if m.IntervalSeconds == 0 {
		if t := sumTotal(cs); t > 0 {
			return []check.Finding{{
				Status:     check.Unknown,
				Subject:    "softnet",
				Summary:    fmt.Sprintf("The per-CPU input backlog dropped %d packets since boot; %s.", t, oneSampleNote),
				Evidence:   append(rateEvidence(srcSoftnet, cs, 4), sysctlEvidence(m, keyBacklog, "")),
				References: refs,
			}}
		}
		return []check.Finding{{Status: check.Pass, Subject: "softnet", Summary: "no backlog drops since boot"}}
	}
	up := rising(cs)
	if len(up) == 0 {
		return []check.Finding{{Status: check.Pass, Subject: "softnet", Summary: "no backlog drops during the sample interval"}}
	}
	processed, haveProcessed := softnetRate(in.Snapshot, m)
	sum := fmt.Sprintf("The per-CPU input backlog is full and the kernel drops packets before any protocol sees them: %s/s on %d CPU(s).", units.Rate(sumRate(up)), len(up))
	if haveCur {
		sum += fmt.Sprintf(" Each CPU queues at most %s=%d packets.", keyBacklog, cur)
	}
	if len(up) == 1 && m.CPUs > 1 {
		sum += " All drops are on one CPU: receive steering (RPS/RSS) sends every packet there, so spreading the load helps as much as a larger backlog."
	}
	return []check.Finding{{
		Subject:     "softnet",
		Summary:     sum,
		Evidence:    append(rateEvidence(srcSoftnet, up, 4), sysctlEvidence(m, keyBacklog, fmt.Sprintf("%d", rec))),
		Remediation: fix,
		References:  refs,
		Fix:         sysFix,
		Cost:        dropCost(sumRate(up), processed, haveProcessed, "per-CPU backlog"),
	}}
}

// recommendBacklog sizes netdev_max_backlog from the fastest up link: the
// packets that arrive at line rate in burstWindow with full-MTU frames,
// rounded up to a power of two. At 25 Gb/s and MTU 1500 that is 20834 ->
// 32768.
func recommendBacklog(m *netmodel.Model, cur int64) (int64, string) {
	var speed int64
	mtu := 1500
	var via string
	for _, ifc := range m.Interfaces {
		if ifc.SpeedMbps == nil || ifc.OperState != "up" || ifc.Kind != "" {
			continue
		}
		if *ifc.SpeedMbps > speed {
			speed, via = *ifc.SpeedMbps, ifc.Name
			if ifc.MTU > 0 {
				mtu = ifc.MTU
			}
		}
	}
	if speed == 0 {
		rec := pow2(max(cur*4, kernelDefaultBacklog))
		rec = min(rec, maxRecommendedBacklog)
		return rec, fmt.Sprintf("no link speed known: %d is four times the current value (at least the kernel default %d); watch softnet drops with `slowpath net watch` and raise further if they continue", rec, kernelDefaultBacklog)
	}
	pkts := float64(speed) * 1e6 * burstWindowSeconds / float64(mtu*8)
	rec := pow2(int64(math.Ceil(pkts)))
	why := fmt.Sprintf("%s: %d Mb/s at MTU %d is %.0f packets per %.0f ms; %d is the next power of two", via, speed, mtu, pkts, burstWindowSeconds*1000, rec)
	// Drops at the current value prove it too small, whatever the formula says.
	if twice := pow2(cur * 2); twice > rec {
		rec = twice
		why += fmt.Sprintf(", but drops at %d call for at least twice that: %d", cur, rec)
	}
	rec = max(rec, kernelDefaultBacklog)
	rec = min(rec, maxRecommendedBacklog)
	return rec, why + ". Memory is only used while packets wait"
}

func pow2(v int64) int64 {
	p := int64(1)
	for p < v {
		p <<= 1
	}
	return p
}
