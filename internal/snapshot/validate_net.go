package snapshot

import (
	"fmt"
	"math"
	"strings"
)

// Validation of the net section (net.go): interface names, sysctls,
// samples. Rules and sources: docs/snapshot.md, section Validation.

// Interface names: net/core/dev.c dev_valid_name(). IFNAMSIZ is 16
// (include/uapi/linux/if.h), so at most 15 bytes.
const srcIfname = "net/core/dev.c dev_valid_name"

// kernelIsSpace is isspace() of the kernel's lib/ctype.c: tab, newline,
// vertical tab, form feed, carriage return, space and 0xA0 (the table marks
// Latin-1 NBSP as space), tested per byte as dev_valid_name does.
func kernelIsSpace(c byte) bool {
	return c >= '\t' && c <= '\r' || c == ' ' || c == 0xa0
}

// ifnameProblem returns why name breaks dev_valid_name(), or "".
func ifnameProblem(name string) string {
	switch {
	case name == "":
		return "empty"
	case len(name) >= 16:
		return fmt.Sprintf("%d bytes, at most 15 (IFNAMSIZ 16)", len(name))
	case name == "." || name == "..":
		return `"." and ".." are refused`
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == 0:
			return "holds a NUL"
		case c == '/':
			return "holds '/'"
		case c == ':':
			return "holds ':'"
		case kernelIsSpace(c):
			return fmt.Sprintf("holds white space %q", c)
		}
	}
	return ""
}

func checkIfname(p, name string) error {
	if why := ifnameProblem(name); why != "" {
		return invalidString(p, name, "not a valid interface name", why, srcIfname)
	}
	return checkText(p, name, 15, false)
}

// Sysctl names: /proc/sys entries are ctl_table procnames (fs/proc/
// proc_sysctl.c); sysctl(8) joins the path with dots. The kernel refuses
// nothing beyond a valid directory entry, but per-device directories are
// named after interfaces, which may hold '.', '=' or ';'. The sysctls a
// snapshot holds are the nine net.core ones (internal/collect/network
// sysctl.go), so slowpath restricts each component to [A-Za-z0-9_-]
// (its own rule): a key goes into sysctl.d files and sysctl -w commands.
func checkSysctlKey(p, k string) error {
	why := ""
	comps := strings.Split(k, ".")
	switch {
	case len(k) > maxSysctl:
		why = fmt.Sprintf("%d bytes, at most %d", len(k), maxSysctl)
	case len(comps) < 2:
		why = "want dotted components, e.g. net.core.netdev_max_backlog"
	}
	for _, c := range comps {
		if why != "" {
			break
		}
		if c == "" {
			why = "empty component"
		}
		for i := 0; i < len(c) && why == ""; i++ {
			ch := c[i]
			if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '-') {
				why = "components are [A-Za-z0-9_-]"
			}
		}
	}
	if why != "" {
		return invalidString(p, k, "not a sysctl name", why, "slowpath: the sysctl names it collects, written into sysctl.d and sysctl -w; fs/proc/proc_sysctl.c")
	}
	return nil
}

// sysctlMin is the least value slowpath accepts for each sysctl it
// collects (net/core/sysctl_net_core.c net_core_table); all are int
// (maxlen sizeof(int)). netdev_budget_usecs and somaxconn have extra1 =
// SYSCTL_ZERO; rmem_* and wmem_* have extra1 = min_rcvbuf/min_sndbuf
// (higher; 1 on older kernels). netdev_max_backlog and netdev_budget use
// plain proc_dointvec, and so does dev_weight on older kernels: they take
// a negative number, which as a queue length, packet budget or weight
// means nothing, so slowpath requires >= 0 (its own rule).
var sysctlMin = map[string]int64{
	"net.core.netdev_max_backlog":  0,
	"net.core.netdev_budget":       0,
	"net.core.netdev_budget_usecs": 0,
	"net.core.dev_weight":          0,
	"net.core.rmem_max":            0,
	"net.core.rmem_default":        0,
	"net.core.wmem_max":            0,
	"net.core.wmem_default":        0,
	"net.core.somaxconn":           0,
}

