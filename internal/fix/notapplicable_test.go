package fix

import (
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

func i64(v int64) *int64 { return &v }

// A kernel or driver that lacks what a fix needs gets the entry marked not
// applicable with why, and no step or file that would fail.
func TestNotApplicable(t *testing.T) {
	crypt := func(add ...string) *check.Fix {
		return &check.Fix{Crypt: &check.CryptChange{Name: "data", Format: "luks2", Add: add}}
	}
	for _, tt := range []struct {
		name, kernel string
		fix          *check.Fix
		errors       []snapshot.CollectError
		want         string // substring of NotApplicable; "" = applicable
		steps        int
	}{
		{"workqueue flags on 5.4", "5.4.0-200-generic", crypt("no_read_workqueue", "no_write_workqueue"), nil, "predates 5.9", 0},
		{"workqueue flags on 5.9", "5.9.0", crypt("no_read_workqueue", "no_write_workqueue"), nil, "", 1},
		{"high_priority on 6.1", "6.1.0-27-cloud-amd64", crypt("high_priority"), nil, "predates 6.10", 0},
		{"high_priority on 6.10", "6.10.3", crypt("high_priority"), nil, "", 1},
		{"same_cpu_crypt on 3.19", "3.19.0", crypt("same_cpu_crypt"), nil, "predates 4.0", 0},
		{"unknown kernel", "", crypt("no_read_workqueue"), nil, "could not be read", 0},
		{"unknown flag", "6.1.0", crypt("go_faster"), nil, "does not know", 0},
		{"keyring key", "6.1.0", &check.Fix{Crypt: &check.CryptChange{Name: "data", Format: "luks2", Add: []string{"no_read_workqueue"}, KeyInKeyring: true}}, nil, "kernel keyring", 0},
		{"ring above max", "6.1.0", &check.Fix{Rings: []check.RingChange{{Interface: "eth0", Driver: "virtio_net", RXFrom: 256, RX: 4096, RXMax: 1024}}}, nil, "at most 1024", 0},
		{"ring without max", "6.1.0", &check.Fix{Rings: []check.RingChange{{Interface: "eth0", RX: 4096}}}, nil, "no ring maximum", 0},
		{"ring at max", "6.1.0", &check.Fix{Rings: []check.RingChange{{Interface: "eth0", RXFrom: 1024, RX: 8192, RXMax: 8192}}}, nil, "", 1},
		{"sysctl missing on this kernel", "4.9.0", &check.Fix{Sysctls: []check.SysctlChange{{Key: "net.core.netdev_budget_usecs", To: 8000}}},
			[]snapshot.CollectError{{Collector: "net.sysctl", Path: "/proc/sys/net/core/netdev_budget_usecs", Kind: hostfs.KindMissing}}, "has no net.core.netdev_budget_usecs", 0},
		{"one of two sysctls missing", "4.9.0", &check.Fix{Sysctls: []check.SysctlChange{{Key: "net.core.netdev_budget", From: i64(300), To: 600}, {Key: "net.core.netdev_budget_usecs", To: 8000}}},
			[]snapshot.CollectError{{Collector: "net.sysctl", Path: "/proc/sys/net/core/netdev_budget_usecs", Kind: hostfs.KindMissing}}, "partly: this kernel has no net.core.netdev_budget_usecs", 1},
		{"sysctl unreadable is still tried", "6.1.0", &check.Fix{Sysctls: []check.SysctlChange{{Key: "net.core.rmem_max", To: 26214400}}},
			[]snapshot.CollectError{{Collector: "net.sysctl", Path: "/proc/sys/net/core/rmem_max", Kind: hostfs.KindPermission}}, "", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &snapshot.Snapshot{Host: &snapshot.Host{KernelRelease: tt.kernel}, Manifest: snapshot.Manifest{Errors: tt.errors}}
			p, err := Build(s, []check.Finding{{ID: "dmcrypt.workqueue", Status: check.Fail, Subject: "x", Fix: tt.fix}}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Entries) != 1 {
				t.Fatalf("entries %+v", p.Entries)
			}
			e := p.Entries[0]
			if tt.want == "" && e.NotApplicable != "" || !strings.Contains(e.NotApplicable, tt.want) {
				t.Errorf("NotApplicable = %q, want %q", e.NotApplicable, tt.want)
			}
			if len(e.Steps) != tt.steps {
				t.Errorf("%d steps, want %d: %+v", len(e.Steps), tt.steps, e.Steps)
			}
			if tt.steps == 0 && len(e.Files) != 0 {
				t.Errorf("a fix that does not apply still has files: %+v", e.Files)
			}
			if sh := Shell(p); tt.steps == 0 && strings.Contains(sh, "\nsysctl -w") || tt.steps == 0 && strings.Contains(sh, "\nethtool -G") || tt.steps == 0 && strings.Contains(sh, "\ndmsetup") {
				t.Errorf("shell runs a command that would fail:\n%s", sh)
			}
		})
	}
}

