package netcheck

import (
	"fmt"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/netmodel"
	"github.com/slowpath/slowpath/internal/units"
)

// fastLinkMbps is where a small ring stops being enough even without
// visible drops: at 25 Gb/s a 1024-entry ring holds about 0.5 ms of
// 1500-byte frames, less than one scheduler tick of softirq delay.
const fastLinkMbps = 25000

// smallRing is the size below which a fast link's ring counts as small.
const smallRing = 4096

func init() {
	check.Register(check.Check{
		ID:       "net.ring-undersized",
		Title:    "NIC RX ring below its maximum while the NIC runs out of descriptors",
		Severity: check.Warning,
		Run:      ringUndersized,
		Watch:    ringWatch,
		Series: &check.Series{Name: "ring_drops_per_second",
			Expr: `sum by ($node) (rate(slowpath_net_drops_total{layer="ring"}[$__rate_interval]))`},
		DropReasons: []string{"FULL_RING"},
	})
}

// ringWatch is what the check reads and its fix should lower: all of an
// interface's ring counters, since drivers name theirs differently.
var ringWatch = &check.Watch{Layer: netmodel.LayerRing, PerInterface: true}

func ringUndersized(in *check.Input) []check.Finding {
	m := in.Network
	if m == nil {
		return nil
	}
	var out []check.Finding
	for _, ifc := range m.Interfaces {
		if ifc.Ring == nil || ifc.Ring.RXMax == 0 {
			continue
		}
		r := ifc.Ring
		var ring []netmodel.Counter
		for _, c := range watched(m, ringWatch) {
			if c.Subject == ifc.Name {
				ring = append(ring, c)
			}
		}
		up := rising(ring)
		below := r.RX < r.RXMax
		fix := fmt.Sprintf("%s\n%s", check.RingCommand(ifc.Name, r.RXMax),
			comment("persist it: a udev rule, NetworkManager (ethtool.ring-rx) or systemd-networkd (.link RxBufferSize=)"))
		ringEv := check.Evidence{Source: "ETHTOOL_GRINGPARAM", Key: ifc.Name + " rx", Observed: fmt.Sprintf("%d of max %d", r.RX, r.RXMax), Expected: fmt.Sprintf("%d", r.RXMax)}
		refs := []string{"https://www.kernel.org/doc/html/latest/networking/statistics.html", "https://github.com/torvalds/linux/blob/master/Documentation/networking/scaling.rst"}
		fast := ifc.SpeedMbps != nil && *ifc.SpeedMbps >= fastLinkMbps
		switch {
		case below && len(up) > 0:
			received, haveReceived := flowRate(in.Snapshot, m, rxPackets(ifc.Name))
			out = append(out, check.Finding{
				Subject:     ifc.Name,
				Summary:     fmt.Sprintf("%s drops packets because its RX ring is full (%s/s now) while the ring is set to %d of a possible %d entries. A larger ring absorbs the bursts that arrive while softirq processing is delayed.", ifc.Name, units.Rate(sumRate(up)), r.RX, r.RXMax),
				Evidence:    append([]check.Evidence{ringEv}, rateEvidence("ring counters", up, 4)...),
				Remediation: fix,
				References:  refs,
				Fix:         ringFix(ifc),
				Cost:        dropCost(sumRate(up), received, haveReceived, ifc.Name+" RX ring"),
			})
		case below && fast && r.RX < smallRing:
			f := check.Finding{
				Severity:    check.Info,
				Subject:     ifc.Name,
				Summary:     fmt.Sprintf("%s is a %d Mb/s link with an RX ring of %d of a possible %d entries: at line rate that holds well under a millisecond of packets. No ring overflow is rising now.", ifc.Name, *ifc.SpeedMbps, r.RX, r.RXMax),
				Evidence:    []check.Evidence{ringEv, {Source: "/sys/class/net/" + ifc.Name + "/speed", Observed: fmt.Sprintf("%d Mb/s", *ifc.SpeedMbps), Expected: fmt.Sprintf("ring >= %d at >= %d Mb/s", smallRing, fastLinkMbps)}},
				Remediation: fix,
				References:  refs,
				Fix:         ringFix(ifc),
			}
			out = append(out, f)
		case below && m.IntervalSeconds == 0 && sumTotal(ring) > 0:
			out = append(out, check.Finding{
				Status:     check.Unknown,
				Subject:    ifc.Name,
				Summary:    fmt.Sprintf("%s has ring overflow counters (%d since boot) and a ring of %d of %d, but %s.", ifc.Name, sumTotal(ring), r.RX, r.RXMax, oneSampleNote),
				Evidence:   append([]check.Evidence{ringEv}, rateEvidence("ring counters", ring, 4)...),
				References: refs,
			})
		default:
			out = append(out, check.Finding{Status: check.Pass, Subject: ifc.Name, Summary: fmt.Sprintf("RX ring %d of %d with no ring overflow rising", r.RX, r.RXMax)})
		}
	}
	return out
}