// operstates are the strings of net/core/net-sysfs.c operstate_show
// (operstates[], RFC 2863 IF-MIB ifOperStatus).
var operstates = []string{"unknown", "notpresent", "down", "lowerlayerdown", "testing", "dormant", "up"}

func validateNet(n *Net) error {
	if n == nil {
		return nil
	}
	// A name is unique in its namespace (net/core/dev.c dev_get_valid_name: -EEXIST).
	if err := eachNamed("net.interfaces", n.Interfaces, func(i *NetInterface) string { return i.Name }, "interfaces", srcIfnameUnique, validateInterface); err != nil {
		return err
	}
	for _, k := range sortedKeys(n.Sysctls) {
		if err := checkSysctlKey("net.sysctls", k); err != nil {
			return err
		}
		v := n.Sysctls[k]
		p := fmt.Sprintf("net.sysctls[%q]", k)
		// Every sysctl slowpath reads is an int (proc_dointvec and friends).
		if v < math.MinInt32 || v > math.MaxInt32 {
			return invalidNumber(p, v, "out of range", "an int sysctl", "kernel/sysctl.c proc_dointvec")
		}
		if lo, ok := sysctlMin[k]; ok && v < lo {
			return invalidNumber(p, v, "out of range", fmt.Sprintf("want at least %d", lo), "net/core/sysctl_net_core.c net_core_table")
		}
	}
	if d := n.DropReasons; d != nil {
		if err := checkEnum("net.drop_reasons.status", d.Status, "yes", "no", "unknown"); err != nil {
			return err
		}
		if err := checkOptEnum("net.drop_reasons.kernel_btf", d.KernelBTF, "yes", "no", "unknown"); err != nil {
			return err
		}
		if err := checkText("net.drop_reasons.source", d.Source, pathMax, false); err != nil {
			return err
		}
		if err := checkText("net.drop_reasons.detail", d.Detail, maxMessage, false); err != nil {
			return err
		}
	}
	for i := range n.Samples {
		p := fmt.Sprintf("net.samples[%d]", i)
		if err := validateSample(p, &n.Samples[i]); err != nil {
			return err
		}
		// Samples are in time order: rates divide by the difference.
		if i > 0 && n.Samples[i].MonotonicNS < n.Samples[i-1].MonotonicNS {
			return invalidNumber(p+".monotonic_ns", n.Samples[i].MonotonicNS, "before the previous sample", "samples are in time order", srcSlowpath)
		}
	}
	return nil
}

