package netcheck

import (
	"fmt"
	"math"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/netmodel"
	"github.com/slowpath/slowpath/internal/units"
)

func init() {
	check.Register(check.Check{
		ID:       "net.time-squeeze",
		Title:    "Softirq budget exhausted with packets left (time_squeeze)",
		Severity: check.Info,
		Run:      timeSqueeze,
		Watch:    squeezeWatch,
		Series: &check.Series{Name: "time_squeezes_per_second",
			Expr: `sum by ($node) (rate(slowpath_net_time_squeeze_total[$__rate_interval]))`},
	})
}

// squeezeWatch is what the check reads and its fix should lower.
var squeezeWatch = &check.Watch{Layer: netmodel.LayerBudget, Counters: []string{"softnet_time_squeeze"}}

func timeSqueeze(in *check.Input) []check.Finding {
	m := in.Network
	if m == nil || m.CPUs == 0 {
		return nil
	}
	cs := watched(m, squeezeWatch)
	refs := []string{"https://www.kernel.org/doc/html/latest/admin-guide/sysctl/net.html#netdev-budget"}
	if m.IntervalSeconds == 0 {
		if t := sumTotal(cs); t > 0 {
			return []check.Finding{{Status: check.Unknown, Subject: "softnet",
				Summary:  fmt.Sprintf("NAPI processing ran out of budget %d times since boot; %s.", t, oneSampleNote),
				Evidence: rateEvidence(srcSoftnet, cs, 4), References: refs}}
		}
		return []check.Finding{{Status: check.Pass, Subject: "softnet", Summary: "no time squeeze since boot"}}
	}
	up := rising(cs)
	if len(up) == 0 {
		return []check.Finding{{Status: check.Pass, Subject: "softnet", Summary: "no time squeeze during the sample interval"}}
	}
	targets, usecsUnknown := squeezeTargets(m)
	fix := raiseSysctls(m, targets)
	rem := comment("twice the current values; and spread receive work over more CPUs (RSS channels, RPS) when one CPU is saturated")
	if usecsUnknown {
		rem = comment("and net.core.netdev_budget_usecs to twice its current value (it was not read); spread receive work over more CPUs (RSS channels, RPS) when one CPU is saturated")
	}
	if fix != nil {
		rem = check.SysctlRemedy("net.time-squeeze", fix.Sysctls) + rem
	}
	f := check.Finding{
		Subject: "softnet",
		Summary: fmt.Sprintf("Receive softirq processing stops with packets still waiting %s times/s on %d CPU(s): it used up net.core.netdev_budget packets or netdev_budget_usecs. Packets left behind wait in rings and backlogs, which then overflow.", units.Rate(sumRate(up)), len(up)),
		Evidence: append(rateEvidence(srcSoftnet, up, 4),
			sysctlEvidence(m, "net.core.netdev_budget", expect(targets, "net.core.netdev_budget")),
			sysctlEvidence(m, "net.core.netdev_budget_usecs", expect(targets, "net.core.netdev_budget_usecs"))),
		Remediation: rem,
		References:  refs,
		Fix:         fix,
		// A squeeze is a round cut short, not a packet lost: a figure,
		// no share (the drops it causes are the ring's and backlog's).
		Cost: &check.Cost{Figure: fmt.Sprintf("%s receive rounds/s cut short with packets waiting", units.Rate(sumRate(up)))},
	}
	// Squeeze with drops on the same host is a cause, not a curiosity.
	if len(rising(counters(m, netmodel.LayerBacklog))) > 0 || len(rising(counters(m, netmodel.LayerRing))) > 0 {
		f.Severity = check.Warning
		f.Summary += " Drops are rising in the ring or backlog layer at the same time."
	}
	return []check.Finding{f}
}

// squeezeTargets doubles the current budgets, for the remedy and the
// plan alike. The kernel defaults are 300 packets and 2 * USEC_PER_SEC /
// HZ microseconds (8000 at HZ=250, 2000 at HZ=1000: net/core/hotdata.c,
// before 6.9 net/core/dev.c), so no fixed number is right for every
// kernel. An unread budget falls back to the default doubled; an unread
// time budget is left out (usecsUnknown), since its default is not known.
func squeezeTargets(m *netmodel.Model) (targets map[string]int64, usecsUnknown bool) {
	targets = map[string]int64{"net.core.netdev_budget": 600}
	if v, ok := m.Sysctls["net.core.netdev_budget"]; ok && v > 0 {
		targets["net.core.netdev_budget"] = doubled(v)
	}
	if v, ok := m.Sysctls["net.core.netdev_budget_usecs"]; ok && v > 0 {
		targets["net.core.netdev_budget_usecs"] = doubled(v)
	} else {
		usecsUnknown = true
	}
	return targets, usecsUnknown
}

// doubled is twice v, at most INT_MAX: both budgets are C ints
// (proc_dointvec), so a larger value is refused with EINVAL; one already
// there is left alone (raiseSysctls never proposes a value not above).
func doubled(v int64) int64 { return min(2*v, math.MaxInt32) }

// expect is the evidence's expected value of key: the target, or twice
// the current value in words when it is unknown.
func expect(targets map[string]int64, key string) string {
	if v, ok := targets[key]; ok {
		return fmt.Sprintf("%d", v)
	}
	return "TWICE_CURRENT"
}
