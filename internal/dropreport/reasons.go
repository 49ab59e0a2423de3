package dropreport

import (
	"fmt"
	"strings"

	"github.com/slowpath/slowpath/internal/check"
	// The check packages register their checks, and the drop reasons
	// they own, in init.
	_ "github.com/slowpath/slowpath/internal/check/netcheck"
	_ "github.com/slowpath/slowpath/internal/check/storagecheck"
)

// ReasonName turns an enum skb_drop_reason constant name into the name
// slowpath shows: SKB_DROP_REASON_CPU_BACKLOG -> CPU_BACKLOG. It reports
// false for enum entries that are not reasons (SKB_DROP_REASON_MAX, the
// subsystem mask); SKB_NOT_DROPPED_YET and SKB_CONSUMED keep their name
// without the SKB_ prefix.
func ReasonName(enumName string) (string, bool) {
	switch enumName {
	case "SKB_DROP_REASON_MAX", "SKB_DROP_REASON_SUBSYS_MASK", "SKB_DROP_REASON_SUBSYS_SHIFT":
		return "", false
	}
	if n, ok := strings.CutPrefix(enumName, "SKB_DROP_REASON_"); ok {
		return n, true
	}
	if n, ok := strings.CutPrefix(enumName, "SKB_"); ok {
		return n, true
	}
	return enumName, enumName != ""
}

// Name returns the name of reason value v on kernel k. Values the kernel's
// enum does not name (subsystem reasons such as mac80211's, which set the
// upper 16 bits) are shown by number.
func (k Kernel) Name(v uint32) string {
	if n, ok := k.Reasons[v]; ok {
		return n
	}
	if sub := v >> 16; sub != 0 {
		return fmt.Sprintf("SUBSYS_%d_%d", sub, v&0xffff)
	}
	return fmt.Sprintf("REASON_%d", v)
}

// Meaning places a drop reason in the data path: the layer it belongs to
// (the layers of `slowpath net watch` where they coincide), the slowpath
// check that looks at the same problem, and a one-line hint.
type Meaning struct {
	Layer string `json:"layer"`
	Check string `json:"check,omitempty"`
	Hint  string `json:"hint,omitempty"`
}

// Layers. ring, driver, backlog, budget, socket and qdisc are shared with
// `slowpath net watch`; the others only occur as drop reasons.
const (
	LayerRing      = "ring"
	LayerDriver    = "driver"
	LayerBacklog   = "backlog"
	LayerSocket    = "socket"
	LayerQdisc     = "qdisc"
	LayerNetfilter = "netfilter"
	LayerIP        = "ip"
	LayerTCP       = "tcp"
	LayerUDP       = "udp"
	LayerNeigh     = "neighbour"
	LayerTC        = "tc"
	LayerXDP       = "xdp"
	LayerDevice    = "device"
	LayerMemory    = "memory"
	LayerOther     = "other"
	LayerUnknown   = "unknown"
)

// reason is what slowpath knows of one drop reason.
type reason struct {
	Layer, Hint string
}

