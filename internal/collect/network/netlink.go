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
