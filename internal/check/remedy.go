package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/quote"
)

// One renderer for the commands of a structured fix: doctor's remedy and
// fix's plan print the same command for the same change, so a reader who
// saw one in doctor finds it, word for word, in the plan. Every word from
// a snapshot is shell-quoted.

// SysctlCommand sets one sysctl now.
func SysctlCommand(key string, to int64) string {
	return fmt.Sprintf("sysctl -w %s=%d", quote.Shell(key), to)
}

// RingCommand sets an interface's RX ring now.
func RingCommand(iface string, rx uint32) string {
	return fmt.Sprintf("ethtool -G %s rx %d", quote.Shell(iface), rx)
}

// SysctlDropIn is the sysctl.d file that keeps a finding's sysctls.
func SysctlDropIn(id string) string {
	return "/etc/sysctl.d/60-slowpath-" + quote.PathComponent(strings.ReplaceAll(id, ".", "-")) + ".conf"
}

// RefreshCommand is the cryptsetup refresh that sets the flags (and keeps
// the ones already set, which refresh would otherwise drop: it applies
// exactly the flags it is given, cryptsetup-refresh(8)). "--" ends the
// options (popt), so a name that starts with - is still the name.
func RefreshCommand(c *CryptChange, persistent bool) string {
	words := []string{"cryptsetup", "refresh"}
	for _, fl := range append(slices.Clone(c.Add), c.Keep...) {
		if fl == "allow_discards" {
			words = append(words, "--allow-discards")
			continue
		}
		words = append(words, "--perf-"+fl)
	}
	if persistent {
		words = append(words, "--persistent")
	}
	return quote.Shells(append(words, "--", c.Name)...)
}

// SysctlRemedy is doctor's remedy for a fix's sysctls: the runtime
// command of each, then the drop-in that keeps them across reboots (the
// file fix --persist writes, with the same name). Keys that a drop-in
// cannot hold get only the runtime command.
func SysctlRemedy(id string, cs []SysctlChange) string {
	var b strings.Builder
	var lines []string
	for _, c := range cs {
		b.WriteString(SysctlCommand(c.Key, c.To) + "\n")
		if k, err := quote.SysctlKey(c.Key); err == nil {
			lines = append(lines, fmt.Sprintf("%s = %d", k, c.To))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(&b, "printf '%%s\\n' %s > %s\n", quote.Shells(lines...), SysctlDropIn(id))
	}
	return b.String()
}