// exact places the reasons that matter for the data path
// (include/net/dropreason-core.h for the definitions).
var exact = map[string]reason{
	"CPU_BACKLOG":     {LayerBacklog, "per-CPU input backlog full: raise net.core.netdev_max_backlog, spread RPS"},
	"SOCKET_RCVBUFF":  {LayerSocket, "socket receive buffer full: the application reads too slowly or SO_RCVBUF/net.core.rmem_max is small"},
	"PROTO_MEM":       {LayerSocket, "protocol memory limit reached (net.ipv4.udp_mem / tcp_mem)"},
	"SOCKET_BACKLOG":  {LayerSocket, "socket backlog full while the socket was owned by user"},
	"NO_SOCKET":       {LayerSocket, "no socket listens on the destination port"},
	"SOCKET_CLOSE":    {LayerSocket, "socket closed with data queued"},
	"SOCKET_FILTER":   {LayerSocket, "a socket filter (BPF/SO_ATTACH_FILTER) dropped it"},
	"QUEUE_PURGE":     {LayerSocket, "queued data freed when a socket or queue was purged (usually a close)"},
	"NETFILTER_DROP":  {LayerNetfilter, "a firewall rule dropped it: see nft list ruleset / iptables-save"},
	"QDISC_DROP":      {LayerQdisc, "queueing discipline full: see tc -s qdisc"},
	"QDISC_OVERLIMIT": {LayerQdisc, "queueing discipline over its limit: see tc -s qdisc"},
	"QDISC_CONGESTED": {LayerQdisc, "queueing discipline congested: see tc -s qdisc"},
	"FULL_RING":       {LayerRing, "device ring full"},
	"NOMEM":           {LayerMemory, "allocation failed"},
	"PFMEMALLOC":      {LayerMemory, "pfmemalloc skb to a socket that may not use reserves"},
	"XDP":             {LayerXDP, "an XDP program dropped it"},
	"TC_INGRESS":      {LayerTC, "a tc ingress filter dropped it"},
	"TC_EGRESS":       {LayerTC, "a tc egress filter dropped it"},
	"OTHERHOST":       {LayerIP, "packet for another host (promiscuous mode): normal on bridges"},
	"IP_RPFILTER":     {LayerIP, "reverse path filter (net.ipv4.conf.*.rp_filter)"},
	"UDP_CSUM":        {LayerUDP, "bad UDP checksum"},
	"NOT_SPECIFIED":   {LayerUnknown, "freed without a reason: mostly not a drop (see docs/drops.md)"},
	"DEV_READY":       {LayerDevice, "device not up or not ready"},
	"DEV_HDR":         {LayerDevice, "bad link-layer header"},
}

// prefixes classify the many reasons not listed above, so reasons added by
// newer kernels still land in a layer.
var prefixes = []struct {
	prefix string
	layer  string
}{
	{"TCP_", LayerTCP},
	{"UDP_", LayerUDP},
	{"IPV6", LayerIP},
	{"IP_", LayerIP},
	{"ICMP_", LayerIP},
	{"FRAG_", LayerIP},
	{"DUP_FRAG", LayerIP},
	{"PKT_TOO_", LayerIP},
	{"NEIGH_", LayerNeigh},
	{"QDISC_", LayerQdisc},
	{"FQ_", LayerQdisc},
	{"CAKE_", LayerQdisc},
	{"DUALPI2_", LayerQdisc},
	{"TC_", LayerTC},
	{"XDP", LayerXDP},
	{"SOCKET_", LayerSocket},
	{"UNIX_", LayerSocket},
	{"SKB_", LayerDevice},
	{"DEV_", LayerDevice},
	{"TAP_", LayerDevice},
	{"VXLAN_", LayerDevice},
	{"MAC_", LayerDevice},
}

// checkOf names the check that looks at each reason's problem: the checks
// declare the reasons they own (check.Check.DropReasons).
var checkOf = func() map[string]string {
	m := map[string]string{}
	for _, c := range check.All() {
		for _, r := range c.DropReasons {
			m[r] = c.ID
		}
	}
	return m
}()

// MeaningOf returns the layer, check and hint for a reason name.
func MeaningOf(reason string) Meaning {
	if r, ok := exact[reason]; ok {
		return Meaning{Layer: r.Layer, Check: checkOf[reason], Hint: r.Hint}
	}
	for _, p := range prefixes {
		if strings.HasPrefix(reason, p.prefix) {
			return Meaning{Layer: p.layer}
		}
	}
	return Meaning{Layer: LayerOther}
}

