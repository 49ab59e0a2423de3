package cryptlab

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/slowpath/slowpath/internal/testing/loopfs"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// TestPlanUnmounts: a recorded mount under the lab's directory is
// unmounted when the recorded device is mounted there, only removed as a
// directory when nothing is, and left alone when another device is mounted
// there or the record points outside the lab's directory (a forged or
// stale state file must not unmount /home).
func TestPlanUnmounts(t *testing.T) {
	StateDir = t.TempDir()
	root := filepath.Join(StateDir, "mnt-abc123")
	st := labState{ID: "abc123", Mounts: []mountRecord{
		{Dir: root + "/plain", Dev: "1:0"},
		{Dir: root + "/default", Dev: "253:1"},
		{Dir: root + "/no_workqueue", Dev: "253:2"},
		{Dir: "/home", Dev: "8:1"},
		{Dir: root + "/../../etc", Dev: "8:1"},
	}}
	h := hostView{MountPoints: map[string]string{
		root + "/plain":        "1:0",
		root + "/no_workqueue": "8:3", // someone else's device now
		"/home":                "8:1",
	}}
	acts, skip := planUnmounts(st, h)
	want := []Action{{"dir", root + "/default"}, {"umount", root + "/plain"}}
	if diff := cmp.Diff(want, acts); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	var skipped []string
	for _, s := range skip {
		skipped = append(skipped, s.Record)
	}
	slices.Sort(skipped)
	if want := []string{"/home", root + "/../../etc", root + "/no_workqueue"}; !slices.Equal(skipped, func() []string { slices.Sort(want); return want }()) {
		t.Errorf("skipped %q, want %q", skipped, want)
	}
	// Unreadable mount tables: nothing is acted on.
	if acts, skip := planUnmounts(st, hostView{MountErr: errors.New("mountinfo: permission denied")}); len(acts) != 0 || len(skip) != len(st.Mounts) {
		t.Errorf("without mount tables: %+v, %+v", acts, skip)
	}
	// An id that is not the lab's 6 hex digits (a forged state file whose
	// id climbs out of the state directory) names no directory of a lab.
	forged := labState{ID: "x/../../../../home", Mounts: []mountRecord{{Dir: "/home/alice", Dev: "8:1"}}}
	if acts, _ := planUnmounts(forged, hostView{MountPoints: map[string]string{"/home/alice": "8:1"}}); len(acts) != 0 {
		t.Errorf("forged id: %+v", acts)
	}
	if _, err := readState(writeState(t, forged)); err == nil {
		t.Error("readState took a forged id")
	}
}

func writeState(t *testing.T, st labState) string {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "lab-abc123.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseFilesystem(t *testing.T) {
	if f, err := ParseFilesystem("none"); f != nil || err != nil {
		t.Errorf("none: %v, %v", f, err)
	}
	for _, typ := range Filesystems {
		f, err := ParseFilesystem(typ)
		if err != nil || f.Type != typ {
			t.Fatalf("%s: %v, %v", typ, f, err)
		}
		args := f.Mkfs("/dev/ram0")
		if args[len(args)-1] != "/dev/ram0" || !strings.Contains(f.String(), typ) {
			t.Errorf("%s: mkfs %q, fact %q", typ, args, f)
		}
	}
	if _, err := ParseFilesystem("btrfs"); err == nil || !strings.Contains(err.Error(), "ext4, xfs or none") {
		t.Errorf("btrfs: %v", err)
	}
}