func validateInterface(p string, ifc *NetInterface) error {
	if err := checkIfname(p+".name", ifc.Name); err != nil {
		return err
	}
	// ifindex is a positive int (net/core/dev.c dev_index_reserve); 0 in
	// a hand-written snapshot means unknown.
	if ifc.Ifindex < 0 {
		return invalidNumber(p+".ifindex", ifc.Ifindex, "negative", "", "net/core/dev.c dev_index_reserve")
	}
	if ifc.Iflink < 0 {
		return invalidNumber(p+".iflink", ifc.Iflink, "negative", "", "net/core/dev.c dev_get_iflink")
	}
	// IFLA_INFO_KIND is rtnl_link_ops.kind, a short word (veth, bond).
	if err := checkToken(p+".kind", ifc.Kind, maxWord, true); err != nil {
		return err
	}
	// dev_set_mtu refuses a negative MTU (net/core/dev.c dev_validate_mtu).
	if ifc.MTU < 0 || ifc.MTU > math.MaxInt32 {
		return invalidNumber(p+".mtu", ifc.MTU, "not an MTU", "want 0 to 2147483647", "net/core/dev.c dev_validate_mtu")
	}
	if err := checkOptEnum(p+".operstate", ifc.OperState, operstates...); err != nil {
		return err
	}
	if s := ifc.SpeedMbps; s != nil && (*s < 0 || *s > maxUint32) {
		return invalidNumber(p+".speed_mbps", *s, "not a link speed", "want 0 to 4294967295 Mb/s", "include/uapi/linux/ethtool.h ethtool_link_settings.speed (u32)")
	}
	// ETHTOOL_GDRVINFO fills char[32] fields with strscpy
	// (include/uapi/linux/ethtool.h struct ethtool_drvinfo): at most 31 bytes.
	for _, f := range []struct{ p, v string }{{".driver", ifc.Driver}, {".driver_version", ifc.DriverVersion}, {".firmware_version", ifc.FirmwareVersion}, {".bus_info", ifc.BusInfo}} {
		if len(f.v) > 31 {
			return invalidString(p+f.p, f.v, "too long for ETHTOOL_GDRVINFO", fmt.Sprintf("%d bytes, at most 31", len(f.v)), "include/uapi/linux/ethtool.h struct ethtool_drvinfo")
		}
		if err := checkText(p+f.p, f.v, 31, false); err != nil {
			return err
		}
	}
	if ifc.Master != "" {
		if err := checkIfname(p+".master", ifc.Master); err != nil {
			return err
		}
	}
	if err := eachString(p+".lower", ifc.Lower, checkIfname); err != nil {
		return err
	}
	if err := eachString(p+".upper", ifc.Upper, checkIfname); err != nil {
		return err
	}
	// No rule ties a ring's or a channel count's current value to its
	// maximum: ethtool refuses to set more (net/ethtool/rings.c,
	// channels.c), but a driver may lower its maximum below the current
	// value afterwards (netdevsim's debugfs does), and the snapshot must
	// hold what the kernel reports.
	for i, q := range ifc.Queues {
		qp := fmt.Sprintf("%s.queues[%d]", p, i)
		if err := checkQueueName(qp+".name", q.Name); err != nil {
			return err
		}
		if err := checkCPUMask(qp+".rps_cpus", q.RPSCPUs); err != nil {
			return err
		}
		if err := checkCPUMask(qp+".xps_cpus", q.XPSCPUs); err != nil {
			return err
		}
		if q.RPSFlowCnt < 0 {
			return invalidNumber(qp+".rps_flow_cnt", q.RPSFlowCnt, "negative", "", "net/core/net-sysfs.c show_rps_dev_flow_table_cnt")
		}
	}
	for i, irq := range ifc.IRQs {
		ip := fmt.Sprintf("%s.irqs[%d]", p, i)
		if irq.Number < 0 {
			return invalidNumber(ip+".number", irq.Number, "negative", "", "kernel/irq/proc.c show_interrupts")
		}
		if err := checkText(ip+".name", irq.Name, maxLine, false); err != nil {
			return err
		}
		if err := checkCPUList(ip+".affinity_list", irq.AffinityList); err != nil {
			return err
		}
	}
	for i, u := range ifc.Unsupported {
		if err := checkEnum(fmt.Sprintf("%s.unsupported[%d]", p, i), u, "drvinfo", "ring", "channels", "stats"); err != nil {
			return err
		}
	}
	return nil
}

// checkQueueName: queues/rx-%u and tx-%u (net/core/net-sysfs.c
// rx_queue_add_kobject, netdev_queue_add_kobject).
func checkQueueName(p, s string) error {
	if n, ok := strings.CutPrefix(s, "rx-"); ok && canonicalUint(n, math.MaxUint32) {
		return nil
	}
	if n, ok := strings.CutPrefix(s, "tx-"); ok && canonicalUint(n, math.MaxUint32) {
		return nil
	}
	return invalidString(p, s, "not a queue name", `want "rx-N" or "tx-N"`, "net/core/net-sysfs.c rx_queue_add_kobject, netdev_queue_add_kobject")
}

// checkCPUMask: rps_cpus and xps_cpus print a bitmap "%*pb": hex digits in
// comma-separated 32-bit groups (lib/bitmap-str.c bitmap_print_to_buf).
func checkCPUMask(p, s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(isLowerHex(c) || c == ',') {
			return invalidString(p, s, "not a CPU mask", "want hex digits in comma-separated groups", "lib/bitmap-str.c bitmap_print_to_buf (%*pb)")
		}
	}
	return nil
}

