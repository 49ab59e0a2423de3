package network

import (
	"github.com/vishvananda/netlink"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// Netlink answers the rtnetlink requests slowpath makes: link kinds
// (IFLA_INFO_KIND, which sysfs does not show) and root qdisc statistics
// (`tc -s qdisc`). Tests pass a fake.
type Netlink interface {
	LinkKinds() (map[string]string, error)
	RootQdiscs() (map[string]snapshot.QdiscCounters, error)
	// LinkStats returns the StatsKeys counters of every link from one
	// RTM_GETLINK dump (IFLA_STATS64), or nil when the source has none
	// (then the sampler reads /sys/class/net/IF/statistics).
	LinkStats() (map[string]map[string]uint64, error)
}

// LiveNetlink is Netlink over the kernel, in the caller's network namespace.
type LiveNetlink struct{}

// LinkKinds returns interface name -> link kind ("veth", "bond", ...);
// physical and paravirtual NICs report "device" and are left out.
func (LiveNetlink) LinkKinds() (map[string]string, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(links))
	for _, l := range links {
		if t := l.Type(); t != "device" {
			out[l.Attrs().Name] = t
		}
	}
	return out, nil
}

// RootQdiscs dumps every qdisc once and keeps each interface's root.
func (LiveNetlink) RootQdiscs() (map[string]snapshot.QdiscCounters, error) {
	qs, err := netlink.QdiscList(nil)
	if err != nil {
		return nil, err
	}
	links, err := netlink.LinkList()
	if err != nil {
		return nil, err
	}
	names := make(map[int]string, len(links))
	for _, l := range links {
		names[l.Attrs().Index] = l.Attrs().Name
	}
	out := map[string]snapshot.QdiscCounters{}
	for _, q := range qs {
		a := q.Attrs()
		if a.Parent != netlink.HANDLE_ROOT {
			continue
		}
		name, ok := names[a.LinkIndex]
		if !ok {
			continue
		}
		c := snapshot.QdiscCounters{Kind: q.Type()}
		if st := a.Statistics; st != nil && st.Queue != nil {
			c.Drops = uint64(st.Queue.Drops)
			c.Overlimits = uint64(st.Queue.Overlimits)
			c.Requeues = uint64(st.Queue.Requeues)
			c.Backlog = uint64(st.Queue.Qlen)
		}
		out[name] = c
	}
	return out, nil
}

// LinkStats dumps every link once: one netlink round trip instead of a
// dozen sysfs files per interface, each of which makes the driver gather
// all its statistics again (dev_get_stats). rx_nohandler is not in
// struct rtnl_link_stats64 as this library decodes it and is left out.
func (LiveNetlink) LinkStats() (map[string]map[string]uint64, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[string]uint64, len(links))
	for _, l := range links {
		st := l.Attrs().Statistics
		if st == nil {
			continue
		}
		out[l.Attrs().Name] = map[string]uint64{
			"rx_packets": st.RxPackets, "tx_packets": st.TxPackets,
			"rx_dropped": st.RxDropped, "rx_missed_errors": st.RxMissedErrors, "rx_fifo_errors": st.RxFifoErrors,
			"rx_over_errors": st.RxOverErrors, "rx_errors": st.RxErrors,
			"tx_dropped": st.TxDropped, "tx_fifo_errors": st.TxFifoErrors, "tx_errors": st.TxErrors,
			"tx_aborted_errors": st.TxAbortedErrors, "tx_carrier_errors": st.TxCarrierErrors,
		}
	}
	return out, nil
}
