package prove

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/fix/apply"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testing/hostfstest"
)

// The toggle runs the real applier against a temporary /proc/sys tree and
// an in-memory dm table that answers as the kernel's does; the live DM
// ioctls are exercised by the VM lab (test/vm TestFixProve).

type memDM map[string]string

func (m memDM) Params(n string) (string, []byte, error) {
	p, ok := m[n]
	if !ok {
		return "", nil, syscall.ENXIO
	}
	return "crypt", []byte(p), nil
}

func (m memDM) Replace(n string, p []byte) error {
	m[n] = string(p)
	return nil
}

const table = "aes-xts-plain64 abab 0 259:1 0"

func newApplier(t *testing.T) (*apply.Applier, memDM, string) {
	t.Helper()
	root := t.TempDir()
	proc := filepath.Join(root, "proc")
	hostfstest.WriteFile(t, proc, "sys/net/core/netdev_max_backlog", "1000\n")
	hostfstest.WriteFile(t, proc, "sys/kernel/random/boot_id", "boot-1\n")
	dm := memDM{"data": table + " 1 allow_discards"}
	a, err := apply.Open(apply.Host{FS: hostfs.New(root), DM: dm}, filepath.Join(root, "state", "state.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, dm, proc
}

func cryptEntry(name string, add ...string) fix.Entry {
	return fix.Entry{ID: "dmcrypt.workqueue", Subject: "/dev/mapper/" + name,
		Steps: []fix.Step{{Change: fix.Crypt{Name: name, Add: add}}}}
}

func sysctlEntry(k string, v int64) fix.Entry {
	return fix.Entry{ID: "net.backlog-drops", Subject: "softnet",
		Steps: []fix.Step{{Change: fix.Sysctl{Key: k, To: v}}}}
}

func TestToggleCrypt(t *testing.T) {
	a, dm, _ := newApplier(t)
	tg, err := NewToggle(a, cryptEntry("data", "no_read_workqueue", "no_write_workqueue"))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := tg.On(); err != nil {
			t.Fatal(err)
		}
		if got := dm["data"]; got != table+" 3 allow_discards no_read_workqueue no_write_workqueue" {
			t.Fatalf("on: table %q", got)
		}
		if st := a.State(); len(st.Changes) != 1 || st.Changes[0].Previous != "allow_discards" {
			t.Fatalf("on: the state file does not record the change: %+v", st)
		}
		if err := tg.Off(); err != nil {
			t.Fatal(err)
		}
		if got := dm["data"]; got != table+" 1 allow_discards" {
			t.Fatalf("off: table %q, want the original", got)
		}
		if st := a.State(); len(st.Changes) != 0 {
			t.Fatalf("off: the state still records %+v", st.Changes)
		}
	}
	if _, err := os.Stat(a.StatePath); !os.IsNotExist(err) {
		t.Errorf("state file left after the last off: %v", err)
	}
	if err := tg.Off(); err != nil {
		t.Errorf("a second off: %v", err)
	}
}

func TestToggleSysctl(t *testing.T) {
	a, _, proc := newApplier(t)
	p := filepath.Join(proc, "sys/net/core/netdev_max_backlog")
	tg, err := NewToggle(a, sysctlEntry("net.core.netdev_max_backlog", 4096))
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.On(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); strings.TrimSpace(string(b)) != "4096" || !tg.IsOn() {
		t.Fatalf("on: %q", b)
	}
	if err := tg.Off(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); strings.TrimSpace(string(b)) != "1000" || tg.IsOn() {
		t.Fatalf("off: %q", b)
	}
}

func TestToggleRefusals(t *testing.T) {
	a, dm, proc := newApplier(t)
	// Already at the planned value: off and on would be one configuration.
	tg, err := NewToggle(a, sysctlEntry("net.core.netdev_max_backlog", 1000))
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.On(); !errors.Is(err, ErrNothingToToggle) || tg.IsOn() {
		t.Errorf("on at the planned value: %v", err)
	}
	// Recorded by an earlier --apply: refused before anything changes.
	if _, err := a.ApplyEntry(cryptEntry("data", "same_cpu_crypt")); err != nil {
		t.Fatal(err)
	}
	before := dm["data"]
	if _, err := NewToggle(a, cryptEntry("data", "no_read_workqueue")); !errors.Is(err, ErrRecorded) || !strings.Contains(err.Error(), "fix --rollback first") {
		t.Errorf("an entry recorded by an earlier apply: %v", err)
	}
	if dm["data"] != before {
		t.Errorf("a refused toggle changed the table: %q", dm["data"])
	}
	if _, err := NewToggle(a, fix.Entry{ID: "x"}); err == nil {
		t.Error("an entry without steps: no error")
	}
	// Someone changes the setting while it is on: off refuses to
	// overwrite it and says how to restore.
	tg, err = NewToggle(a, sysctlEntry("net.core.netdev_max_backlog", 2048))
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.On(); err != nil {
		t.Fatal(err)
	}
	hostfstest.WriteFile(t, proc, "sys/net/core/netdev_max_backlog", "7\n")
	if err := tg.Off(); !errors.Is(err, apply.ErrChangedSince) || !strings.Contains(err.Error(), "fix --rollback") {
		t.Errorf("off after someone else's change: %v", err)
	}
}

// TestApplyKept: the kept entries are applied and recorded; a failing
// one undoes those applied before it.
func TestApplyKept(t *testing.T) {
	a, dm, proc := newApplier(t)
	kept := func(e fix.Entry, keep bool) *Proof { return &Proof{Entry: e, Decision: Decision{Keep: keep}} }
	ps := []*Proof{kept(cryptEntry("data", "no_read_workqueue"), true), kept(sysctlEntry("net.core.netdev_max_backlog", 2048), false)}
	if err := applyKept(a, ps); err != nil {
		t.Fatal(err)
	}
	if !ps[0].Applied || ps[1].Applied || dm["data"] != table+" 2 allow_discards no_read_workqueue" {
		t.Errorf("applied %v %v, table %q", ps[0].Applied, ps[1].Applied, dm["data"])
	}
	if b, _ := os.ReadFile(filepath.Join(proc, "sys/net/core/netdev_max_backlog")); strings.TrimSpace(string(b)) != "1000" {
		t.Errorf("a rolled-back entry was applied: %s", b)
	}
	if st := a.State(); len(st.Changes) != 1 || st.Changes[0].Key != "crypt:data" {
		t.Errorf("state %+v", st.Changes)
	}
	if err := a.Rollback(false); err != nil {
		t.Fatal(err)
	}
	// The second kept entry fails (no such device): the first is undone.
	ps = []*Proof{kept(sysctlEntry("net.core.netdev_max_backlog", 2048), true), kept(cryptEntry("gone", "no_read_workqueue"), true)}
	if err := applyKept(a, ps); err == nil || !strings.Contains(err.Error(), "gone: proven, but applying it failed") {
		t.Fatalf("applyKept with a failing entry: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(proc, "sys/net/core/netdev_max_backlog")); strings.TrimSpace(string(b)) != "1000" || ps[0].Applied {
		t.Errorf("the entry before the failure stayed applied: %s", b)
	}
	if st := a.State(); len(st.Changes) != 0 {
		t.Errorf("state %+v", st.Changes)
	}
}
