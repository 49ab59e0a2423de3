package tunermodel

import (
	"maps"
	"slices"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// bpftuneSysctls are the sysctls each bpftune tuner declares, from the
// bpftunable_desc tables of oracle/bpftune's src/*_tuner.c (0.4.2); the
// tuner raises or lowers them as it sees drops, squeezes or pressure.
// bpftune has no ring code: it never owns a NIC ring.
var bpftuneSysctls = map[string][]string{
	// src/net_buffer_tuner.c: backlog drops raise netdev_max_backlog (and
	// set flow_limit_cpu_bitmap); time squeezes raise netdev_budget and
	// netdev_budget_usecs together (capped at 50 ms since 809f9c3,
	// 2025-12, bpftune 0.4-1).
	"net_buffer_tuner": {"net.core.netdev_max_backlog", "net.core.flow_limit_cpu_bitmap", "net.core.netdev_budget",
		"net.core.netdev_budget_usecs", "net.core.high_order_alloc_disable"},
	// src/tcp_buffer_tuner.c: TCP buffer limits under memory pressure.
	"tcp_buffer_tuner": {"net.ipv4.tcp_wmem", "net.ipv4.tcp_rmem", "net.ipv4.tcp_mem", "net.ipv4.tcp_moderate_rcvbuf",
		"net.ipv4.tcp_no_metrics_save", "net.ipv4.tcp_no_ssthresh_metrics_save", "net.core.high_order_alloc_disable",
		"net.ipv4.tcp_syncookies", "net.ipv4.tcp_max_syn_backlog", "net.ipv4.tcp_max_orphans"},
	// src/udp_buffer_tuner.c (2025-03, a482612): UDP receive buffers.
	"udp_buffer_tuner":  {"net.ipv4.udp_mem", "net.core.rmem_max", "net.core.rmem_default"},
	"ip_frag_tuner":     {"net.ipv4.ipfrag_high_thresh", "net.ipv6.ip6frag_high_thresh"},
	"route_table_tuner": {"net.ipv6.route.max_size"},
}

// bpftuneExclude says how to keep bpftune off a knob. bpftune has no
// per-knob setting: a tuner goes as a whole, by deleting its .so from the
// plug-in directory (an inotify watch unloads it at once) or by listing
// the tuners to keep with -a in a systemd drop-in. Writing the sysctl by
// hand is no way either: bpftune's sysctl_tuner sees any other writer and
// turns the whole tuner off for that network namespace until bpftune
// restarts, so an A/B would also switch bpftune's tuner off on the way.
func bpftuneExclude(tuner string) string {
	return "remove " + tuner + ".so from bpftune's plug-in directory (bpftune --print-libdir), " +
		"or run bpftune with -a for each tuner to keep (systemctl edit bpftune), or stop bpftune (systemctl stop bpftune) for the A/B " +
		"(a write by hand is no way: bpftune's sysctl_tuner then turns " + tuner + " off until bpftune restarts)"
}

func bpftuneClaims(t snapshot.Tuner) []Claim {
	var out []Claim
	for _, tuner := range slices.Sorted(maps.Keys(bpftuneSysctls)) {
		// An empty plug-in list means the directory was not read: every
		// tuner bpftune ships is assumed loaded.
		if len(t.Plugins) > 0 && !slices.Contains(t.Plugins, tuner) {
			continue
		}
		for _, k := range bpftuneSysctls[tuner] {
			out = append(out, Claim{Tuner: "bpftune", PID: t.PID, Knob: k, Seen: seen(t),
				Why: "bpftune's " + tuner + " changes it by itself as it sees load, and turns itself off when another writer changes it", Exclude: bpftuneExclude(tuner)})
		}
	}
	return out
}
