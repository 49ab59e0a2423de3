package snapshot

// Net is what the network collectors read (internal/collect/network):
// interfaces with their rings, queues and IRQs, sysctls, whether the kernel
// names skb drop reasons, and one or two samples of every drop counter.
// Rates are computed from the samples by the pure model
// (internal/model/netmodel), never here. See docs/snapshot.md, section net.
type Net struct {
	Interfaces []NetInterface `json:"interfaces,omitempty"`
	// Sysctls holds the integer sysctls that shape the receive path, keyed
	// by their dotted name ("net.core.netdev_max_backlog"). An absent key
	// was not readable (see manifest errors).
	Sysctls map[string]int64 `json:"sysctls,omitempty"`
	// DropReasons says whether the kernel attributes skb drops to reasons.
	DropReasons *DropReasons `json:"drop_reasons,omitempty"`
	// Samples are counter readings in time order: one when collected with
	// --net-interval 0 or from a saved snapshot of that kind, two when the
	// collector waited the interval in between. Counters that only grew
	// since boot prove nothing about now; two samples give rates.
	Samples []NetSample `json:"samples,omitempty"`
}

// NetInterface is one entry of /sys/class/net plus what ethtool says about it.
type NetInterface struct {
	Name    string `json:"name"`
	Ifindex int    `json:"ifindex"`
	// Iflink is /sys/class/net/IF/iflink: for a veth it is the peer's
	// ifindex (in the peer's namespace); it equals Ifindex for most devices.
	Iflink    int    `json:"iflink,omitempty"`
	Kind      string `json:"kind,omitempty"` // rtnetlink link kind: veth, bond, bridge, vlan, ...; "" for a physical or paravirtual NIC
	MTU       int    `json:"mtu,omitempty"`
	OperState string `json:"operstate,omitempty"` // up, down, unknown, ...
	// SpeedMbps is /sys/class/net/IF/speed; nil when the kernel reports no
	// speed (-1, EINVAL on a down link, virtual devices).
	SpeedMbps *int64 `json:"speed_mbps,omitempty"`
	// Driver, DriverVersion, FirmwareVersion and BusInfo are ETHTOOL_GDRVINFO.
	Driver          string `json:"driver,omitempty"` // hv_netvsc, mlx5_core, mana, ena, virtio_net, veth, ...
	DriverVersion   string `json:"driver_version,omitempty"`
	FirmwareVersion string `json:"firmware_version,omitempty"`
	BusInfo         string `json:"bus_info,omitempty"` // PCI address, VMBus GUID, virtio0, ...
	// Master is the bond, team or bridge this interface is enslaved to
	// (/sys/class/net/IF/master), or the synthetic NIC of an SR-IOV VF on
	// Azure (hv_netvsc makes itself the VF's master).
	Master string `json:"master,omitempty"`
	// Lower and Upper are the lower_*/upper_* links in /sys/class/net/IF.
	Lower []string `json:"lower,omitempty"`
	Upper []string `json:"upper,omitempty"`
	// Ring is ETHTOOL_GRINGPARAM; nil when the driver does not support it
	// (veth on older kernels, lo): Unsupported then lists "ring".
	Ring *Ring `json:"ring,omitempty"`
	// Channels is ETHTOOL_GCHANNELS; nil when unsupported.
	Channels *Channels `json:"channels,omitempty"`
	// Queues are /sys/class/net/IF/queues/{rx,tx}-N with their steering masks.
	Queues []NetQueue `json:"queues,omitempty"`
	// IRQs are the lines of /proc/interrupts that name this interface or
	// its PCI bus address, with their affinity.
	IRQs []IRQ `json:"irqs,omitempty"`
	// Unsupported lists the ethtool requests the driver answered with
	// EOPNOTSUPP (ring, channels, stats, drvinfo): a fact, not an error.
	Unsupported []string `json:"unsupported,omitempty"`
}

// Ring is the NIC descriptor ring sizes, as `ethtool -g` prints them:
// current settings and pre-set maximums.
type Ring struct {
	RX    uint32 `json:"rx"`     // current RX ring entries (rx_pending)
	RXMax uint32 `json:"rx_max"` // pre-set maximum (rx_max_pending)
	TX    uint32 `json:"tx"`     // current TX ring entries (tx_pending)
	TXMax uint32 `json:"tx_max"` // pre-set maximum (tx_max_pending)
}

// Channels is the queue count as `ethtool -l` prints it.
type Channels struct {
	RX          uint32 `json:"rx,omitempty"`
	TX          uint32 `json:"tx,omitempty"`
	Other       uint32 `json:"other,omitempty"`
	Combined    uint32 `json:"combined,omitempty"`
	MaxRX       uint32 `json:"max_rx,omitempty"`
	MaxTX       uint32 `json:"max_tx,omitempty"`
	MaxOther    uint32 `json:"max_other,omitempty"`
	MaxCombined uint32 `json:"max_combined,omitempty"`
}

