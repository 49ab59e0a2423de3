package apply

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testing/hostfstest"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// The state machine runs here against a temporary /proc/sys tree and
// in-memory rings and dm tables, the way the kernel answers (EINVAL above
// the ring maximum); the live appliers are exercised for real by the veth
// lab test (internal/cli/fixcmd) and the VM lab (test/vm TestFixApplyRollback).

type memRings map[string][2]uint32 // ifname -> cur, max

func (m memRings) RX(n string) (uint32, uint32, error) {
	r, ok := m[n]
	if !ok {
		return 0, 0, syscall.ENODEV
	}
	return r[0], r[1], nil
}

func (m memRings) SetRX(n string, v uint32) error {
	r, ok := m[n]
	if !ok {
		return syscall.ENODEV
	}
	if v > r[1] {
		return fmt.Errorf("ETHTOOL_SRINGPARAM %s rx %d: the driver refused it: %w", n, v, syscall.EINVAL)
	}
	m[n] = [2]uint32{v, r[1]}
	return nil
}

type memDM map[string]string

func (m memDM) Params(n string) (string, []byte, error) {
	p, ok := m[n]
	if !ok {
		return "", nil, syscall.ENXIO
	}
	return "crypt", []byte(p), nil
}

func (m memDM) Replace(n string, p []byte) error {
	if _, err := cryptOptions(p); err != nil {
		return syscall.EINVAL
	}
	m[n] = string(p)
	return nil
}

type testHost struct {
	Host
	rings memRings
	dm    memDM
	proc  string
}

func newHost(t *testing.T) testHost {
	t.Helper()
	root := t.TempDir()
	proc := filepath.Join(root, "proc")
	for k, v := range map[string]string{"sys/net/core/netdev_max_backlog": "16", "sys/net/core/netdev_budget": "300", "sys/kernel/random/boot_id": "boot-1"} {
		hostfstest.WriteFile(t, proc, k, v+"\n")
	}
	h := testHost{rings: memRings{"eth0": {512, 4096}, "eth1": {256, 1024}}, dm: memDM{"data": "aes-xts-plain64 " + strings.Repeat("ab", 64) + " 0 259:1 0 1 allow_discards"}, proc: proc}
	h.Host = Host{FS: hostfs.FS{Proc: proc, Sys: filepath.Join(root, "sys"), Root: filepath.Join(root, "root")}, Rings: h.rings, DM: h.dm}
	return h
}

func (h testHost) sysctl(t *testing.T, k string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.proc, "sys", strings.ReplaceAll(k, ".", "/")))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func sysctlStep(k string, v int64) fix.Step {
	return fix.Step{Change: fix.Sysctl{Key: k, To: v}}
}

func ringStep(ifc string, rx uint32) fix.Step {
	return fix.Step{Change: fix.Ring{Interface: ifc, RX: rx}}
}

func cryptStep(name string, add ...string) fix.Step {
	return fix.Step{Change: fix.Crypt{Name: name, Add: add}}
}

