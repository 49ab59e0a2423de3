package netcheck

import (
	"fmt"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/netmodel"
)

func init() {
	check.Register(check.Check{
		ID:       "net.time-squeeze",
		Title:    "Softirq budget exhausted with packets left (time_squeeze)",
		Severity: check.Info,
		Run:      timeSqueeze,
	})
}

func timeSqueeze(in *check.Input) []check.Finding {
	m := in.Network
	if m == nil || m.CPUs == 0 {
		return nil
	}
	cs := counters(m, netmodel.LayerBudget, "softnet_time_squeeze")
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
	f := check.Finding{
		Subject: "softnet",
		Summary: fmt.Sprintf("Receive softirq processing stops with packets still waiting %s times/s on %d CPU(s): it used up net.core.netdev_budget packets or netdev_budget_usecs. Packets left behind wait in rings and backlogs, which then overflow.", fmtRate(sumRate(up)), len(up)),
		Evidence: append(rateEvidence(srcSoftnet, up, 4),
			sysctlEvidence(m, "net.core.netdev_budget", "600"),
			sysctlEvidence(m, "net.core.netdev_budget_usecs", "8000")),
		Remediation: "sysctl -w net.core.netdev_budget=600 net.core.netdev_budget_usecs=8000\n" +
			comment("and spread receive work over more CPUs (RSS channels, RPS) when one CPU is saturated"),
		References: refs,
	}
	f.Fix = raiseSysctls(m, map[string]int64{"net.core.netdev_budget": 600, "net.core.netdev_budget_usecs": 8000})
	// Squeeze with drops on the same host is a cause, not a curiosity.
	if len(rising(counters(m, netmodel.LayerBacklog))) > 0 || len(rising(counters(m, netmodel.LayerRing))) > 0 {
		f.Severity = check.Warning
		f.Summary += " Drops are rising in the ring or backlog layer at the same time."
	}
	return []check.Finding{f}
}