// Passing findings and findings without a structured fix get no entry.
func TestBuildSkips(t *testing.T) {
	p, err := Build(nil, []check.Finding{
		{ID: "net.backlog-drops", Status: check.Pass, Fix: &check.Fix{Sysctls: []check.SysctlChange{{Key: "a", To: 1}}}},
		{ID: "net.backlog-drops", Status: check.Unknown, Fix: &check.Fix{Sysctls: []check.SysctlChange{{Key: "a", To: 1}}}},
		{ID: "storage.incomplete-path", Status: check.Fail},
	}, Options{})
	if err != nil || len(p.Entries) != 0 {
		t.Fatalf("%+v %v", p, err)
	}
}

// TestPersistByWhatOpensIt: where the LUKS header says how the volume
// opens, the plan prints the refresh that can work and says what it asks
// for; where nothing slowpath knows opens it from a shell, no refresh is
// printed and crypttab keeps the flags instead.
func TestPersistByWhatOpensIt(t *testing.T) {
	for _, tt := range []struct {
		name    string
		opens   []check.Opener
		manual  string // substring of the one manual command; "" = none
		asks    string
		crypttb bool
	}{
		{"header not read", nil, "cryptsetup refresh", "passphrase, key file or token", false},
		{"tpm2 only", []check.Opener{{Kind: "systemd-tpm2", Keyslots: []int{1}}}, "cryptsetup refresh", "systemd-tpm2 token", false},
		{"clevis only", []check.Opener{{Kind: "clevis", Keyslots: []int{1}}}, "clevis luks pass -d /dev/sdb -s 1 | cryptsetup refresh", "clevis holds", false},
		{"unknown token only", []check.Opener{{Kind: "vendor-hsm", Keyslots: []int{0}}}, "", "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &snapshot.Snapshot{Host: &snapshot.Host{KernelRelease: "6.1.0"}}
			fix := &check.Fix{Crypt: &check.CryptChange{Name: "data", Format: "luks2", Add: []string{"no_read_workqueue"}, Opens: tt.opens, Device: "sdb"}}
			p, err := Build(s, []check.Finding{{ID: "dmcrypt.workqueue", Status: check.Fail, Subject: "x", Fix: fix, Remediation: "x"}}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			e := p.Entries[0]
			if len(e.Steps) != 1 {
				t.Errorf("steps %+v: the runtime reload does not depend on the key", e.Steps)
			}
			switch {
			case tt.manual == "" && len(e.Manual) != 0:
				t.Errorf("manual %q: a command that cannot open the volume", e.Manual)
			case tt.manual != "" && (len(e.Manual) != 1 || !strings.Contains(e.Manual[0], tt.manual) || !strings.Contains(e.Asks, tt.asks)):
				t.Errorf("manual %q asks %q, want %q asking %q", e.Manual, e.Asks, tt.manual, tt.asks)
			}
			hasCrypttab := len(e.Files) == 1 && e.Files[0].Kind == "crypttab" && strings.Contains(e.Files[0].Why, "is LUKS2, but")
			if hasCrypttab != tt.crypttb {
				t.Errorf("files %+v, crypttab wanted: %v", e.Files, tt.crypttb)
			}
		})
	}
}