// knownLocations names the functions where drops happen on kernels without
// drop reasons (before 5.17), where only the location tells them apart.
// Names follow the reason the kernel later gave the same drop. Each is the
// caller of kfree_skb() on the drop path in Linux 5.10
// (include/trace/events/skb.h: kfree_skb's location is
// __builtin_return_address(0), net/core/skbuff.c kfree_skb): e.g.
// enqueue_to_backlog frees at its drop: label after sd->dropped++
// (net/core/dev.c), as oracle/bpftune's backlog tuner detects backlog
// drops on such kernels. Static functions a build inlines are not
// locations: Debian's 5.10 inlines __dev_xmit_skb into __dev_queue_xmit
// and __udp_queue_rcv_skb into udp_queue_rcv_one_skb (neither is a
// function in its BTF), so their callers are listed too.
var knownLocations = map[string]struct {
	reason string
	hint   string
}{
	"enqueue_to_backlog":         {"CPU_BACKLOG", "backlog"},
	"__udp_enqueue_schedule_skb": {"SOCKET_RCVBUFF", "udp socket buffer"},
	"__udp_queue_rcv_skb":        {"SOCKET_RCVBUFF", "udp socket buffer"},
	"udp_queue_rcv_one_skb":      {"SOCKET_RCVBUFF", "udp socket buffer (also socket filter and checksum drops, freed in the same function)"},
	"sock_queue_rcv_skb":         {"SOCKET_RCVBUFF", "socket buffer"},
	"__udp4_lib_rcv":             {"NO_SOCKET", "udp: no socket, or a short or bad-checksum datagram"},
	"__udp6_lib_rcv":             {"NO_SOCKET", "udp: no socket, or a short or bad-checksum datagram"},
	"tcp_v4_rcv":                 {"TCP_", "tcp receive"},
	"tcp_v6_rcv":                 {"TCP_", "tcp receive"},
	"nf_hook_slow":               {"NETFILTER_DROP", "netfilter"},
	"__dev_queue_xmit":           {"QDISC_DROP", "qdisc"},
	"__dev_xmit_skb":             {"QDISC_DROP", "qdisc"},
	"pfifo_fast_enqueue":         {"QDISC_DROP", "qdisc"},
	"ip_rcv_core":                {"IP_INHDR", "ip header"},
	"ip_rcv_finish_core":         {"IP_INNOROUTES", "ip route"},
	"ip_error":                   {"IP_INNOROUTES", "ip route"},
	"unix_stream_connect":        {"UNIX_", "unix socket"},
}

// freeHelpers free an skb for their caller: as a drop location they say
// nothing (kfree_skb_list frees a whole list for whoever dropped it), so
// the caller on the stack is looked at instead (net/core/skbuff.c).
var freeHelpers = map[string]bool{
	"kfree_skb":              true,
	"kfree_skb_list":         true,
	"kfree_skb_list_reason":  true,
	"kfree_skb_reason":       true,
	"sk_skb_reason_drop":     true,
	"kfree_skb_partial":      true,
	"__kfree_skb":            true,
	"skb_release_data":       true,
	"skb_queue_purge":        true,
	"skb_queue_purge_reason": true,
	"__skb_queue_purge":      true,
}

// LocationMeaning names a drop location on kernels without reasons:
// enqueue_to_backlog is the backlog. ok is false for unknown functions.
func LocationMeaning(function string) (name string, m Meaning, ok bool) {
	l, ok := knownLocations[function]
	if !ok {
		return "", Meaning{Layer: LayerUnknown}, false
	}
	m = MeaningOf(l.reason)
	if m.Layer == LayerOther {
		m = Meaning{Layer: LayerUnknown}
	}
	return l.hint, m, true
}

// How a drop was attributed (ReasonCount.AttributedBy).
const (
	// ByReason: the kernel's own drop reason.
	ByReason = "reason"
	// ByLocation: the function that freed the packet (kfree_skb's caller).
	ByLocation = "location"
	// ByStack: the location was a free helper (kfree_skb_list, ...), and
	// its nearest caller on the packet's kernel stack names the drop.
	ByStack = "stack"
)

// AttributeLocation attributes a drop on a kernel without reasons. loc is
// the function that freed the packet; frames its kernel stack, innermost
// first, without the tracing frames (nil without a stack). A known drop
// site at loc wins; a free helper at loc is looked through to the first
// known drop site among its callers; anything else stays at loc, unknown.
func AttributeLocation(loc string, frames []string) (site, by string) {
	if _, ok := knownLocations[loc]; ok || !freeHelpers[loc] {
		return loc, ByLocation
	}
	for _, f := range frames {
		if f == loc || freeHelpers[f] {
			continue
		}
		// The first caller that is not a helper dropped the packet, known
		// site or not: a known site further out only called it.
		return f, ByStack
	}
	return loc, ByLocation
}
