package report

import (
	"bufio"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