func open(t *testing.T, h testHost, state string) *Applier {
	t.Helper()
	a, err := Open(h.Host, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func TestApplyTwiceThenRollback(t *testing.T) {
	h := newHost(t)
	state := filepath.Join(t.TempDir(), "state.json")
	e := fix.Entry{ID: "net.backlog-drops", Subject: "softnet", Steps: []fix.Step{
		sysctlStep("net.core.netdev_max_backlog", 1024), ringStep("eth0", 4096), cryptStep("data", "no_read_workqueue", "no_write_workqueue"),
	}}
	a := open(t, h, state)
	before := time.Now()
	outs, err := a.ApplyEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		if !o.Changed {
			t.Errorf("%s not changed", o.Key)
		}
	}
	// Each change records when it was made (the agent's
	// slowpath_fix_applied); a second run below, which changes nothing,
	// keeps the same state bytes, so the same times.
	for _, c := range a.State().Changes {
		if c.AppliedAt.Before(before) || c.AppliedAt.After(time.Now()) {
			t.Errorf("%s applied at %v, want between %v and now", c.Key, c.AppliedAt, before)
		}
	}
	if v := h.sysctl(t, "net.core.netdev_max_backlog"); v != "1024" {
		t.Errorf("sysctl %s", v)
	}
	if h.rings["eth0"][0] != 4096 {
		t.Errorf("ring %v", h.rings["eth0"])
	}
	wantTable := "aes-xts-plain64 " + strings.Repeat("ab", 64) + " 0 259:1 0 3 allow_discards no_read_workqueue no_write_workqueue"
	if h.dm["data"] != wantTable {
		t.Errorf("table %q, want %q", h.dm["data"], wantTable)
	}
	first, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(first), "abab") {
		t.Fatal("the crypt key reached the state file")
	}
	a.Close()

	// A second run changes nothing: same state bytes, same host.
	a = open(t, h, state)
	outs, err = a.ApplyEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		if o.Changed {
			t.Errorf("second apply changed %s", o.Key)
		}
	}
	if second, _ := os.ReadFile(state); string(second) != string(first) {
		t.Errorf("second apply rewrote the state:\n%s\nwas\n%s", second, first)
	}
	if h.dm["data"] != wantTable {
		t.Errorf("second apply changed the table: %q", h.dm["data"])
	}

	if err := a.Rollback(false); err != nil {
		t.Fatal(err)
	}
	if v := h.sysctl(t, "net.core.netdev_max_backlog"); v != "16" {
		t.Errorf("sysctl after rollback %s", v)
	}
	if h.rings["eth0"][0] != 512 {
		t.Errorf("ring after rollback %v", h.rings["eth0"])
	}
	if h.dm["data"] != "aes-xts-plain64 "+strings.Repeat("ab", 64)+" 0 259:1 0 1 allow_discards" {
		t.Errorf("table after rollback %q", h.dm["data"])
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state left after a full rollback: %v", err)
	}
}

// A step that fails rolls back the steps of the entry before it.
func TestFailureRollsBackEarlierSteps(t *testing.T) {
	h := newHost(t)
	state := filepath.Join(t.TempDir(), "state.json")
	a := open(t, h, state)
	e := fix.Entry{ID: "x", Subject: "y", Steps: []fix.Step{
		sysctlStep("net.core.netdev_budget", 600), ringStep("eth0", 4096), ringStep("eth1", 2048),
	}}
	outs, err := a.ApplyEntry(e)
	if err == nil || !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "step 3") {
		t.Fatalf("want step 3 refused with EINVAL, got %v", err)
	}
	if len(outs) != 2 {
		t.Errorf("outcomes %+v", outs)
	}
	if v := h.sysctl(t, "net.core.netdev_budget"); v != "300" {
		t.Errorf("step 1 not rolled back: %s", v)
	}
	if h.rings["eth0"][0] != 512 || h.rings["eth1"][0] != 256 {
		t.Errorf("rings not restored: %v", h.rings)
	}
	if len(a.State().Changes) != 0 {
		t.Errorf("state keeps %+v", a.State().Changes)
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file left: %v", err)
	}
}

