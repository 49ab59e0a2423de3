package fix

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// checkCovers holds plan p to the findings it was built from: every failing
// finding doctor counts as having a fix (a remedy, or a structured fix) has
// exactly one entry, with steps, a reason it does not apply, or the remedy
// by hand; no entry is for anything else; and no step moves a value the
// wrong way (a sysctl below what the host has, a ring smaller).
func checkCovers(t *testing.T, name string, s *snapshot.Snapshot, fs []check.Finding, p *Plan) {
	t.Helper()
	want := map[string]int{}
	for _, f := range fs {
		if f.Status != check.Fail || (f.Remediation == "" && f.Fix == nil) {
			continue
		}
		if f.Fix != nil && f.Remediation == "" {
			t.Errorf("%s: %s on %s has a structured fix but doctor prints no remedy", name, f.ID, f.Subject)
		}
		want[f.ID+" on "+f.Subject]++
	}
	remedy := map[string]string{}
	for _, f := range fs {
		if f.Status == check.Fail {
			remedy[f.ID+" on "+f.Subject] += f.Remediation
		}
	}
	got := map[string]int{}
	for _, e := range p.Entries {
		on := e.ID + " on " + e.Subject
		got[on]++
		// One source: the commands the plan prints for a sysctl, a ring
		// or a refresh, and the drop-in it writes, are in doctor's
		// remedy word for word (check.SysctlCommand, RingCommand,
		// RefreshCommand, SysctlDropIn render both).
		var said []string
		for _, s := range e.Steps {
			switch s.Change.(type) {
			case Sysctl, Ring, Scheduler:
				said = append(said, s.Command)
			}
		}
		said = append(said, e.Manual...)
		for _, f := range e.Files {
			if strings.HasPrefix(f.Path, "/etc/sysctl.d/") || strings.Contains(f.Path, "-scheduler-") {
				said = append(said, f.Path)
				// and what the file says, line by line
				for _, l := range strings.Split(f.Content, "\n") {
					if l != "" && !strings.HasPrefix(l, "#") {
						said = append(said, l)
					}
				}
			}
		}
		for _, c := range said {
			if !strings.Contains(remedy[on], c) {
				t.Errorf("%s: the plan for %s prints %q, which doctor's remedy does not:\n%s", name, on, c, remedy[on])
			}
		}
		if len(e.Steps) == 0 && e.NotApplicable == "" && e.ByHand == "" && len(e.Manual) == 0 && len(e.Cloud) == 0 {
			t.Errorf("%s: the entry for %s says nothing: no step, no reason, no remedy", name, on)
		}
		// Checked on paper: every entry that makes a change has a proof,
		// and one that does not clear its finding says what remains.
		switch {
		case (len(e.Steps) > 0 || hasCloudSetting(e.Cloud)) && e.Proof == nil:
			t.Errorf("%s: %s makes a change but was not checked on the snapshot", name, on)
		case e.Proof != nil && e.Proof.Result == ProofNotDone:
			t.Errorf("%s: %s could not be checked on its own snapshot: %s", name, on, e.Proof.Remains)
		case e.Proof != nil && e.Proof.Result == ProofRemains && e.Proof.Remains == "":
			t.Errorf("%s: %s does not clear its finding and does not say what remains", name, on)
		case e.Proof != nil && e.Proof.Result == ProofOnHost && !Watched(e):
			t.Errorf("%s: %s left to the host, but no counters watch it", name, on)
		}
		for _, s := range e.Steps {
			switch c := s.Change.(type) {
			case Sysctl:
				if c.From != nil && c.To < *c.From {
					t.Errorf("%s: %s lowers %s from %d to %d", name, on, c.Key, *c.From, c.To)
				}
			case Ring:
				if c.RX < c.RXFrom {
					t.Errorf("%s: %s shrinks %s's RX ring from %d to %d", name, on, c.Interface, c.RXFrom, c.RX)
				}
			}
		}
	}
	for on, n := range want {
		if got[on] != n {
			t.Errorf("%s: doctor has %d finding(s) %s with a fix, the plan %d entries", name, n, on, got[on])
		}
	}
	for on := range got {
		if want[on] == 0 {
			t.Errorf("%s: the plan has an entry %s that doctor does not count", name, on)
		}
	}
	checkPlanClears(t, name, s, p)
}

