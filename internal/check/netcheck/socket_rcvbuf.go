package netcheck

import (
	"fmt"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/netmodel"
	"github.com/slowpath/slowpath/internal/units"
)

const (
	keyRmemMax = "net.core.rmem_max"
	// rcvbufMax is the rmem_max this check proposes (25 MiB); a larger
	// one is kept.
	rcvbufMax = 26214400
)

func init() {
	check.Register(check.Check{
		ID:       idSocketRcvbuf,
		Title:    "UDP receive buffers overflowing (RcvbufErrors)",
		Severity: check.Warning,
		Run:      socketRcvbuf,
		Watch:    rcvbufWatch,
		// A full receive buffer, or the protocol's memory limit (udp_mem,
		// tcp_mem) reached (include/net/dropreason-core.h).
		DropReasons: []string{"SOCKET_RCVBUFF", "PROTO_MEM"},
	})
}

const idSocketRcvbuf = "net.socket-rcvbuf"

// rcvbufWatch is what the check reads and its fix should lower.
var rcvbufWatch = &check.Watch{Layer: netmodel.LayerSocket, Counters: []string{"Udp.RcvbufErrors", "Udp6.RcvbufErrors"}}

func socketRcvbuf(in *check.Input) []check.Finding {
	m := in.Network
	if m == nil {
		return nil
	}
	cs := watched(m, rcvbufWatch)
	refs := []string{"https://www.kernel.org/doc/html/latest/admin-guide/sysctl/net.html#rmem-max", "https://man7.org/linux/man-pages/man7/socket.7.html"}
	// One decision for the remedy and the plan: rmem_max is raised to
	// rcvbufMax, never lowered (a host at 33554432 was once told to set
	// 26214400).
	sysFix := raiseSysctls(m, map[string]int64{keyRmemMax: rcvbufMax})
	var fix string
	if sysFix != nil {
		fix = check.SysctlRemedy(idSocketRcvbuf, sysFix.Sysctls) + comment("then have the application ask for it: setsockopt(SO_RCVBUF); the kernel caps SO_RCVBUF at rmem_max (and doubles it for bookkeeping). rmem_default raises it for all sockets.")
	} else {
		fix = comment(fmt.Sprintf("%s is already %d, at or above the %d this check proposes: the cap is not the limit. Have the application ask for a larger buffer (setsockopt SO_RCVBUF, up to rmem_max; the kernel doubles it for bookkeeping), raise rmem_default for sockets that do not ask, or read faster (more reader threads, SO_REUSEPORT).", keyRmemMax, m.Sysctls[keyRmemMax], rcvbufMax))
	}
	if m.IntervalSeconds == 0 {
		if t := sumTotal(cs); t > 0 {
			return []check.Finding{{Status: check.Unknown, Subject: netmodel.SubjectSockets,
				Summary:  fmt.Sprintf("UDP sockets dropped %d datagrams since boot because their receive buffer was full; %s.", t, oneSampleNote),
				Evidence: append(rateEvidence(srcSNMP, cs, 2), sysctlEvidence(m, "net.core.rmem_max", "")), References: refs}}
		}
		return []check.Finding{{Status: check.Pass, Subject: netmodel.SubjectSockets, Summary: "no UDP receive buffer errors since boot"}}
	}
	up := rising(cs)
	if len(up) == 0 {
		return []check.Finding{{Status: check.Pass, Subject: netmodel.SubjectSockets, Summary: "no UDP receive buffer errors during the sample interval"}}
	}
	delivered, haveDelivered := flowRate(in.Snapshot, m, udpDelivered)
	return []check.Finding{{
		Subject: netmodel.SubjectSockets,
		Summary: fmt.Sprintf("UDP datagrams reach their socket and are dropped there because its receive buffer is full (%s/s). The application reads too slowly or its SO_RCVBUF is too small; these drops are at the socket, not in the NIC or the backlog.", units.Rate(sumRate(up))),
		Evidence: append(rateEvidence(srcSNMP, up, 2),
			sysctlEvidence(m, "net.core.rmem_max", "large enough for the SO_RCVBUF the application asks for"),
			sysctlEvidence(m, "net.core.rmem_default", "")),
		Remediation: fix,
		References:  refs,
		Fix:         sysFix,
		Cost:        dropCost(sumRate(up), delivered, haveDelivered, "UDP sockets"),
	}}
}
