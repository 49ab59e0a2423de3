package netcheck

import (
	"fmt"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/snapshot"
)

func init() {
	check.Register(check.Check{
		ID:       "net.no-drop-reasons",
		Title:    "Kernel without skb drop reasons",
		Severity: check.Info,
		Run:      noDropReasons,
	})
}

const srcKernelBTF = "/sys/kernel/btf/vmlinux"

// noDropReasons says whether the kernel names its drops and, since that
// decides what `slowpath net drops` can do here, whether the tracer can
// run at all: it is a BTF tracepoint program (tp_btf/kfree_skb), which
// needs kernel BTF (CONFIG_DEBUG_INFO_BTF, /sys/kernel/btf/vmlinux) and
// Linux 5.5+, where BTF raw tracepoints arrived (commit ac4414b5ca47,
// "bpf: Attach raw_tp program with BTF via type name", merged for 5.5).
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
	tracer, tracerEv := tracerOffer(d, kernelRelease(in))
	if tracerEv != nil {
		ev = append(ev, *tracerEv)
	}
	refs := []string{"https://github.com/torvalds/linux/blob/master/include/net/dropreason-core.h"}
	switch d.Status {
	case "yes":
		sum := "the kernel names skb drop reasons"
		if !tracer.canRun && tracer.known {
			sum += "; " + tracer.why
		}
		return []check.Finding{{Status: check.Pass, Subject: "kernel", Summary: sum, Evidence: ev}}
	case "no":
		// What is lost and what still works, as `net drops` and the agent
		// behave on such a kernel (docs/drops.md, "Kernels without drop
		// reasons").
		sum := "This kernel does not say why it drops a packet (no reason on the kfree_skb tracepoint). " +
			"Lost: drops cannot be told apart by reason (two drops in one kernel function look the same), " +
			"and `slowpath agent --collector.drops` (slowpath_skb_drops_total by reason) refuses to start. " +
			"Still there: the kernel's drop counters (softnet_stat, /proc/net/snmp, the NIC's) that net.backlog-drops, " +
			"net.socket-rcvbuf and slowpath_net_drops_total read. "
		fix := "no setting enables it: skb drop reasons arrived in Linux 5.17 (some distributions backport them); use a newer kernel for reason-level attribution"
		switch {
		case !tracer.known:
			sum += "Whether `slowpath net drops` can run here is unknown: " + tracer.why + "; it needs kernel BTF (" + srcKernelBTF + ") and Linux 5.5+."
		case tracer.canRun:
			sum += tracer.why + ", so `slowpath net drops` runs here and attributes drops by location: " +
				"by the kernel function that dropped them (with --stacks, the caller of a free helper such as kfree_skb_list), " +
				"known drop sites mapped to layers (enqueue_to_backlog is the CPU backlog); " +
				"it counts every kfree_skb() free, so at unknown locations some are not drops."
		default:
			sum += "`slowpath net drops` " + tracer.why + "."
			fix += ". Meanwhile perf record -a -g -e skb:kfree_skb shows where drops happen on this kernel"
		}
		return []check.Finding{{
			Subject:     "kernel",
			Summary:     sum,
			Evidence:    ev,
			Remediation: comment(fix),
			References:  refs,
		}}
	default:
		return []check.Finding{{Status: check.Unknown, Subject: "kernel", Summary: "Could not tell whether the kernel names skb drop reasons: " + d.Detail + ". Mount tracefs (mount -t tracefs tracefs /sys/kernel/tracing) and collect again.", Evidence: ev, References: refs}}
	}
}

// offer is what the snapshot says about running `net drops` here.
type offer struct {
	known, canRun bool
	why           string
}

func tracerOffer(d *snapshot.DropReasons, release string) (offer, *check.Evidence) {
	ev := &check.Evidence{Source: srcKernelBTF, Key: "exists (`net drops` needs it)", Observed: d.KernelBTF, Expected: "yes"}
	switch d.KernelBTF {
	case "yes":
		if maj, mnr, ok := check.KernelVersion(release); ok && (maj < 5 || (maj == 5 && mnr < 5)) {
			return offer{known: true, why: fmt.Sprintf("cannot run on this kernel: kernel %s has BTF but predates BTF tracepoints (Linux 5.5)", release)}, ev
		}
		return offer{known: true, canRun: true, why: "Kernel BTF is present"}, ev
	case "no":
		return offer{known: true, why: "cannot run on this kernel: it needs kernel BTF (" + srcKernelBTF + ", CONFIG_DEBUG_INFO_BTF=y), which this kernel does not have"}, ev
	case "":
		return offer{why: "the snapshot does not say whether kernel BTF exists"}, nil
	default:
		return offer{why: "kernel BTF could not be checked"}, ev
	}
}

func kernelRelease(in *check.Input) string {
	if in.Snapshot == nil || in.Snapshot.Host == nil {
		return ""
	}
	return in.Snapshot.Host.KernelRelease
}
