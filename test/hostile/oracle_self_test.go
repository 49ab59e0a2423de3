package hostile_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/quote"
)

// recorder is a testing.TB that keeps the errors an oracle reports, so the
// oracle itself is tested: silent on correct output, firing on the wrong.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestShellOracle: a plan quoted with internal/quote passes, with the name
// as one argument; the unquoted renderings of the issue fail.
func TestShellOracle(t *testing.T) {
	names := []string{"a;reboot", "$(id)", "`id`", "x'y", "-rf", "*", "~root", "#x", `a",RUN+="id`, `a\b`, "$name", "a\nreboot", "a b"}
	for _, h := range names {
		good := []string{
			"#!/bin/sh\nset -eu\n# == net.ring-undersized\nethtool -G " + quote.Shell(h) + " rx 8192\nmkdir -p /etc/udev/rules.d\n" +
				"cat > " + quote.Shell("/etc/udev/rules.d/60-slowpath-ring-"+h+".rules") + " <<'EOF'\nNAME==\"x\", RUN+=\"/usr/sbin/ethtool -G $name rx 8192\"\nEOF\n",
			"set -eu\ni=" + quote.Shell(h) + "\nethtool -G \"$i\" rx 8192\n",
		}
		for _, script := range good {
			r := &recorder{TB: t}
			calls := checkShell(r, "good", script, shellRules{commands: planCommands})
			argIs(r, "good", calls, "ethtool", "-G", 2, h)
			if len(r.errs) > 0 {
				t.Errorf("%q: the oracle fails a correctly quoted script:\n%s\n%s", h, script, strings.Join(r.errs, "\n"))
			}
		}
	}
	bad := map[string]string{
		"a;reboot": "ethtool -G a;reboot rx 8192\n",
		"$(id)":    "ethtool -G $(id) rx 8192\n",
		"`id`":     "ethtool -G `id` rx 8192\n",
		"*":        "ethtool -G * rx 8192\n",
		"~root":    "ethtool -G ~root rx 8192\n",
		"#x":       "ethtool -G #x rx 8192\n",
		"$name":    "ethtool -G $name rx 8192\n",
		"a b":      "ethtool -G \"a\" \"b\" rx 8192\n",
		"x'y":      "ethtool -G x'y rx 8192\n",
		"a;b":      "cat > /etc/udev/rules.d/60-a;b.rules <<'EOF'\nEOF\nethtool -G 'a;b' rx 8192\n",
	}
	for h, script := range bad {
		r := &recorder{TB: t}
		calls := checkShell(r, "bad", script, shellRules{commands: planCommands})
		argIs(r, "bad", calls, "ethtool", "-G", 2, h)
		if len(r.errs) == 0 {
			t.Errorf("%q: the oracle passes %q", h, script)
		}
	}
}

// TestUdevOracle: udev's own escaping (\" in a plain value, e"..." with C
// escapes) passes; a name that closes the value and adds a RUN fails.
func TestUdevOracle(t *testing.T) {
	const h = `a",RUN+="id`
	good := []string{
		"# ring\nACTION==\"add\", SUBSYSTEM==\"net\", NAME==\"a\\\",RUN+=\\\"id\", RUN+=\"/usr/sbin/ethtool -G $name rx 8192\"\n",
		"ACTION==\"add\", SUBSYSTEM==\"net\", NAME==e\"a\\\",RUN+=\\\"id\", RUN+=\"/usr/sbin/ethtool -G $name rx 8192\"\n",
		"ACTION==\"add\", SUBSYSTEM==\"net\", KERNELS==\"0000:00:05.0\", DRIVERS==\"ena\", RUN+=\"/usr/sbin/ethtool -G $name rx 8192\"\n",
	}
	for _, rule := range good {
		r := &recorder{TB: t}
		checkUdevRing(r, "good", rule, h)
		if len(r.errs) > 0 {
			t.Errorf("the oracle fails a correct rule %q: %s", rule, strings.Join(r.errs, "; "))
		}
	}
	bad := []string{
		"ACTION==\"add\", SUBSYSTEM==\"net\", NAME==\"a\",RUN+=\"id\", RUN+=\"/usr/sbin/ethtool -G $name rx 8192\"\n",
		"ACTION==\"add\", NAME==\"x\", RUN+=\"/usr/sbin/ethtool -G $name rx 8192\"\nRUN+=\"/bin/id\"\n",
		"ACTION==\"add\", NAME==\"x\", PROGRAM=\"/bin/id\", RUN+=\"/usr/sbin/ethtool -G $name rx 8192\"\n",
		"ACTION==\"add\", NAME==\"x, RUN+=\"/usr/sbin/ethtool -G $name rx 8192\"\n",
	}
	for _, rule := range bad {
		r := &recorder{TB: t}
		checkUdevRing(r, "bad", rule, h)
		if len(r.errs) == 0 {
			t.Errorf("the oracle passes %q", rule)
		}
	}
}