// TestMountOnLoop makes each filesystem on a real loop device through
// Lab.Mount: it is mounted from that device on the side's directory under
// the lab's own, recorded in the state file while mounted; the undo
// unmounts it and removes the directory. A mount left by a lab that died
// (its state file read back) is undone by teardown, and a device that is
// not the lab's is refused before mkfs touches it.
func TestMountOnLoop(t *testing.T) {
	testenv.RequireRoot(t)
	for _, typ := range Filesystems {
		t.Run(typ, func(t *testing.T) {
			f := Filesystem{Type: typ}
			testenv.RequireTool(t, f.Mkfs("")[0], f.Package())
			dev := loopfs.Device(t, max(f.MinBytes(), 64<<20)+16<<20)
			// The lab's directories as on a host: /run/slowpath/cryptlab,
			// made 0700 by the lock (hostlock), below directories anyone
			// can enter (the test's own temporary ones stand for /run).
			tmp := t.TempDir()
			for d := tmp; d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
				if err := os.Chmod(d, 0o711); err != nil {
					t.Fatal(err)
				}
			}
			StateDir = filepath.Join(loopfs.SharedArena(t, tmp), "slowpath", "cryptlab")
			if err := os.MkdirAll(StateDir, 0o700); err != nil {
				t.Fatal(err)
			}
			l := &Lab{ID: map[string]string{"ext4": "e40000", "xfs": "f50000"}[typ], BackingPath: dev, log: t.Logf}
			l.state = labState{PID: os.Getpid(), ID: l.ID}
			if _, err := l.Mount(context.Background(), "/dev/vda", f, "plain"); err == nil || !strings.Contains(err.Error(), "not a device of lab") {
				t.Fatalf("mount on a device the lab did not make: %v", err)
			}
			undo, err := l.Mount(context.Background(), dev, f, "plain")
			if err != nil {
				t.Fatal(err)
			}
			dir := l.MountDir("plain")
			mm, _ := devNumber(dev)
			_, points, err := mountedDevices("/proc")
			if err != nil || points[dir] != mm {
				t.Fatalf("%s mounted from %q (%v), want %s", dir, points[dir], err, mm)
			}
			st, err := readState(statePath(l.ID))
			if err != nil || len(st.Mounts) != 1 || st.Mounts[0].Dir != dir {
				t.Fatalf("state while mounted: %+v, %v", st.Mounts, err)
			}
			if err := os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			checkServerReach(t, dir, l.ID)
			if err := undo(); err != nil {
				t.Fatal(err)
			}
			if _, points, _ := mountedDevices("/proc"); points[dir] != "" {
				t.Fatalf("%s still mounted after the undo", dir)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Fatalf("%s left behind: %v", dir, err)
			}
			// A lab killed while mounted: the next one reads its state.
			if _, err := l.Mount(context.Background(), dev, f, "default"); err != nil {
				t.Fatal(err)
			}
			st, err = readState(statePath(l.ID))
			if err != nil {
				t.Fatal(err)
			}
			if skipped, err := teardown(st, "/sys", "/proc", t.Logf); err != nil || len(skipped) != 0 {
				t.Fatalf("teardown: left %+v, %v", skipped, err)
			}
			if _, points, _ := mountedDevices("/proc"); points[l.MountDir("default")] != "" {
				t.Fatal("teardown left the dead lab's mount")
			}
			if _, err := os.Stat(filepath.Join(StateDir, "mnt-"+l.ID)); !os.IsNotExist(err) {
				t.Fatalf("the lab's mount directory left behind: %v", err)
			}
			if typ == "xfs" {
				// mkfs.xfs refuses a device below its minimum: no
				// directory, no record is left.
				small := loopfs.Device(t, 16<<20)
				l.BackingPath = small
				if _, err := l.Mount(context.Background(), small, f, "small"); err == nil || !strings.Contains(err.Error(), "mkfs.xfs") {
					t.Fatalf("xfs on 16 MiB: %v", err)
				}
				recorded := slices.ContainsFunc(l.state.Mounts, func(m mountRecord) bool { return m.Dir == l.MountDir("small") })
				if _, err := os.Stat(l.MountDir("small")); !os.IsNotExist(err) || recorded {
					t.Fatalf("a failed mkfs left %s (%v) or records %+v", l.MountDir("small"), err, l.state.Mounts)
				}
			}
		})
	}
}

// checkServerReach: a database server's user (nobody here, as mysql or
// postgres in a run) can enter the lab's directories down to a mount and
// write in a directory of its own there, as a database profile's server
// does in its data directory; it cannot list the lab's directories, and
// the state file stays unreadable. It fails without stopping the test,
// so the mount is still undone.
func checkServerReach(t *testing.T, mount, id string) {
	t.Helper()
	setpriv := testenv.RequireTool(t, "setpriv", "util-linux")
	asNobody := func(args ...string) ([]byte, error) {
		return exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups"}, args...)...).CombinedOutput()
	}
	own := filepath.Join(mount, "server")
	defer os.RemoveAll(own)
	if err := errors.Join(os.Mkdir(own, 0o700), os.Chown(own, 65534, 65534)); err != nil {
		t.Error(err)
		return
	}
	if out, err := asNobody("touch", filepath.Join(own, "ibdata1")); err != nil {
		t.Errorf("the server's user cannot write below the lab's mount %s: %v: %s", mount, err, out)
	}
	for _, d := range []string{filepath.Dir(StateDir), StateDir, filepath.Dir(mount)} {
		st, err := os.Stat(d)
		if err != nil {
			t.Error(err)
			continue
		}
		if got := st.Mode().Perm(); got != 0o711 {
			t.Errorf("%s: mode %o, want 711 (enter, not list)", d, got)
		}
		if out, err := asNobody("ls", d); err == nil {
			t.Errorf("the server's user lists %s:\n%s", d, out)
		}
	}
	if out, err := asNobody("cat", statePath(id)); err == nil {
		t.Errorf("the server's user reads the state file: %s", out)
	}
}