// NetQueue is one /sys/class/net/IF/queues/NAME directory.
type NetQueue struct {
	Name string `json:"name"` // rx-0, tx-3
	// RPSCPUs is rps_cpus (rx) and XPSCPUs xps_cpus (tx), as the kernel
	// prints them: a hex CPU mask, comma-separated in 32-bit groups. "" when
	// absent (kernel without CONFIG_RPS/XPS or a single-queue device).
	RPSCPUs    string `json:"rps_cpus,omitempty"`
	RPSFlowCnt int64  `json:"rps_flow_cnt,omitempty"`
	XPSCPUs    string `json:"xps_cpus,omitempty"`
}

// IRQ is one interrupt line of a NIC.
type IRQ struct {
	Number int    `json:"number"`
	Name   string `json:"name"` // the action name in /proc/interrupts, e.g. mlx5_comp3@pci:0002:00:02.0
	// AffinityList is /proc/irq/N/smp_affinity_list, e.g. "0-3".
	AffinityList string `json:"affinity_list,omitempty"`
}

// DropReasons records whether skb drops carry a reason in this kernel.
// Distributions backport, so the answer is read from the kernel itself,
// never inferred from the version number.
type DropReasons struct {
	// Status is "yes", "no" or "unknown".
	Status string `json:"status"`
	// Source is what was read: the tracepoint format file
	// (events/skb/kfree_skb/format under tracefs) or kernel BTF
	// (/sys/kernel/btf/vmlinux naming enum skb_drop_reason).
	Source string `json:"source,omitempty"`
	// Detail explains the status, e.g. "tracefs not mounted".
	Detail string `json:"detail,omitempty"`
	// KernelBTF is "yes" when /sys/kernel/btf/vmlinux exists, "no" when
	// it does not, "unknown" when it could not be checked and empty in
	// snapshots from before the field. `slowpath net drops` needs it: its
	// program is a BTF tracepoint (tp_btf/kfree_skb) relocated against it.
	KernelBTF string `json:"kernel_btf,omitempty"`
}

// NetSample is one reading of the drop-relevant counters at one instant.
// Everything in it is a counter since boot (or since the device appeared),
// except backlog lengths, which are instantaneous.
type NetSample struct {
	// MonotonicNS is CLOCK_MONOTONIC when the sample started. Only
	// differences between samples mean anything.
	MonotonicNS int64 `json:"monotonic_ns"`
	// Interfaces holds per-interface counters, by name.
	Interfaces []NetCounters `json:"interfaces,omitempty"`
	// Softnet is /proc/net/softnet_stat, one entry per online CPU.
	Softnet []SoftnetCPU `json:"softnet,omitempty"`
	// SoftnetColumns is how many columns the kernel printed (9 to 15; see
	// docs/snapshot.md): fewer columns mean fewer facts, not zeros.
	SoftnetColumns int `json:"softnet_columns,omitempty"`
	// SNMP holds selected counters of /proc/net/snmp and /proc/net/netstat
	// as "Group.Name" (Udp.RcvbufErrors, TcpExt.ListenDrops). They are per
	// network namespace: the collector's own.
	SNMP map[string]int64 `json:"snmp,omitempty"`
}

// NetCounters is one interface's counters in one sample.
type NetCounters struct {
	Name string `json:"name"`
	// Stats are /sys/class/net/IF/statistics/* (rx_missed_errors,
	// rx_dropped, rx_fifo_errors, rx_over_errors, tx_dropped, ...).
	Stats map[string]uint64 `json:"stats,omitempty"`
	// Driver are the `ethtool -S` counters whose name says drop, discard,
	// miss, overflow or lack of buffers (rx_out_of_buffer,
	// hc_rx_discards_no_wqe, rx_comp_busy, pps_allowance_exceeded,
	// rx_queue_0_drops...). Other driver counters are not kept.
	Driver map[string]uint64 `json:"driver,omitempty"`
	// Qdisc is the root qdisc's counters (netlink RTM_GETQDISC), nil when
	// not read.
	Qdisc *QdiscCounters `json:"qdisc,omitempty"`
}

// QdiscCounters are the root qdisc's statistics (tc -s qdisc).
type QdiscCounters struct {
	Kind       string `json:"kind"` // mq, fq_codel, pfifo_fast, noqueue, ...
	Drops      uint64 `json:"drops"`
	Overlimits uint64 `json:"overlimits,omitempty"`
	Requeues   uint64 `json:"requeues,omitempty"`
	Backlog    uint64 `json:"backlog,omitempty"` // packets queued now
}

// SoftnetCPU is one line of /proc/net/softnet_stat: the per-CPU input
// backlog (softnet_data) of the receive path.
type SoftnetCPU struct {
	CPU       int    `json:"cpu"`
	Processed uint64 `json:"processed"`
	// Dropped counts packets refused because the CPU's input backlog held
	// net.core.netdev_max_backlog packets already (enqueue_to_backlog).
	Dropped uint64 `json:"dropped"`
	// TimeSqueeze counts NAPI rounds that ended with work left because
	// netdev_budget packets or netdev_budget_usecs ran out.
	TimeSqueeze    uint64 `json:"time_squeeze"`
	ReceivedRPS    uint64 `json:"received_rps,omitempty"`
	FlowLimitCount uint64 `json:"flow_limit_count,omitempty"`
	// BacklogLen is the packets queued on the backlog now (input+process
	// queue, 13+ columns).
	BacklogLen uint64 `json:"backlog_len,omitempty"`
}
