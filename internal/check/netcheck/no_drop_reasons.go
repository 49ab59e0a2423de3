package netcheck

import (
	"github.com/slowpath/slowpath/internal/check"
)

func init() {
	check.Register(check.Check{
		ID:       "net.no-drop-reasons",
		Title:    "Kernel without skb drop reasons",
		Severity: check.Info,
		Run:      noDropReasons,
	})
}

func noDropReasons(in *check.Input) []check.Finding {
	m := in.Network
	if m == nil {
		return nil
	}
	d := m.DropReasons
	if d == nil {
		return []check.Finding{{Status: check.Unknown, Subject: "kernel", Summary: "whether the kernel names skb drop reasons was not collected"}}
	}
	ev := []check.Evidence{{Source: d.Source, Observed: d.Status + ": " + d.Detail, Expected: "yes"}}
	if d.Source == "" {
		ev[0].Source = "tracefs, kernel BTF"
	}
	refs := []string{"https://github.com/torvalds/linux/blob/master/include/net/dropreason-core.h"}
	switch d.Status {
	case "yes":
		return []check.Finding{{Status: check.Pass, Subject: "kernel", Summary: "the kernel names skb drop reasons", Evidence: ev}}
	case "no":
		return []check.Finding{{
			Subject:     "kernel",
			Summary:     "This kernel does not say why it drops a packet (no reason on the kfree_skb tracepoint). `slowpath net drops` will attribute drops by kernel stack instead of by reason, which is coarser.",
			Evidence:    ev,
			Remediation: comment("no setting enables it: skb drop reasons arrived in Linux 5.17 (some distributions backport them); use a newer kernel for reason-level attribution"),
			References:  refs,
		}}
	default:
		return []check.Finding{{Status: check.Unknown, Subject: "kernel", Summary: "Could not tell whether the kernel names skb drop reasons: " + d.Detail + ". Mount tracefs (mount -t tracefs tracefs /sys/kernel/tracing) and collect again.", Evidence: ev, References: refs}}
	}
}
