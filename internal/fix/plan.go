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
	"github.com/slowpath/slowpath/internal/model/tunermodel"
	"github.com/slowpath/slowpath/internal/quote"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Plan is every fix for one host, in the order of its findings (worst first).
type Plan struct {
	// FormatVersion is the version of the plan's JSON (docs/json.md).
	FormatVersion int    `json:"format_version"`
	Kernel        string `json:"kernel"`
	// TunedProfile is tuned's active profile on the host, when the
	// snapshot saw one: --format tuned includes it.
	TunedProfile string  `json:"tuned_profile,omitempty"`
	Entries      []Entry `json:"entries"`
}

// PlanVersion is the version of Plan's JSON shape.
const PlanVersion = 1

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
	// Asks says what the Manual commands ask for, from the volume's LUKS
	// header when it was read (a passphrase of key slot 0, the TPM through
	// a systemd-tpm2 token, clevis).
	Asks string `json:"asks,omitempty"`
	// Butane is the Butane config fragment that keeps the change on nodes
	// provisioned from now on (Flatcar, Fedora CoreOS, RHCOS): for the
	// provisioning config, never written to this host.
	Butane string `json:"butane,omitempty"`
	// Cloud are provider-level changes: printed with the exact CLI, never run.
	Cloud []check.CloudChange `json:"cloud,omitempty"`
	// NotApplicable says why this host cannot take the fix (the kernel or
	// driver lacks what it needs); such an entry has no steps or files.
	NotApplicable string `json:"not_applicable,omitempty"`
	// ByHand is doctor's remedy for a finding that has no change slowpath
	// can make or print as a step (a reformat, an application or platform
	// change, a setting already past what the check proposes): the plan
	// carries it rather than leaving the finding out, so every finding
	// doctor counts as having a fix is in the plan.
	ByHand string `json:"by_hand,omitempty"`
	// Proof is what the entry's changes do to the snapshot, checked before
	// the plan is printed (onpaper.go); nil when it makes no change.
	Proof *Proof `json:"proof,omitempty"`
	// Gain is the finding's measured cost (check.Finding.Cost): the most
	// this entry can win back. The plan is ordered by it (Order).
	Gain *check.Cost `json:"gain,omitempty"`
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
	// Config is the policy the findings were graded with; the plan is
	// checked on paper under the same one.
	Config check.Config
}

// Build makes the plan for the findings of s: an entry for every failing
// finding with a remedy, as steps where slowpath can make the change, else
// as the remedy to carry out by hand (Entry.ByHand). Passing findings and
// those without a remedy are left out.
func Build(s *snapshot.Snapshot, findings []check.Finding, o Options) (*Plan, error) {
	for _, id := range o.Only {
		if !knownID(id) {
			return nil, fmt.Errorf("--only %s: no such check (see docs/checks.md)", id)
		}
	}
	p := &Plan{FormatVersion: PlanVersion, Entries: []Entry{}}
	if s != nil && s.Host != nil {
		p.Kernel = s.Host.KernelRelease
		for _, t := range s.Host.Tuners {
			if t.Name == "tuned" {
				p.TunedProfile = t.Profile
			}
		}
	}
	for _, f := range findings {
		if f.Status != check.Fail || (f.Fix == nil && f.Remediation == "") {
			continue
		}
		if len(o.Only) > 0 && !slices.Contains(o.Only, f.ID) {
			continue
		}
		e := Entry{ID: f.ID, Subject: f.Subject, Severity: f.Severity, Summary: f.Summary, ByHand: f.Remediation}
		if f.Fix != nil {
			e = entry(s, p.Kernel, f)
		}
		e.Gain = f.Cost
		p.Entries = append(p.Entries, e)
	}
	if err := proveOnPaper(s, o.Config, p.Entries); err != nil {
		return nil, fmt.Errorf("checking the plan on the snapshot: %w", err)
	}
	Order(p.Entries)
	return p, nil
}

// Order puts what to do first first: by severity, worst first; within a
// severity, entries whose change clears its finding (on the snapshot or,
// for counters, on the host) before those that do not or that are by
// hand; then by expected gain, the largest measured share first, entries
// with a figure but no share after them and those without a measured cost
// last. Ties keep the findings' order. Shares compare across kinds
// because each is the part of the work spoiled: packets lost of those
// that reached a layer, or an I/O's wait that is neither the device's nor
// the cipher's.
func Order(es []Entry) {
	rank := func(e Entry) (int, int, float64) {
		acts := 1
		if e.Proof != nil && (e.Proof.Result == ProofCleared || e.Proof.Result == ProofOnHost) {
			acts = 0
		}
		switch {
		case e.Gain == nil:
			return acts, 2, 0
		case e.Gain.Share == nil:
			return acts, 1, 0
		}
		return acts, 0, -*e.Gain.Share
	}
	slices.SortStableFunc(es, func(a, b Entry) int {
		if a.Severity != b.Severity {
			return int(b.Severity) - int(a.Severity)
		}
		aa, ak, as := rank(a)
		ba, bk, bs := rank(b)
		switch {
		case aa != ba:
			return aa - ba
		case ak != bk:
			return ak - bk
		case as < bs:
			return -1
		case as > bs:
			return 1
		}
		return 0
	})
}

