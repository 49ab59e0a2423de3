package network

import (
	"errors"
	"strings"
	"syscall"

	"github.com/safchain/ethtool"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// DriverInfo is the part of ETHTOOL_GDRVINFO slowpath keeps.
type DriverInfo struct {
	Driver, Version, Firmware, BusInfo string
}

// Ethtool answers the ethtool requests slowpath makes. The live
// implementation uses the SIOCETHTOOL ioctl (include/uapi/linux/ethtool.h);
// tests and benchmarks pass a fake, so the snapshot never depends on how
// the answer was obtained.
type Ethtool interface {
	DriverInfo(ifname string) (DriverInfo, error)
	// Ring is ETHTOOL_GRINGPARAM (`ethtool -g`).
	Ring(ifname string) (snapshot.Ring, error)
	// Channels is ETHTOOL_GCHANNELS (`ethtool -l`).
	Channels(ifname string) (snapshot.Channels, error)
	// Stats is ETHTOOL_GSTATS with ETH_SS_STATS names (`ethtool -S`).
	Stats(ifname string) (map[string]uint64, error)
}

// LiveEthtool is Ethtool over the kernel ioctl (github.com/safchain/ethtool).
type LiveEthtool struct{ e *ethtool.Ethtool }

// NewLiveEthtool opens the socket the ioctls go through.
func NewLiveEthtool() (*LiveEthtool, error) {
	e, err := ethtool.NewEthtool()
	if err != nil {
		return nil, err
	}
	return &LiveEthtool{e: e}, nil
}

// Close releases the socket.
func (l *LiveEthtool) Close() { l.e.Close() }

func (l *LiveEthtool) DriverInfo(ifname string) (DriverInfo, error) {
	d, err := l.e.DriverInfo(ifname)
	if err != nil {
		return DriverInfo{}, err
	}
	return DriverInfo{Driver: d.Driver, Version: d.Version, Firmware: d.FwVersion, BusInfo: d.BusInfo}, nil
}

func (l *LiveEthtool) Ring(ifname string) (snapshot.Ring, error) {
	r, err := l.e.GetRing(ifname)
	if err != nil {
		return snapshot.Ring{}, err
	}
	return snapshot.Ring{RX: r.RxPending, RXMax: r.RxMaxPending, TX: r.TxPending, TXMax: r.TxMaxPending}, nil
}

func (l *LiveEthtool) Channels(ifname string) (snapshot.Channels, error) {
	c, err := l.e.GetChannels(ifname)
	if err != nil {
		return snapshot.Channels{}, err
	}
	return snapshot.Channels{
		RX: c.RxCount, TX: c.TxCount, Other: c.OtherCount, Combined: c.CombinedCount,
		MaxRX: c.MaxRx, MaxTX: c.MaxTx, MaxOther: c.MaxOther, MaxCombined: c.MaxCombined,
	}, nil
}

func (l *LiveEthtool) Stats(ifname string) (map[string]uint64, error) {
	return l.e.Stats(ifname)
}

// failedEthtool answers every request with the error that kept the live
// source from opening.
type failedEthtool struct{ err error }

func (f failedEthtool) DriverInfo(string) (DriverInfo, error)      { return DriverInfo{}, f.err }
func (f failedEthtool) Ring(string) (snapshot.Ring, error)         { return snapshot.Ring{}, f.err }
func (f failedEthtool) Channels(string) (snapshot.Channels, error) { return snapshot.Channels{}, f.err }
func (f failedEthtool) Stats(string) (map[string]uint64, error)    { return nil, f.err }

// addEthtool fills driver, ring and channels. EOPNOTSUPP (and the ENOTTY
// or EINVAL some drivers return instead) is a fact about the driver, not
// a collection failure: lo and veth have no ring parameters.
func addEthtool(e Ethtool, ifc *snapshot.NetInterface, s *snapshot.Snapshot) {
	path := "SIOCETHTOOL " + ifc.Name
	note := func(what string, err error) {
		if hostfs.Classify(err) == hostfs.KindUnsupported {
			ifc.Unsupported = append(ifc.Unsupported, what)
			return
		}
		s.AddError("net.ethtool."+what, path, err)
	}
	if d, err := e.DriverInfo(ifc.Name); err != nil {
		note("drvinfo", err)
	} else {
		ifc.Driver, ifc.DriverVersion, ifc.FirmwareVersion, ifc.BusInfo = d.Driver, d.Version, d.Firmware, d.BusInfo
	}
	if r, err := e.Ring(ifc.Name); err != nil {
		note("ring", err)
	} else {
		ifc.Ring = &r
	}
	if c, err := e.Channels(ifc.Name); err != nil {
		note("channels", err)
	} else {
		ifc.Channels = &c
	}
}

// driverStatWords are the name parts that make an `ethtool -S` counter a
// drop or overflow counter. Verified against driver sources:
// mlx5 rx_out_of_buffer, rx_discards_phy, rxN_buff_alloc_err (en_stats.c);
// mana hc_rx_discards_no_wqe (mana_ethtool.c); hv_netvsc
// rx_comp_busy, rx_no_memory, tx_no_space, tx_send_full (netvsc_drv.c);
// ena bw_in_allowance_exceeded, pps_allowance_exceeded,
// conntrack_allowance_exceeded, linklocal_allowance_exceeded (ena_ethtool.c);
// virtio_net rx_queue_N_drops / rxN_drops (virtio_net.c); gve
// rx_queue_drop_cnt, rx_no_buffers_posted.
var driverStatWords = []string{
	"drop", "discard", "miss", "out_of_buffer", "no_wqe", "no_memory", "no_space",
	"comp_busy", "send_full", "allowance_exceeded", "fifo", "overrun", "over_errors",
	"no_buf", "alloc_err", "alloc_fail",
}

// KeepDriverStat reports whether an `ethtool -S` counter is kept in the
// snapshot. XDP counters are left out: an XDP program dropping a packet
// did what it was told.
func KeepDriverStat(name string) bool {
	if name == "" || len(name) > 64 || strings.Contains(name, "xdp") {
		return false
	}
	for _, w := range driverStatWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// filterDriverStats keeps the drop counters of an ethtool stats answer.
func filterDriverStats(all map[string]uint64) map[string]uint64 {
	var out map[string]uint64
	for k, v := range all {
		if !KeepDriverStat(k) {
			continue
		}
		if out == nil {
			out = map[string]uint64{}
		}
		out[k] = v
	}
	return out
}

// isUnsupported is true for the errnos a driver gives for a request it
// does not implement.
func isUnsupported(err error) bool {
	return errors.Is(err, syscall.EOPNOTSUPP) || hostfs.Classify(err) == hostfs.KindUnsupported
}