// Rollback leaves a setting someone changed since alone, unless forced.
func TestRollbackRefusesForeignChange(t *testing.T) {
	h := newHost(t)
	state := filepath.Join(t.TempDir(), "state.json")
	a := open(t, h, state)
	if _, err := a.ApplyEntry(fix.Entry{ID: "x", Steps: []fix.Step{sysctlStep("net.core.netdev_max_backlog", 1024)}}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(h.proc, "sys/net/core/netdev_max_backlog")
	if err := os.WriteFile(p, []byte("2048\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.Rollback(false); !errors.Is(err, ErrChangedSince) {
		t.Fatalf("rollback over a foreign change: %v", err)
	}
	if v := h.sysctl(t, "net.core.netdev_max_backlog"); v != "2048" {
		t.Errorf("rollback touched a foreign value: %s", v)
	}
	if err := a.Rollback(true); err != nil {
		t.Fatal(err)
	}
	if v := h.sysctl(t, "net.core.netdev_max_backlog"); v != "16" {
		t.Errorf("forced rollback: %s", v)
	}
}

// Another process holding the lock is refused; a state of an earlier boot
// forgets its runtime changes.
func TestLockAndReboot(t *testing.T) {
	h := newHost(t)
	state := filepath.Join(t.TempDir(), "state.json")
	a := open(t, h, state)
	if _, err := Open(h.Host, state, nil); err == nil {
		t.Fatal("a second applier got the lock")
	}
	if _, err := a.ApplyEntry(fix.Entry{ID: "x", Steps: []fix.Step{sysctlStep("net.core.netdev_max_backlog", 1024)}}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if err := os.WriteFile(filepath.Join(h.proc, "sys/kernel/random/boot_id"), []byte("boot-2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := open(t, h, state)
	if n := len(b.State().Changes); n != 0 {
		t.Errorf("changes of an earlier boot kept: %d", n)
	}
}

func TestPersistAndUnpersist(t *testing.T) {
	h := newHost(t)
	state := filepath.Join(t.TempDir(), "state.json")
	tab := filepath.Join(h.FS.Root, "etc/crypttab")
	if err := os.MkdirAll(filepath.Dir(tab), 0o755); err != nil {
		t.Fatal(err)
	}
	orig := "# comment data\ndata UUID=1234 none luks,discard\nother /dev/sdb /key\n"
	if err := os.WriteFile(tab, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	e := fix.Entry{ID: "x", Files: []fix.File{
		{Kind: "file", Path: "/etc/sysctl.d/60-slowpath-x.conf", Content: "net.core.netdev_max_backlog = 1024\n"},
		{Kind: "crypttab", Path: "/etc/crypttab", Name: "data", Options: []string{"no-read-workqueue", "no-write-workqueue"}},
	}}
	a := open(t, h, state)
	ps, err := a.Persist(e)
	if err != nil || len(ps) != 2 || !ps[0].Changed || !ps[1].Changed {
		t.Fatalf("persist: %+v %v", ps, err)
	}
	got, _ := os.ReadFile(tab)
	want := "# comment data\ndata UUID=1234 none luks,discard,no-read-workqueue,no-write-workqueue\nother /dev/sdb /key\n"
	if d := cmp.Diff(want, string(got)); d != "" {
		t.Errorf("crypttab (-want +got):\n%s", d)
	}
	if ps, _ := a.Persist(e); ps[0].Changed || ps[1].Changed {
		t.Errorf("second persist changed files: %+v", ps)
	}
	if err := a.Rollback(false); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(tab); string(got) != orig {
		t.Errorf("crypttab not restored:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(h.FS.Root, "etc/sysctl.d/60-slowpath-x.conf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("drop-in not removed: %v", err)
	}
}

func TestCrypttabWithOptions(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"data /dev/sda\n", "data /dev/sda none no-read-workqueue\n", true},
		{"data /dev/sda /key plain,no-read-workqueue\n", "data /dev/sda /key plain,no-read-workqueue\n", true},
		{"data\t/dev/sda\tnone\tluks\tx\n", "data /dev/sda none luks,no-read-workqueue x\n", true},
		{"#data /dev/sda\n", "#data /dev/sda\n", false},
		{"other /dev/sda\n", "other /dev/sda\n", false},
	} {
		got, ok := crypttabWithOptions(tt.in, "data", []string{"no-read-workqueue"})
		if got != tt.want || ok != tt.ok {
			t.Errorf("%q: got %q %v, want %q %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestCryptOptions(t *testing.T) {
	for _, tt := range []struct {
		params string
		want   []string
		err    bool
	}{
		{"aes-xts-plain64 KEY 0 8:0 0", nil, false},
		{"aes-xts-plain64 KEY 0 8:0 0 2 same_cpu_crypt sector_size:4096", []string{"same_cpu_crypt", "sector_size:4096"}, false},
		{"aes-xts-plain64 KEY 0 8:0 0 3 same_cpu_crypt", nil, true},
		{"aes-xts-plain64 KEY 0", nil, true},
	} {
		got, err := cryptOptions([]byte(tt.params))
		if (err != nil) != tt.err || !cmp.Equal(got, tt.want) {
			t.Errorf("%q: %v %v", tt.params, got, err)
		}
	}
	out, err := withCryptOptions([]byte("aes-xts-plain64 KEY 0 8:0 0 1 allow_discards"), nil)
	if err != nil || string(out) != "aes-xts-plain64 KEY 0 8:0 0" {
		t.Errorf("withCryptOptions without options: %q %v", out, err)
	}
}

func FuzzCryptOptions(f *testing.F) {
	f.Add("aes-xts-plain64 00ff 0 8:0 0 2 no_read_workqueue no_write_workqueue")
	f.Add("aes-xts-plain64 :32:logon:cryptsetup:x 0 259:1 2048")
	f.Fuzz(func(t *testing.T, params string) {
		opts, err := cryptOptions([]byte(params))
		if err != nil {
			return
		}
		out, err := withCryptOptions([]byte(params), opts)
		if err != nil {
			t.Fatalf("round trip of %q: %v", params, err)
		}
		again, err := cryptOptions(out)
		if err != nil || !cmp.Equal(opts, again) {
			t.Fatalf("%q -> %q: options %v then %v (%v)", params, out, opts, again, err)
		}
	})
}

// walkFiles lists every file and link under dir, so a test can see that
// nothing appeared outside the root.
func walkFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Persist writes only inside --path.rootfs: a path with .., and a path
// whose directory is a symlink out of the root, are refused with the
// path; a symlink that stays inside the root is followed.
func TestPersistStaysInRoot(t *testing.T) {
	outside := t.TempDir()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, root string)
		path  string
		ok    bool
	}{
		{"dotdot", nil, "/etc/udev/rules.d/../../../" + filepath.Base(outside) + "/x.rules", false},
		{"relative", nil, "etc/x.conf", false},
		{"symlink out", func(t *testing.T, root string) {
			if err := os.MkdirAll(filepath.Join(root, "etc/udev"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(root, "etc/udev/rules.d")); err != nil {
				t.Fatal(err)
			}
		}, "/etc/udev/rules.d/60-slowpath-ring-eth0.rules", false},
		{"relative symlink out", func(t *testing.T, root string) {
			if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(filepath.Join(root, "etc"), outside)
			if err := os.Symlink(rel, filepath.Join(root, "etc/sysctl.d")); err != nil {
				t.Fatal(err)
			}
		}, "/etc/sysctl.d/60-slowpath-x.conf", false},
		{"symlink inside", func(t *testing.T, root string) {
			if err := os.MkdirAll(filepath.Join(root, "usr/lib/sysctl.d"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../usr/lib/sysctl.d", filepath.Join(root, "etc/sysctl.d")); err != nil {
				t.Fatal(err)
			}
		}, "/etc/sysctl.d/60-slowpath-x.conf", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t)
			if err := os.MkdirAll(h.FS.Root, 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.setup != nil {
				tc.setup(t, h.FS.Root)
			}
			a := open(t, h, filepath.Join(t.TempDir(), "state.json"))
			_, err := a.Persist(fix.Entry{ID: "x", Files: []fix.File{{Kind: "file", Path: tc.path, Content: "x\n"}}})
			if got := walkFiles(t, outside); len(got) != 0 {
				t.Fatalf("written outside the root: %v", got)
			}
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				if b, err := os.ReadFile(filepath.Join(h.FS.Root, "usr/lib/sysctl.d/60-slowpath-x.conf")); err != nil || string(b) != "x\n" {
					t.Errorf("not written through the inner link: %q %v", b, err)
				}
				return
			}
			if !errors.Is(err, ErrOutsideRoot) || !strings.Contains(err.Error(), filepath.Base(tc.path)) {
				t.Errorf("want ErrOutsideRoot naming the path, got %v", err)
			}
			if len(a.State().Files) != 0 {
				t.Errorf("refused file recorded: %+v", a.State().Files)
			}
		})
	}
}

// Rollback takes its paths from the state file, which is data too: a path
// that leaves the root is refused and the file outside stays.
func TestRollbackStaysInRoot(t *testing.T) {
	h := newHost(t)
	if err := os.MkdirAll(h.FS.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(h.FS.Root, victim)
	state := filepath.Join(t.TempDir(), "state.json")
	st := fmt.Sprintf(`{"boot_id":"boot-1","changes":[],"files":[{"path":"/%s","id":"x","existed":false,"written":"keep\n"}]}`, rel)
	if err := os.WriteFile(state, []byte(st), 0o600); err != nil {
		t.Fatal(err)
	}
	a := open(t, h, state)
	if err := a.Rollback(true); !errors.Is(err, ErrOutsideRoot) {
		t.Errorf("rollback of %s: %v, want ErrOutsideRoot", rel, err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep\n" {
		t.Errorf("file outside the root touched: %q %v", b, err)
	}
}

// A sysctl key from a snapshot names a file under /proc/sys or nothing.
func TestSysctlKeyStaysInProcSys(t *testing.T) {
	h := newHost(t)
	hostfstest.WriteFile(t, h.proc, "etc/victim", "keep\n")
	a := open(t, h, filepath.Join(t.TempDir(), "state.json"))
	for _, k := range []string{"net.core/../../../etc/victim", "net..core", "..etc.victim"} {
		if _, err := a.ApplyEntry(fix.Entry{ID: "x", Steps: []fix.Step{sysctlStep(k, 1)}}); err == nil || !strings.Contains(err.Error(), "sysctl key") {
			t.Errorf("key %q: %v, want a sysctl key error", k, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(h.proc, "etc/victim")); string(b) != "keep\n" {
		t.Errorf("victim changed: %q", b)
	}
}

// Persist keeps the mode of the file it edits (crypttab is often 0600).
func TestPersistKeepsMode(t *testing.T) {
	h := newHost(t)
	tab := filepath.Join(h.FS.Root, "etc/crypttab")
	hostfstest.WriteFile(t, h.FS.Root, "etc/crypttab", "data /dev/sdb none plain\n")
	if err := os.Chmod(tab, 0o600); err != nil {
		t.Fatal(err)
	}
	a := open(t, h, filepath.Join(t.TempDir(), "state.json"))
	if _, err := a.Persist(fix.Entry{ID: "x", Files: []fix.File{{Kind: "crypttab", Path: "/etc/crypttab", Name: "data", Options: []string{"no-read-workqueue"}}}}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(tab); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("crypttab mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
}

// The /proc/sys reader works through os.Root on the real procfs too.
func TestLiveSysctlRead(t *testing.T) {
	const key = "net.core.netdev_max_backlog"
	want, err := os.ReadFile("/proc/sys/net/core/netdev_max_backlog")
	if err != nil {
		testenv.Unavailable(t, "no /proc/sys/net/core/netdev_max_backlog: "+err.Error())
	}
	got, err := sysctlStep(key, 0).Change.Read(Live(hostfs.Default()))
	if err != nil || got != strings.TrimSpace(string(want)) {
		t.Errorf("read %s = %q, %v; /proc says %q", key, got, err, want)
	}
}

// TestStateWithAnUnknownStep: the state keeps each step as fix wrote it;
// one this slowpath cannot read is refused when the state is opened, not
// when --rollback reaches it.
func TestStateWithAnUnknownStep(t *testing.T) {
	h := newHost(t)
	state := filepath.Join(t.TempDir(), "state.json")
	b := `{"boot_id":"","changes":[{"key":"x:y","id":"x","subject":"y","step":{"kind":"nosuchkind"},"previous":"1","applied":"2"}],"files":[]}`
	if err := os.WriteFile(state, []byte(b), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(h.Host, state, nil)
	if err == nil || !strings.Contains(err.Error(), "change x:y: step") || !strings.Contains(err.Error(), "move it away") {
		t.Fatalf("open: %v", err)
	}
}