// GainLine says an entry's expected gain in words, for the text formats.
func GainLine(g *check.Cost) string {
	if g.Share == nil {
		return "expected gain: " + g.Figure
	}
	return fmt.Sprintf("expected gain: %s (%s)", formatShare(*g.Share), g.Figure)
}

// formatShare is a share as a percentage, with as many decimals as a small
// one needs to show it is not zero.
func formatShare(v float64) string {
	p := v * 100
	switch {
	case p >= 10:
		return fmt.Sprintf("%.0f%%", p)
	case p >= 1:
		return fmt.Sprintf("%.1f%%", p)
	case p >= 0.01:
		return fmt.Sprintf("%.2f%%", p)
	}
	return "under 0.01%"
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
	if f.Fix.Crypt != nil {
		e.Butane = f.Fix.Crypt.Butane
	}
	var why []string
	var sysctls []check.SysctlChange
	for i := range f.Fix.Sysctls {
		c := f.Fix.Sysctls[i]
		if c.From == nil && sysctlMissing(s, c.Key) {
			why = append(why, fmt.Sprintf("this kernel has no %s (%s is missing)", c.Key, sysctlPath(c.Key)))
			continue
		}
		if owner := ownedBy(tunermodel.SysctlClaims(snapshotHost(s), c.Key)); owner != "" {
			why = append(why, owner)
			continue
		}
		if c.From != nil && c.To < *c.From {
			// A check proposes a floor; a host already above it keeps its
			// value (the rmem_max a remedy once lowered).
			why = append(why, fmt.Sprintf("%s is %d, above the %d proposed: a fix never lowers it", c.Key, *c.From, c.To))
			continue
		}
		sysctls = append(sysctls, c)
		st := Step{Change: Sysctl(c)}
		st.Command = StepCommand(st)
		e.Steps = append(e.Steps, st)
	}
	if len(sysctls) > 0 {
		if file, err := sysctlFile(f.ID, sysctls); err != nil {
			why = append(why, fmt.Sprintf("no sysctl.d file written: %v: set it at boot with the runtime command instead", err))
		} else {
			e.Files = append(e.Files, file)
		}
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
		case r.RX < r.RXFrom:
			why = append(why, fmt.Sprintf("%s's RX ring is %d, above the %d proposed: a fix never shrinks it", r.Interface, r.RXFrom, r.RX))
			continue
		}
		if owner := ownedBy(tunermodel.RingClaims(snapshotHost(s), r.Interface)); owner != "" {
			why = append(why, owner)
			continue
		}
		st := Step{Change: Ring(r)}
		st.Command = StepCommand(st)
		e.Steps = append(e.Steps, st)
		if file, err := ringFile(r); err != nil {
			why = append(why, fmt.Sprintf("no udev rule written: %v: run %s at boot instead", err, st.Command))
		} else {
			e.Files = append(e.Files, file)
		}
	}
	for i := range f.Fix.Schedulers {
		c := f.Fix.Schedulers[i]
		if !slices.Contains(c.Available, c.To) {
			why = append(why, fmt.Sprintf("the queue of %s offers no %s scheduler (%s)", c.Device, c.To, strings.Join(c.Available, " ")))
			continue
		}
		st := Step{Change: Scheduler(c)}
		st.Command = StepCommand(st)
		e.Steps = append(e.Steps, st)
		if file, err := schedulerFile(c); err != nil {
			why = append(why, fmt.Sprintf("no udev rule written: %v: run %s at boot instead", err, st.Command))
		} else {
			e.Files = append(e.Files, file)
		}
	}
	if c := f.Fix.Crypt; c != nil {
		platform := check.PlatformOf(s)
		if reason := cryptNotApplicable(kernel, c); reason != "" {
			why = append(why, reason)
		} else if platform == check.PlatformTalos {
			// Talos has no shell: neither the dmsetup reload nor
			// cryptsetup can be run there. Its machine configuration
			// keeps the flags (doctor's remedy, carried by hand).
			why = append(why, fmt.Sprintf("Talos has no shell to run dmsetup or cryptsetup in: the flags of %s go into the machine configuration, which Talos applies when it opens the volume at the next boot (the patch is below, by hand)", c.Name))
			e.ByHand = f.Remediation
		} else if c.KeyInKeyring {
			// The table names a keyring key that cryptsetup unlinked after
			// opening: a reload of the same table fails with ENOKEY.
			keyring := fmt.Sprintf("the key of %s is in the kernel keyring, not in its table, so slowpath cannot reload the table", c.Name)
			if c.Format != "luks2" {
				why = append(why, keyring+": run the cryptsetup refresh by hand")
				e.Manual, e.Asks = append(e.Manual, check.RefreshCommand(c, false)), check.AsksAnything
			} else if cmd, asks := check.PersistCommand(c); cmd != "" {
				why = append(why, keyring+": run the cryptsetup refresh by hand")
				e.Manual, e.Asks = append(e.Manual, cmd), asks
			} else {
				// No refresh can open it either: crypttab keeps the flags
				// from the next open on, an edit made by hand (an entry
				// without a step writes no file).
				why = append(why, fmt.Sprintf("%s, and %s: add %s to the options of %s in /etc/crypttab by hand; systemd-cryptsetup applies them at the next open",
					keyring, asks, strings.Join(crypttabOptions(c.Add), ","), c.Name))
			}
		} else {
			st := Step{Change: Crypt(*c)}
			st.Command = StepCommand(st)
			e.Steps = append(e.Steps, st)
			if platform == check.PlatformBottlerocket {
				// The live reload holds for this boot; nothing keeps it.
				why = append(why, fmt.Sprintf("the flags of %s cannot be kept on Bottlerocket: no setting passes them, bootstrap commands run apiclient only, and cryptsetup refresh --persistent needs the volume key, which Bottlerocket seals in the TPM; the runtime change holds until the next boot", c.Name))
			} else if cmd, asks := check.PersistCommand(c); c.Format == "luks2" && cmd != "" {
				e.Manual, e.Asks = append(e.Manual, cmd), asks
			} else if file, err := crypttabFile(c, asks); err != nil {
				why = append(why, fmt.Sprintf("no /etc/crypttab options written: %v: add them to its line by hand, or run the runtime command at every open", err))
			} else {
				e.Files = append(e.Files, file)
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

func snapshotHost(s *snapshot.Snapshot) *snapshot.Host {
	if s == nil {
		return nil
	}
	return s.Host
}

// ownedBy says why a knob another tuner drives is refused: an A/B of it
// would measure the tuner, not the change, and the tuner may set it back.
// A tuned profile whose daemon is not running does not move the knob
// now, so it does not refuse (net.tuner-conflict still reports it);
// slowpath's DaemonSet sets its knobs at every pod start, running or not.
//
// Every tuner that drives the knob is named, each with how to take the knob
// from it: taking it from one leaves the others.
func ownedBy(claims []tunermodel.Claim) string {
	var driving []tunermodel.Claim
	for _, c := range claims {
		if c.Running() || c.Tuner == "slowpath-node-tuning" {
			driving = append(driving, c)
		}
	}
	who := func(c tunermodel.Claim) string {
		if c.PID != 0 {
			return fmt.Sprintf("%s (pid %d)", c.Tuner, c.PID)
		}
		return c.Tuner
	}
	switch len(driving) {
	case 0:
		return ""
	case 1:
		c := driving[0]
		return fmt.Sprintf("%s is driven by %s, seen at %s: %s; a change of it would be measured against %s and may be set back by it. "+
			"To let slowpath change it: %s", c.Knob, who(c), c.Seen, c.Why, c.Tuner, c.Exclude)
	}
	var names, seen, exclude []string
	for _, c := range driving {
		names = append(names, who(c))
		seen = append(seen, fmt.Sprintf("%s seen at %s: %s", c.Tuner, c.Seen, c.Why))
		exclude = append(exclude, c.Exclude)
	}
	return fmt.Sprintf("%s is driven by %d tuners, %s (%s); a change of it would be measured against them and may be set back by any of them. "+
		"To let slowpath change it, take it from each: %s", driving[0].Knob, len(driving), strings.Join(names, " and "), strings.Join(seen, "; "), strings.Join(exclude, "; "))
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

// cryptRuntimeCommand reloads the live table with the flags added, with
// dmsetup: what `fix --apply` does through the DM ioctls, without a
// passphrase, since the table already holds the key. The flags in the awk
// program are from cryptFlagSince only (cryptNotApplicable refuses any
// other); the name is quoted and follows "--" (getopt), so a name that
// starts with - is still the name.
func cryptRuntimeCommand(c *check.CryptChange) string {
	n := quote.Shell(c.Name)
	return fmt.Sprintf("dmsetup table --showkeys -- %s | awk '{n=($9==\"\"?0:$9); s=$1; for(i=2;i<=8;i++) s=s\" \"$i; s=s\" \"n+%d; for(i=10;i<=NF;i++) s=s\" \"$i; print s\" %s\"}' | dmsetup reload -- %s && dmsetup resume -- %s",
		n, len(c.Add), strings.Join(c.Add, " "), n, n)
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

// crypttabFile is the crypttab edit for a mapping that is not LUKS2. The
// name and each option must be writable as a crypttab field
// (quote.Crypttab): there is no escape both crypttab readers share.
func crypttabFile(c *check.CryptChange, luks2Asks string) (File, error) {
	if _, err := quote.Crypttab(c.Name); err != nil {
		return File{}, err
	}
	opts := crypttabOptions(c.Add)
	for _, o := range opts {
		if _, err := quote.CrypttabOption(o); err != nil {
			return File{}, err
		}
	}
	why := fmt.Sprintf("%s is not LUKS2, so no header keeps the flags", c.Name)
	if c.Format == "luks2" {
		why = fmt.Sprintf("%s is LUKS2, but %s, so the header cannot be written", c.Name, luks2Asks)
	}
	return File{Kind: "crypttab", Path: "/etc/crypttab", Name: c.Name, Options: opts,
		Why: why + ": crypttab applies them at every open (regenerate the initramfs if it opens at boot)"}, nil
}

// sysctlFile is the sysctl.d drop-in (sysctl.d(5): "key = value" lines);
// each key must be one systemd-sysctl key (quote.SysctlKey).
func sysctlFile(id string, cs []check.SysctlChange) (File, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by slowpath fix for %s.\n", quote.Comment(id))
	for _, c := range cs {
		k, err := quote.SysctlKey(c.Key)
		if err != nil {
			return File{}, err
		}
		if c.From != nil {
			fmt.Fprintf(&b, "# was %d\n", *c.From)
		}
		fmt.Fprintf(&b, "%s = %d\n", k, c.To)
	}
	return File{Kind: "file", Path: check.SysctlDropIn(id), Content: b.String(), Why: "systemd-sysctl applies it at every boot"}, nil
}

// ringFile is a udev rule that sets the ring whenever the interface
// appears. It matches the PCI (or other bus) device when known, so a
// renamed interface keeps its ring. A udev rule rather than a systemd
// .link file: only the first matching .link file applies, so a new one
// would replace the distribution's 99-default.link naming policy for the
// device (systemd.link(5)).
//
// Every value from the snapshot is a udev match value (quote.Udev); the
// command names the device with udev's own $name substitution (udev(7)),
// so the interface name is never part of RUN. A value udev cannot hold
// literally refuses the file.
func ringFile(r check.RingChange) (File, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by slowpath fix: RX ring of %s to %d (driver maximum %d, was %d).\n", quote.Comment(r.Interface), r.RX, r.RXMax, r.RXFrom)
	var match string
	if r.BusInfo != "" && r.Driver != "" {
		bus, err := quote.Udev(r.BusInfo)
		if err != nil {
			return File{}, err
		}
		drv, err := quote.Udev(r.Driver)
		if err != nil {
			return File{}, err
		}
		match = "KERNELS==" + bus + ", DRIVERS==" + drv
	} else {
		name, err := quote.Udev(r.Interface)
		if err != nil {
			return File{}, err
		}
		match = "NAME==" + name
	}
	fmt.Fprintf(&b, "ACTION==\"add\", SUBSYSTEM==\"net\", %s, RUN+=\"/usr/sbin/ethtool -G $name rx %d\"\n", match, r.RX)
	return File{Kind: "file", Path: "/etc/udev/rules.d/60-slowpath-ring-" + quote.PathComponent(r.Interface) + ".rules", Content: b.String(),
		Why: "udev sets the ring each time the interface appears (boot, driver reload)"}, nil
}

// schedulerFile is the udev rule that sets the scheduler whenever the
// device appears or changes (check.SchedulerRule, as doctor prints it).
func schedulerFile(c check.SchedulerChange) (File, error) {
	rule, err := check.SchedulerRule(c.Device, c.To)
	if err != nil {
		return File{}, err
	}
	content := fmt.Sprintf("# Written by slowpath fix: I/O scheduler of %s to %s (was %s).\n%s\n", quote.Comment(c.Device), quote.Comment(c.To), quote.Comment(c.From), rule)
	return File{Kind: "file", Path: check.SchedulerRuleFile(c.Device), Content: content,
		Why: "udev sets the scheduler each time the device appears or changes (boot, hotplug)"}, nil
}