// checkCPUList: smp_affinity_list prints "%*pbl": decimal ranges joined
// by commas, e.g. "0-3,8" (kernel/irq/proc.c irq_affinity_list_proc_show).
func checkCPUList(p, s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c == ',' || c == '-') {
			return invalidString(p, s, "not a CPU list", `want ranges such as "0-3,8"`, "lib/bitmap-str.c bitmap_print_to_buf (%*pbl)")
		}
	}
	return nil
}

func validateSample(p string, smp *NetSample) error {
	if smp.MonotonicNS < 0 {
		return invalidNumber(p+".monotonic_ns", smp.MonotonicNS, "negative", "CLOCK_MONOTONIC starts at boot", "clock_gettime(2)")
	}
	seen := map[string]int{}
	for i := range smp.Interfaces {
		c := &smp.Interfaces[i]
		cp := fmt.Sprintf("%s.interfaces[%d]", p, i)
		if err := checkIfname(cp+".name", c.Name); err != nil {
			return err
		}
		if j, dup := seen[c.Name]; dup {
			return invalidString(cp+".name", c.Name, "names two interfaces", fmt.Sprintf("also %s.interfaces[%d]", p, j), "net/core/dev.c dev_get_valid_name")
		}
		seen[c.Name] = i
		for _, k := range sortedKeys(c.Stats) {
			// Files of /sys/class/net/IF/statistics (net/core/net-sysfs.c).
			if err := checkToken(cp+".stats", k, maxCounter, false); err != nil {
				return err
			}
		}
		for _, k := range sortedKeys(c.Driver) {
			// ethtool -S names are ETH_GSTRING_LEN 32 bytes, possibly unterminated.
			if len(k) > 32 {
				return invalidString(cp+".driver", k, "not an ethtool statistic name", fmt.Sprintf("%d bytes, at most 32", len(k)), "include/uapi/linux/ethtool.h ETH_GSTRING_LEN 32")
			}
			if err := checkText(cp+".driver", k, 32, false); err != nil {
				return err
			}
		}
		if q := c.Qdisc; q != nil {
			// Qdisc_ops.id is char[IFNAMSIZ] (include/net/sch_generic.h).
			if q.Kind == "" || len(q.Kind) > 15 {
				return invalidString(cp+".qdisc.kind", q.Kind, "not a qdisc kind", "1 to 15 bytes", "include/net/sch_generic.h Qdisc_ops.id[IFNAMSIZ]")
			}
			if err := checkToken(cp+".qdisc.kind", q.Kind, 15, false); err != nil {
				return err
			}
		}
	}
	for i, c := range smp.Softnet {
		if c.CPU < 0 {
			return invalidNumber(fmt.Sprintf("%s.softnet[%d].cpu", p, i), c.CPU, "negative", "", "net/core/net-procfs.c softnet_seq_show")
		}
	}
	// softnet_stat prints 9 columns since 2.6.23, up to 15 today
	// (net/core/net-procfs.c softnet_seq_show; docs/snapshot.md); 0 when
	// not read. More from a later kernel are accepted up to a sanity bound.
	if c := smp.SoftnetColumns; c != 0 && (c < 9 || c > maxColumns) {
		return invalidNumber(p+".softnet_columns", c, "not a column count the kernel prints", "want 0 or 9 to 15 (more from a later kernel)", "net/core/net-procfs.c softnet_seq_show")
	}
	for _, k := range sortedKeys(smp.SNMP) {
		// "Group.Name" of /proc/net/snmp and /proc/net/netstat headers.
		g, n, ok := strings.Cut(k, ".")
		if !ok || g == "" || n == "" || strings.Contains(n, ".") {
			return invalidString(p+".snmp", k, "not an SNMP counter name", `want "Group.Name"`, "net/ipv4/proc.c snmp_seq_show, netstat_seq_show")
		}
		if err := checkToken(p+".snmp", k, maxCounter, false); err != nil {
			return err
		}
	}
	return nil
}

const srcIfnameUnique = "net/core/dev.c dev_get_valid_name"