// checkPlanClears makes every change of the plan to one copy of s, as
// following the whole plan would, and runs doctor's analysis again: every
// finding an entry says its change clears is gone, and no entry's change
// made a finding fail that did not fail before.
func checkPlanClears(t *testing.T, name string, s *snapshot.Snapshot, p *Plan) {
	t.Helper()
	if s == nil {
		return
	}
	before := map[string]bool{}
	if r, err := analyze.Run(s, check.Config{}); err == nil {
		for _, f := range r.Findings {
			if f.Status == check.Fail {
				before[f.ID+" on "+f.Subject] = true
			}
		}
	}
	after, err := copySnapshot(s)
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]bool{}
	for _, e := range p.Entries {
		if e.Proof == nil || e.Proof.Result == ProofNotDone {
			continue
		}
		if err := applyEntry(after, e); err != nil {
			t.Errorf("%s: %s on %s: %v", name, e.ID, e.Subject, err)
			return
		}
		if e.Proof.Result == ProofCleared {
			claims[e.ID+" on "+e.Subject] = true
		}
	}
	r, err := analyze.Run(after, check.Config{})
	if err != nil {
		t.Fatalf("%s: the snapshot after the whole plan: %v", name, err)
	}
	for _, f := range r.Findings {
		on := f.ID + " on " + f.Subject
		if f.Status != check.Fail {
			continue
		}
		if claims[on] {
			t.Errorf("%s: after the whole plan, %s still fails, though its entry says the change clears it: %s", name, on, f.Summary)
		}
		if !before[on] {
			t.Errorf("%s: after the whole plan, %s fails and did not before: %s", name, on, f.Summary)
		}
	}
}

// TestPlanCoversDoctor runs the property over every fixture host: doctor's
// remedies and fix's entries match one to one (before, 28 of 64 failing
// findings with a remedy had no entry: storage.stacked-encryption on GCP
// and AWS, dmcrypt.sector-size, dmcrypt.scheduler, net.tuner-conflict).
func TestPlanCoversDoctor(t *testing.T) {
	byHand, total := 0, 0
	proofs := map[string]int{}
	for _, name := range fixtureHosts(t) {
		s, fs := fixtureFindings(t, name)
		p := planOf(t, s, fs)
		checkCovers(t, name, s, fs, p)
		for _, e := range p.Entries {
			total++
			if e.Proof != nil {
				proofs[e.Proof.Result]++
			}
			if e.ByHand != "" {
				byHand++
			}
		}
	}
	t.Logf("%d entries over the fixtures, %d of them by hand; proofs: %v", total, byHand, proofs)
	if byHand == 0 {
		t.Error("no fixture has a finding whose remedy is by hand: the property is not exercised")
	}
}

