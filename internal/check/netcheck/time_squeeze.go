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
	budget, usecs := squeezeRemedy(m)
	f := check.Finding{
		Subject: "softnet",
		Summary: fmt.Sprintf("Receive softirq processing stops with packets still waiting %s times/s on %d CPU(s): it used up net.core.netdev_budget packets or netdev_budget_usecs. Packets left behind wait in rings and backlogs, which then overflow.", fmtRate(sumRate(up)), len(up)),
		Evidence: append(rateEvidence(srcSoftnet, up, 4),
			sysctlEvidence(m, "net.core.netdev_budget", budget),
			sysctlEvidence(m, "net.core.netdev_budget_usecs", usecs)),
		Remediation: fmt.Sprintf("sysctl -w net.core.netdev_budget=%s net.core.netdev_budget_usecs=%s\n", budget, usecs) +
			comment("twice the current values; and spread receive work over more CPUs (RSS channels, RPS) when one CPU is saturated"),
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

// squeezeRemedy doubles the current budgets. The kernel defaults are 300
// packets and 2 * USEC_PER_SEC / HZ microseconds (8000 at HZ=250, 2000 at
// HZ=1000: net/core/hotdata.c, before 6.9 net/core/dev.c), so no fixed
// number is right for every kernel. Unknown values fall back to the
// default budget doubled and to a word for the time budget.
func squeezeRemedy(m *netmodel.Model) (budget, usecs string) {
	budget, usecs = "600", "TWICE_CURRENT"
	if v, ok := m.Sysctls["net.core.netdev_budget"]; ok && v > 0 {
		budget = fmt.Sprintf("%d", 2*v)
	}
	if v, ok := m.Sysctls["net.core.netdev_budget_usecs"]; ok && v > 0 {
		usecs = fmt.Sprintf("%d", 2*v)
	}
	return budget, usecs
}
