package report

import (
	"bufio"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// TestCommandLine checks that wide remediation lines are continued with a
// backslash, never inside quotes, and that narrow ones stay as they are.
func TestCommandLine(t *testing.T) {
	long := "cryptsetup refresh --perf-no_read_workqueue --perf-no_write_workqueue --allow-discards --perf-same_cpu_crypt --persistent data"
	quoted := `echo 'a quoted string that must stay on one line whatever its length is here' > /etc/x.conf`
	tests := []struct {
		name, in string
		want     []string
	}{
		{"fits", "ethtool -G eth0 rx 8192", []string{"    ethtool -G eth0 rx 8192"}},
		{"long command", long, []string{
			"    cryptsetup refresh --perf-no_read_workqueue --perf-no_write_workqueue \\",
			"      --allow-discards --perf-same_cpu_crypt --persistent data",
		}},
		{"indented udev rule", `  ACTION=="add|change", KERNEL=="nvme[0-9]*n[0-9]*", ATTR{queue/scheduler}="none"`, []string{
			`      ACTION=="add|change", KERNEL=="nvme[0-9]*n[0-9]*", \`,
			`        ATTR{queue/scheduler}="none"`,
		}},
		{"no break inside quotes", quoted, []string{
			`    echo \`,
			`      'a quoted string that must stay on one line whatever its length is here' \`,
			`      > /etc/x.conf`,
		}},
		{"one word wider than the report", strings.Repeat("x", 90), []string{"    " + strings.Repeat("x", 90)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			tw := &textWriter{w: bufio.NewWriter(&b)}
			tw.commandLine("    ", tt.in)
			tw.w.Flush()
			got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("commandLine(%q) (-want +got):\n%s", tt.in, d)
			}
		})
	}
}

// TestNotCollectedNamesSource checks that an error whose message does not
// name its source (an ioctl, netlink) gets the source, and one that does
// (a file) does not get it twice.
func TestNotCollectedNamesSource(t *testing.T) {
	tests := []struct {
		e    snapshot.CollectError
		want string
	}{
		{snapshot.CollectError{Path: "SIOCETHTOOL eth0", Message: "no such device"}, "SIOCETHTOOL eth0: no such device"},
		{snapshot.CollectError{Path: "/proc/net/snmp", Message: "open /proc/net/snmp: permission denied"}, "open /proc/net/snmp: permission denied"},
		{snapshot.CollectError{Message: "no path known"}, "no path known"},
	}
	for _, tt := range tests {
		if got := notCollected(tt.e); got != tt.want {
			t.Errorf("notCollected(%+v) = %q, want %q", tt.e, got, tt.want)
		}
	}
}
