package fix

import (
	"fmt"
	"strings"

	"github.com/slowpath/slowpath/internal/quote"
)

// TunedProfileName is the profile directory `--format tuned` is meant for:
// /etc/tuned/slowpath/tuned.conf.
const TunedProfileName = "slowpath"

// Tuned renders the node tuning of the plan (sysctls, NIC rings, I/O
// schedulers) as a tuned profile (tuned.conf(5)): a [sysctl] unit, one net
// unit per interface with its ring= option and one disk unit per device
// with its elevator= option, which is how fleets that run tuned
// persist such settings. When the snapshot saw an active tuned profile,
// the profile includes it, so `tuned-adm profile slowpath` keeps that
// profile's settings and overrides only these. What is not node tuning
// (dm-crypt flags, cloud changes) and what cannot be written safely is
// listed in comments at the top, each with why.
func Tuned(p *Plan) ([]byte, error) {
	node, left := nodeTuning(p)
	var sysctls, nets, disks strings.Builder
	n, nd := 0, 0
	for _, s := range node {
		switch c := s.Change.(type) {
		case Sysctl:
			key, err := quote.SysctlKey(c.Key)
			if err != nil {
				left = append(left, fmt.Sprintf("%s: not written: %v: run %s at boot instead", c.Key, err, StepCommand(s.Step)))
				continue
			}
			fmt.Fprintf(&sysctls, "%s=%d\n", key, c.To)
		case Ring:
			dev, err := quote.TunedDevice(c.Interface)
			if err != nil {
				left = append(left, fmt.Sprintf("ring of %s: not written: %v: run %s at boot instead", c.Interface, err, StepCommand(s.Step)))
				continue
			}
			n++
			// The unit is named by number: an interface name may hold
			// characters an INI section name cannot. tuned hands each NIC
			// to the first net unit that matches it, in priority order, so
			// an included [net] (devices=* by default) would take it unless
			// this unit comes first; dynamic=0, since the net plugin's
			// dynamic tuning lowers an idle link's speed.
			fmt.Fprintf(&nets, "\n[slowpath_net_%d]\ntype=net\npriority=-10\ndevices=%s\ndynamic=0\nring=rx %d\n", n, dev, c.RX)
		case Scheduler:
			dev, err := quote.TunedDevice(c.Device)
			if err == nil && !tunedWord(c.To) {
				err = fmt.Errorf("%q is not a scheduler name tuned reads as it is", c.To)
			}
			if err != nil {
				left = append(left, fmt.Sprintf("scheduler of %s: not written: %v: run %s at boot instead", c.Device, err, StepCommand(s.Step)))
				continue
			}
			nd++
			// As for NICs: the disk plugin hands each device to the first
			// disk unit that matches it, and an included [disk] matches
			// every device; dynamic=0 keeps its power tuning out.
			fmt.Fprintf(&disks, "\n[slowpath_disk_%d]\ntype=disk\npriority=-10\ndevices=%s\ndynamic=0\nelevator=%s\n", nd, dev, c.To)
		}
	}
	var b strings.Builder
	b.WriteString("# slowpath fix: the node tuning of this plan as a tuned profile (tuned.conf(5)).\n")
	fmt.Fprintf(&b, "# Save it as /etc/tuned/%s/tuned.conf, then: tuned-adm profile %s\n", TunedProfileName, TunedProfileName)
	if p.TunedProfile != "" {
		comment(&b, "It includes the active profile ("+p.TunedProfile+"), so that profile's settings stay; these override it.")
	}
	if len(left) > 0 {
		b.WriteString("# Not in this profile (use --format shell for the whole plan):\n")
		for _, l := range left {
			comment(&b, "- "+l)
		}
	}
	if sysctls.Len() == 0 && nets.Len() == 0 && disks.Len() == 0 {
		if len(left) == 0 {
			b.WriteString("# Nothing to fix: no finding has a host-level fix.\n")
		}
		return []byte(b.String()), nil
	}
	b.WriteString("[main]\nsummary=slowpath fix: node tuning\n")
	if inc, ok := tunedInclude(p.TunedProfile); ok {
		fmt.Fprintf(&b, "include=%s\n", inc)
	}
	if sysctls.Len() > 0 {
		b.WriteString("\n[sysctl]\n")
		b.WriteString(sysctls.String())
	}
	b.WriteString(nets.String())
	b.WriteString(disks.String())
	return []byte(b.String()), nil
}

// tunedWord is a value tuned reads as it is: a scheduler name is one word
// of the kernel's (none, mq-deadline, kyber, bfq).
func tunedWord(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	})
}

// tunedInclude writes the active profile names as include=: tuned reads
// them separated by commas or spaces; a name is one directory. Anything
// else (a variable, a path) is left out, never copied into the profile.
func tunedInclude(profile string) (string, bool) {
	names := strings.Fields(profile)
	if len(names) == 0 {
		return "", false
	}
	for _, n := range names {
		if n == TunedProfileName || strings.ContainsFunc(n, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
		}) || n == "." || n == ".." {
			return "", false
		}
	}
	return strings.Join(names, ","), true
}
