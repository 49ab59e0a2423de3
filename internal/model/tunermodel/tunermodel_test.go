package tunermodel

import (
	"testing"

	"github.com/slowpath/slowpath/internal/snapshot"
)

func TestDevicesMatch(t *testing.T) {
	tests := []struct {
		devices, iface string
		want           bool
	}{
		{"", "eth0", true},
		{"*", "eth0", true},
		{"eth0", "eth0", true},
		{"eth0", "eth1", false},
		{"eth*, !eth9", "eth1", true},
		{"eth*, !eth9", "eth9", false},
		{"!lo", "ens5", true},
		{"!lo", "lo", false},
		{"ens1f0,ens1f1", "ens1f1", true},
		{"en[ps]*", "ens5", true},
		{`a\b`, `a\b`, true}, // a backslash is literal in tuned's fnmatch
		{`a\*`, `a\x`, true},
	}
	for _, tt := range tests {
		if got := DevicesMatch(tt.devices, tt.iface); got != tt.want {
			t.Errorf("DevicesMatch(%q, %q) = %v, want %v", tt.devices, tt.iface, got, tt.want)
		}
	}
}

func TestClaims(t *testing.T) {
	h := &snapshot.Host{Tuners: []snapshot.Tuner{
		{Name: "bpftune", PID: 10, Seen: []string{"/proc/10/comm"}, Plugins: []string{"tcp_buffer_tuner"}},
		{Name: "tuned", Seen: []string{"/etc/tuned/active_profile"}, Profile: "site",
			Sysctls: []snapshot.TunerSysctl{{Key: "net.core.netdev_max_backlog", Value: "5000"}},
			Rings:   []snapshot.TunerRing{{Devices: "eth*", Value: "rx 4096"}}},
	}}
	// Only the tuners bpftune has installed claim their knobs.
	if c := SysctlClaims(h, "net.core.netdev_budget"); len(c) != 0 {
		t.Errorf("netdev_budget claimed without net_buffer_tuner installed: %+v", c)
	}
	if c := SysctlClaims(h, "net.ipv4.tcp_rmem"); len(c) != 1 || c[0].Tuner != "bpftune" || !c[0].Running() {
		t.Errorf("tcp_rmem: %+v", c)
	}
	// An unread plug-in list assumes every tuner.
	h.Tuners[0].Plugins = nil
	if c := SysctlClaims(h, "net.core.netdev_budget"); len(c) != 1 {
		t.Errorf("netdev_budget with the plug-ins unknown: %+v", c)
	}
	c := SysctlClaims(h, "net.core.netdev_max_backlog")
	if len(c) != 2 || c[1].Tuner != "tuned" || c[1].Running() || c[1].Value != "5000" {
		t.Errorf("netdev_max_backlog: %+v", c)
	}
	if c := RingClaims(h, "eth3"); len(c) != 1 || c[0].Value != "rx 4096" {
		t.Errorf("ring eth3: %+v", c)
	}
	if c := RingClaims(h, "ens5"); len(c) != 0 {
		t.Errorf("ring ens5 claimed by devices=eth*: %+v", c)
	}
	if All(nil) != nil {
		t.Error("claims without a host")
	}
}