func fixtureFindings(t *testing.T, name string) (*snapshot.Snapshot, []check.Finding) {
	t.Helper()
	s, err := snapshot.Load(filepath.Join(hostsDir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return s, findingsOf(t, s)
}

// findingsOf analyses s as doctor does.
func findingsOf(t *testing.T, s *snapshot.Snapshot) []check.Finding {
	t.Helper()
	r, err := analyze.Run(s, check.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Findings
}

// planOf is the plan of s's findings, as fix builds it.
func planOf(t *testing.T, s *snapshot.Snapshot, fs []check.Finding) *Plan {
	t.Helper()
	p, err := Build(s, fs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A host dropping UDP at the socket whose rmem_max is already above what
// the check proposes: the remedy must not lower it, in doctor or in the
// plan, and the finding stays in the plan, by hand. The fixture
// rhel-9-i4i-luks-tuned is such a host as collected; net-aws-ena with the
// value moved is the same host without the rest.
func TestRmemMaxNeverLowered(t *testing.T) {
	rhel, _ := fixtureFindings(t, "rhel-9-i4i-luks-tuned")
	ena, _ := fixtureFindings(t, "net-aws-ena")
	ena.Net.Sysctls["net.core.rmem_max"] = 33554432
	for name, s := range map[string]*snapshot.Snapshot{"rhel-9-i4i-luks-tuned": rhel, "net-aws-ena with rmem_max 33554432": ena} {
		t.Run(name, func(t *testing.T) { rmemMaxNeverLowered(t, s) })
	}
}

func rmemMaxNeverLowered(t *testing.T, s *snapshot.Snapshot) {
	if got := s.Net.Sysctls["net.core.rmem_max"]; got != 33554432 {
		t.Fatalf("rmem_max %d, want the fixture's 33554432", got)
	}
	r, err := analyze.Run(s, check.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var f *check.Finding
	for i := range r.Findings {
		if r.Findings[i].ID == "net.socket-rcvbuf" && r.Findings[i].Status == check.Fail {
			f = &r.Findings[i]
		}
	}
	if f == nil {
		t.Fatal("net.socket-rcvbuf does not fire: the fixture no longer drops at the socket")
	}
	if strings.Contains(f.Remediation, "rmem_max=") || f.Fix != nil {
		t.Errorf("remedy for rmem_max 33554432 sets it:\n%s\nfix %+v", f.Remediation, f.Fix)
	}
	if !strings.Contains(f.Remediation, "already 33554432") {
		t.Errorf("remedy does not say rmem_max is already large enough:\n%s", f.Remediation)
	}
	p, err := Build(s, r.Findings, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkCovers(t, t.Name(), s, r.Findings, p)
	for _, e := range p.Entries {
		if e.ID == "net.socket-rcvbuf" && (e.ByHand == "" || len(e.Steps) > 0) {
			t.Errorf("entry %+v, want the remedy by hand and no step", e)
		}
	}
	// A structured fix that would lower a value is refused by the plan
	// too, whatever a check asks.
	from := int64(33554432)
	bad := []check.Finding{{ID: "net.socket-rcvbuf", Status: check.Fail, Severity: check.Warning, Subject: "sockets", Remediation: "x",
		Fix: &check.Fix{Sysctls: []check.SysctlChange{{Key: "net.core.rmem_max", From: &from, To: 26214400}}}}}
	p, err = Build(s, bad, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entries) != 1 || len(p.Entries[0].Steps) != 0 || !strings.Contains(p.Entries[0].NotApplicable, "never lowers") {
		t.Errorf("plan for a lowering fix: %+v", p.Entries)
	}
}

// FuzzPlanCoversDoctor moves the values the net checks propose fixes for
// (the backlog, rmem_max, every RX ring) on the network fixtures, keeps
// the snapshots that still validate, and holds each plan to checkCovers.
func FuzzPlanCoversDoctor(f *testing.F) {
	hosts := []string{"net-aws-ena", "net-azure-accelnet", "net-tuned-bpftune", "net-healthy", "net-virtio-one-sample"}
	for i := range hosts {
		f.Add(uint8(i), int64(1000), int64(212992), uint32(256))
		f.Add(uint8(i), int64(1<<20), int64(1<<30), uint32(1<<14))
	}
	f.Add(uint8(0), int64(65536), int64(26214400), uint32(0))
	f.Fuzz(func(t *testing.T, host uint8, backlog, rmem int64, ring uint32) {
		name := hosts[int(host)%len(hosts)]
		s, err := snapshot.Load(filepath.Join(hostsDir, name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if s.Net == nil {
			t.Fatalf("%s has no net section", name)
		}
		if s.Net.Sysctls == nil {
			s.Net.Sysctls = map[string]int64{}
		}
		s.Net.Sysctls["net.core.netdev_max_backlog"] = backlog
		s.Net.Sysctls["net.core.rmem_max"] = rmem
		for i := range s.Net.Interfaces {
			if r := s.Net.Interfaces[i].Ring; r != nil {
				r.RX = ring
			}
		}
		coversMoved(t, fmt.Sprintf("%s backlog %d rmem_max %d rx %d", name, backlog, rmem, ring), s)
	})
}

// A backlog already above the largest the check proposes (65536) with
// drops: the remedy points elsewhere, and nothing lowers it.
func TestBacklogAboveProposalNotLowered(t *testing.T) {
	s, fs := fixtureFindings(t, "net-azure-accelnet")
	fired := false
	for _, f := range fs {
		fired = fired || (f.ID == "net.backlog-drops" && f.Status == check.Fail && f.Fix != nil)
	}
	if !fired {
		t.Fatal("net.backlog-drops has no fix on net-azure-accelnet: the fixture no longer drops in the backlog")
	}
	s.Net.Sysctls["net.core.netdev_max_backlog"] = 131072
	r, err := analyze.Run(s, check.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range r.Findings {
		if f.ID != "net.backlog-drops" || f.Status != check.Fail {
			continue
		}
		if f.Fix != nil || strings.Contains(f.Remediation, "sysctl -w") || !strings.Contains(f.Remediation, "already 131072") {
			t.Errorf("backlog 131072: fix %+v, remedy:\n%s", f.Fix, f.Remediation)
		}
	}
	p, err := Build(s, r.Findings, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkCovers(t, "net-azure-accelnet with backlog 131072", s, r.Findings, p)
}

// The README's fixture: turning Azure encryption at host off, as the
// stacked-encryption remedy says, leaves two layers; the plan says so
// rather than claiming the finding, and the dm-crypt flags clear theirs.
func TestStackedEncryptionPlanSaysWhatRemains(t *testing.T) {
	s, fs := fixtureFindings(t, "azure-e16dv5-eah-luks")
	p := planOf(t, s, fs)
	got := map[string]*Proof{}
	for _, e := range p.Entries {
		got[e.ID] = e.Proof
	}
	if pr := got["storage.stacked-encryption"]; pr == nil || pr.Result != ProofRemains || !strings.Contains(pr.Remains, "2 encryption layers") || !strings.Contains(pr.Remains, "dm-crypt (kernel-cpu) over cloud-disk (drive)") {
		t.Errorf("stacked-encryption proof %+v, want it to say 2 layers remain: dm-crypt over the cloud disk", pr)
	}
	if pr := got["dmcrypt.workqueue"]; pr == nil || pr.Result != ProofCleared {
		t.Errorf("dmcrypt.workqueue proof %+v, want cleared", pr)
	}
	var sh bytes.Buffer
	if err := Write(&sh, p, "shell"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sh.String(), "# checked on the snapshot: this change does not clear the finding; after it: 2 encryption layers") {
		t.Errorf("the shell plan does not say what remains:\n%s", sh.String())
	}
	// The snapshot the plan was built from is unchanged by the proof.
	if eah := s.Cloud.Azure.EncryptionAtHost; eah == nil || !*eah {
		t.Errorf("the proof changed the original snapshot: encryption at host %v", eah)
	}
}

func TestAddCryptFlags(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{in: "aes-xts-plain64 redacted:512 0 259:1 4096", want: "aes-xts-plain64 redacted:512 0 259:1 4096 2 no_read_workqueue no_write_workqueue"},
		{in: "aes-xts-plain64 redacted:512 0 259:1 4096 1 allow_discards", want: "aes-xts-plain64 redacted:512 0 259:1 4096 3 allow_discards no_read_workqueue no_write_workqueue"},
		{in: "aes-xts-plain64 redacted:512 0 259:1 4096 2 no_read_workqueue sector_size:4096", want: "aes-xts-plain64 redacted:512 0 259:1 4096 3 no_read_workqueue sector_size:4096 no_write_workqueue"},
		{in: "aes-xts-plain64 redacted:512 0 259:1 4096 3 allow_discards", err: "count"},
		{in: "aes-xts-plain64 redacted:512 0", err: "at least"},
	} {
		got, err := addCryptFlags(tt.in, []string{"no_read_workqueue", "no_write_workqueue"})
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("addCryptFlags(%q) = %q, %v; want an error with %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("addCryptFlags(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// TestPlatformMechanism: the platform decides how a fix is carried out.
// Talos has no shell: its plan runs no command in any format and carries
// the machine-configuration patch by hand, for each Talos version's
// document. Bottlerocket seals the volume key in the TPM: its plan
// offers no cryptsetup refresh --persistent and says the runtime change
// lasts until the next boot.
func TestPlatformMechanism(t *testing.T) {
	for _, version := range []string{"v1.9.5", "v1.11.2", "v1.12.1"} {
		s, _ := fixtureFindings(t, "talos-luks-default")
		s.Host.OS.VersionID = version
		fs := findingsOf(t, s)
		p := planOf(t, s, fs)
		checkCovers(t, "talos "+version, s, fs, p)
		for _, e := range p.Entries {
			if e.ID != "dmcrypt.workqueue" {
				continue
			}
			if len(e.Steps) != 0 || len(e.Manual) != 0 || len(e.Files) != 0 || !strings.Contains(e.NotApplicable, "Talos has no shell") || !strings.Contains(e.ByHand, "machineconfig") {
				t.Errorf("talos %s: entry %+v, want no command and the machine-config patch by hand", version, e)
			}
		}
		// The shell script runs what is not a comment.
		for _, l := range strings.Split(Shell(p), "\n") {
			if c := strings.TrimSpace(l); strings.HasPrefix(c, "#") || c == "" || c == "set -eu" {
				continue
			}
			if strings.Contains(l, "cryptsetup") || strings.Contains(l, "dmsetup") {
				t.Errorf("talos %s: the shell plan runs a command Talos cannot: %s", version, l)
			}
		}
	}
	s, fs := fixtureFindings(t, "bottlerocket-i4i-ephemeral-luks")
	p := planOf(t, s, fs)
	for _, e := range p.Entries {
		if e.ID != "dmcrypt.workqueue" {
			continue
		}
		if len(e.Manual) != 0 || !strings.Contains(e.NotApplicable, "seals in the TPM") || !strings.Contains(e.NotApplicable, "until the next boot") {
			t.Errorf("bottlerocket: entry %+v, want no refresh by hand and the reason", e)
		}
	}
}

// coversMoved holds the plan of a fuzzed snapshot s to checkCovers, when s
// is still valid: what decoding would accept, analysed as doctor does.
func coversMoved(t *testing.T, name string, s *snapshot.Snapshot) {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := snapshot.Decode(bytes.NewReader(b))
	if err != nil {
		return
	}
	r, err := analyze.Run(s2, check.Config{})
	if err != nil {
		return
	}
	p, err := Build(s2, r.Findings, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkCovers(t, name, s2, r.Findings, p)
}

// cryptFlags are the optional dm-crypt flags the storage fuzz turns on and
// off, one bit each.
var cryptFlags = []string{"allow_discards", "same_cpu_crypt", "submit_from_crypt_cpus", "no_read_workqueue", "no_write_workqueue"}

// FuzzPlanCoversDoctorStorage moves what the storage checks propose fixes
// for on the storage fixtures (every crypt table's optional flags, every
// NVMe queue's scheduler among those it offers, the kernel release), keeps
// the snapshots that still validate, and holds each plan to checkCovers:
// one entry per remedy, proofs that hold when the whole plan is made.
func FuzzPlanCoversDoctorStorage(f *testing.F) {
	hosts := []string{"aws-i4i-luks-default", "baremetal-crypt-on-crypt-loop", "longhorn-v2-mayastor-nvmf", "rhel-9-i4i-luks-tuned",
		"flatcar-aws-i4i-luks-default", "bottlerocket-i4i-ephemeral-luks", "talos-1.9-luks-default", "kvm-qemu64-ramdisk-crypt-5.4"}
	for i := range hosts {
		f.Add(uint8(i), uint8(0), uint8(0), false)
		f.Add(uint8(i), uint8(0b11000), uint8(1), true)
	}
	f.Fuzz(func(t *testing.T, host, flags, sched uint8, oldKernel bool) {
		name := hosts[int(host)%len(hosts)]
		s, _ := fixtureFindings(t, name)
		for i := range s.Storage.BlockDevices {
			d := &s.Storage.BlockDevices[i]
			if d.DM != nil {
				for j := range d.DM.Targets {
					if tg := &d.DM.Targets[j]; tg.Type == "crypt" {
						tg.Params = withFlags(tg.Params, flags)
					}
				}
			}
			if q := d.Queue; q != nil && len(q.Schedulers) > 0 {
				q.Scheduler = q.Schedulers[int(sched)%len(q.Schedulers)]
			}
		}
		if oldKernel && s.Host != nil {
			s.Host.KernelRelease = "5.4.0-200-generic"
		}
		coversMoved(t, fmt.Sprintf("%s flags %05b scheduler %d old kernel %v", name, flags, sched, oldKernel), s)
	})
}

// withFlags rewrites a crypt target's optional parameters to the flags
// whose bits are set, keeping any that take a value (sector_size:4096).
func withFlags(params string, bits uint8) string {
	f := strings.Fields(params)
	if len(f) < 5 {
		return params
	}
	var keep []string
	if len(f) > 6 {
		for _, o := range f[6:] {
			if strings.Contains(o, ":") {
				keep = append(keep, o)
			}
		}
	}
	for i, fl := range cryptFlags {
		if bits&(1<<i) != 0 {
			keep = append(keep, fl)
		}
	}
	out := append(f[:5:5], fmt.Sprint(len(keep)))
	if len(keep) == 0 {
		return strings.Join(f[:5], " ")
	}
	return strings.Join(append(out, keep...), " ")
}
