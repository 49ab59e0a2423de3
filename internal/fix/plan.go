// Package fix turns findings into a remediation plan: the runtime changes
// that `slowpath fix --apply` makes, the files that keep them across
// reboots, and the cloud changes it only prints. Planning is pure (a
// snapshot and its findings in, a plan out); internal/fix/apply makes the
// changes.
package fix

import (
	"fmt"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Plan is every fix for one host, in the order of its findings (worst first).
type Plan struct {
	Kernel  string  `json:"kernel"`
	Entries []Entry `json:"entries"`
}

// Entry is the fix for one finding.
type Entry struct {
	ID       string         `json:"id"`
	Subject  string         `json:"subject"`
	Severity check.Severity `json:"severity"`
	Summary  string         `json:"summary"`
	// Steps are the runtime changes, applied in order by --apply.
	Steps []Step `json:"steps,omitempty"`
	// Files are the persistent artifacts, written only with --persist.
	Files []File `json:"files,omitempty"`
	// Manual are commands that keep the change but need what slowpath does
	// not hold (a LUKS passphrase): printed, never run.
	Manual []string `json:"manual,omitempty"`
	// Cloud are provider-level changes: printed with the exact CLI, never run.
	Cloud []check.CloudChange `json:"cloud,omitempty"`
	// NotApplicable says why this host cannot take the fix (the kernel or
	// driver lacks what it needs); such an entry has no steps or files.
	NotApplicable string `json:"not_applicable,omitempty"`
}

// Step kinds.
const (
	KindSysctl = "sysctl"
	KindRing   = "ring"
	KindCrypt  = "crypt"
)

// Step is one runtime change. Exactly one of Sysctl, Ring, Crypt is set.
type Step struct {
	Kind   string              `json:"kind"`
	Sysctl *check.SysctlChange `json:"sysctl,omitempty"`
	Ring   *check.RingChange   `json:"ring,omitempty"`
	Crypt  *check.CryptChange  `json:"crypt,omitempty"`
	// Command is the same change as a shell command, for the shell format
	// and for people.
	Command string `json:"command"`
}

// Key identifies what a step changes, so a state file can say a setting
// was changed by slowpath: sysctl:NAME, ring:IFACE:rx, crypt:NAME.
func (s Step) Key() string {
	switch s.Kind {
	case KindSysctl:
		return "sysctl:" + s.Sysctl.Key
	case KindRing:
		return "ring:" + s.Ring.Interface + ":rx"
	case KindCrypt:
		return "crypt:" + s.Crypt.Name
	}
	return s.Kind
}

// File is a persistent artifact. Kind "file" is written whole at Path;
// kind "crypttab" adds Options to the line of Name in /etc/crypttab.
type File struct {
	Kind    string `json:"kind"`
	Path    string `json:"path"`
	Content string `json:"content,omitempty"`
	// Name and Options, for kind crypttab.
	Name    string   `json:"name,omitempty"`
	Options []string `json:"options,omitempty"`
	Why     string   `json:"why"`
}

// Options narrow a plan.
type Options struct {
	// Only keeps the findings with these check ids (all when empty).
	Only []string
}

// Build makes the plan for the findings of s. Findings without a
// structured fix, and passing ones, are left out.
func Build(s *snapshot.Snapshot, findings []check.Finding, o Options) (*Plan, error) {
	for _, id := range o.Only {
		if !knownID(id) {
			return nil, fmt.Errorf("--only %s: no such check (see docs/checks.md)", id)
		}
	}
	p := &Plan{Entries: []Entry{}}
	if s != nil && s.Host != nil {
		p.Kernel = s.Host.KernelRelease
	}
	for _, f := range findings {
		if f.Fix == nil || f.Status != check.Fail {
			continue
		}
		if len(o.Only) > 0 && !slices.Contains(o.Only, f.ID) {
			continue
		}
		p.Entries = append(p.Entries, entry(s, p.Kernel, f))
	}
	return p, nil
}

func knownID(id string) bool {
	for _, c := range check.All() {
		if c.ID == id {
			return true
		}
	}
	return false
}

func entry(s *snapshot.Snapshot, kernel string, f check.Finding) Entry {
	e := Entry{ID: f.ID, Subject: f.Subject, Severity: f.Severity, Summary: f.Summary, Cloud: f.Fix.Cloud}
	var why []string
	var sysctls []check.SysctlChange
	for i := range f.Fix.Sysctls {
		c := f.Fix.Sysctls[i]
		if c.From == nil && sysctlMissing(s, c.Key) {
			why = append(why, fmt.Sprintf("this kernel has no %s (%s is missing)", c.Key, sysctlPath(c.Key)))
			continue
		}
		sysctls = append(sysctls, c)
		e.Steps = append(e.Steps, Step{Kind: KindSysctl, Sysctl: &c,
			Command: fmt.Sprintf("sysctl -w %s=%d", c.Key, c.To)})
	}
	if len(sysctls) > 0 {
		e.Files = append(e.Files, sysctlFile(f.ID, sysctls))
	}
	for i := range f.Fix.Rings {
		r := f.Fix.Rings[i]
		switch {
		case r.RXMax == 0:
			why = append(why, fmt.Sprintf("the %s driver of %s reports no ring maximum", orUnknown(r.Driver), r.Interface))
			continue
		case r.RX > r.RXMax:
			why = append(why, fmt.Sprintf("%s's %s driver allows at most %d RX descriptors, fewer than %d", r.Interface, orUnknown(r.Driver), r.RXMax, r.RX))
			continue
		}
		e.Steps = append(e.Steps, Step{Kind: KindRing, Ring: &r,
			Command: fmt.Sprintf("ethtool -G %s rx %d", r.Interface, r.RX)})
		e.Files = append(e.Files, ringFile(r))
	}
	if c := f.Fix.Crypt; c != nil {
		if reason := cryptNotApplicable(kernel, c); reason != "" {
			why = append(why, reason)
		} else if c.KeyInKeyring {
			// The table names a keyring key that cryptsetup unlinked after
			// opening: a reload of the same table fails with ENOKEY.
			why = append(why, fmt.Sprintf("the key of %s is in the kernel keyring, not in its table, so slowpath cannot reload the table: run the cryptsetup refresh by hand (it asks for the passphrase)", c.Name))
			e.Manual = append(e.Manual, refreshCommand(c, c.Format == "luks2"))
		} else {
			cc := *c
			e.Steps = append(e.Steps, Step{Kind: KindCrypt, Crypt: &cc, Command: cryptRuntimeCommand(c)})
			if c.Format == "luks2" {
				e.Manual = append(e.Manual, refreshCommand(c, true))
			} else {
				e.Files = append(e.Files, File{Kind: "crypttab", Path: "/etc/crypttab", Name: c.Name, Options: crypttabOptions(c.Add),
					Why: fmt.Sprintf("%s is not LUKS2, so no header keeps the flags: crypttab applies them at every open (regenerate the initramfs if it opens at boot)", c.Name)})
			}
		}
	}
	if len(why) > 0 && len(e.Steps) == 0 {
		e.NotApplicable = strings.Join(why, "; ")
		e.Files = nil
	} else if len(why) > 0 {
		// Part of the fix applies; say which part does not.
		e.NotApplicable = "partly: " + strings.Join(why, "; ")
	}
	return e
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

// sysctlPath is the /proc/sys file of a dotted sysctl name.
func sysctlPath(key string) string { return "/proc/sys/" + strings.ReplaceAll(key, ".", "/") }

// sysctlMissing reports whether the collector found the sysctl's file
// absent (an older kernel), as opposed to unreadable.
func sysctlMissing(s *snapshot.Snapshot, key string) bool {
	if s == nil {
		return false
	}
	for _, e := range s.Manifest.Errors {
		if e.Collector == "net.sysctl" && strings.HasSuffix(e.Path, sysctlPath(key)) && e.Kind == hostfs.KindMissing {
			return true
		}
	}
	return false
}

// cryptFlagSince is the kernel release that added each dm-crypt flag:
// same_cpu_crypt and submit_from_crypt_cpus in 4.0 ("dm crypt: add
// 'submit_from_crypt_cpus' option", 2015-02, merged for 4.0),
// no_read_workqueue/no_write_workqueue in 5.9 (39d42fa96ba1), high_priority
// in 6.10 (cryptsetup(8) --perf-high_priority: "available since Linux 6.10").
var cryptFlagSince = map[string][2]int{
	"same_cpu_crypt":         {4, 0},
	"submit_from_crypt_cpus": {4, 0},
	"no_read_workqueue":      {5, 9},
	"no_write_workqueue":     {5, 9},
	"high_priority":          {6, 10},
}

func cryptNotApplicable(kernel string, c *check.CryptChange) string {
	maj, mnr, ok := check.KernelVersion(kernel)
	for _, fl := range c.Add {
		since, known := cryptFlagSince[fl]
		if !known {
			return fmt.Sprintf("slowpath does not know which kernel added the dm-crypt flag %s", fl)
		}
		if !ok {
			return fmt.Sprintf("kernel release %q could not be read, so whether it has %s (%d.%d+) is unknown", kernel, fl, since[0], since[1])
		}
		if maj < since[0] || (maj == since[0] && mnr < since[1]) {
			return fmt.Sprintf("kernel %s predates %d.%d, which added the dm-crypt flag %s", kernel, since[0], since[1], fl)
		}
	}
	return ""
}

// refreshCommand is the cryptsetup refresh that sets the flags (and keeps
// the ones already set, which refresh would otherwise drop).
func refreshCommand(c *check.CryptChange, persistent bool) string {
	var b strings.Builder
	b.WriteString("cryptsetup refresh")
	for _, fl := range append(slices.Clone(c.Add), c.Keep...) {
		if fl == "allow_discards" {
			b.WriteString(" --allow-discards")
			continue
		}
		b.WriteString(" --perf-" + fl)
	}
	if persistent {
		b.WriteString(" --persistent")
	}
	b.WriteString(" " + c.Name)
	return b.String()
}

// cryptRuntimeCommand reloads the live table with the flags added, with
// dmsetup: what `fix --apply` does through the DM ioctls, without a
// passphrase, since the table already holds the key.
func cryptRuntimeCommand(c *check.CryptChange) string {
	return fmt.Sprintf("dmsetup table --showkeys %s | awk '{n=($9==\"\"?0:$9); s=$1; for(i=2;i<=8;i++) s=s\" \"$i; s=s\" \"n+%d; for(i=10;i<=NF;i++) s=s\" \"$i; print s\" %s\"}' | dmsetup reload %s && dmsetup resume %s",
		c.Name, len(c.Add), strings.Join(c.Add, " "), c.Name, c.Name)
}

// crypttabOptions spells dm flags as crypttab options (crypttab(5):
// no-read-workqueue, same-cpu-crypt, ...).
func crypttabOptions(flags []string) []string {
	out := make([]string, len(flags))
	for i, f := range flags {
		out[i] = strings.ReplaceAll(f, "_", "-")
	}
	return out
}

// SysctlFileName is the drop-in a finding's sysctls go to.
func SysctlFileName(id string) string {
	return "/etc/sysctl.d/60-slowpath-" + strings.ReplaceAll(id, ".", "-") + ".conf"
}

func sysctlFile(id string, cs []check.SysctlChange) File {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by slowpath fix for %s.\n", id)
	for _, c := range cs {
		if c.From != nil {
			fmt.Fprintf(&b, "# was %d\n", *c.From)
		}
		fmt.Fprintf(&b, "%s = %d\n", c.Key, c.To)
	}
	return File{Kind: "file", Path: SysctlFileName(id), Content: b.String(), Why: "systemd-sysctl applies it at every boot"}
}

// ringFile is a udev rule that sets the ring whenever the interface
// appears. It matches the PCI (or other bus) device when known, so a
// renamed interface keeps its ring. A udev rule rather than a systemd
// .link file: only the first matching .link file applies, so a new one
// would replace the distribution's 99-default.link naming policy for the
// device (systemd.link(5)).
func ringFile(r check.RingChange) File {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by slowpath fix: RX ring of %s to %d (driver maximum %d, was %d).\n", r.Interface, r.RX, r.RXMax, r.RXFrom)
	match := fmt.Sprintf(`NAME=="%s"`, r.Interface)
	if r.BusInfo != "" && r.Driver != "" {
		match = fmt.Sprintf(`KERNELS=="%s", DRIVERS=="%s"`, r.BusInfo, r.Driver)
	}
	fmt.Fprintf(&b, "ACTION==\"add\", SUBSYSTEM==\"net\", %s, RUN+=\"/usr/sbin/ethtool -G $name rx %d\"\n", match, r.RX)
	return File{Kind: "file", Path: "/etc/udev/rules.d/60-slowpath-ring-" + r.Interface + ".rules", Content: b.String(),
		Why: "udev sets the ring each time the interface appears (boot, driver reload)"}
}
