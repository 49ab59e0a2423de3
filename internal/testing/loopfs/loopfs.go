// Package loopfs gives tests throwaway block devices and filesystems: a
// loop device over a file of the test's, ext4 on it, mounted below a shared
// tmpfs. Everything is undone when the test ends, also on failure.
package loopfs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// Image creates a sparse file of size bytes in a new temporary directory
// of t and returns its path, symlinks resolved (the collectors compare it
// with what the kernel reports as the loop device's backing file).
func Image(t testing.TB, size int64) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "disk.img")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, size); err != nil {
		t.Fatal(err)
	}
	return p
}

// Attach binds a loop device to file, with extra losetup flags (such as
// "--direct-io=on"), and returns its path (/dev/loopN). When t ends the
// device is detached and the cleanup waits for it to be gone.
func Attach(t testing.TB, file string, flags ...string) string {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "losetup", "mount")
	args := append([]string{"--find", "--show"}, flags...)
	out, err := exec.Command("losetup", append(args, file)...).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup --find --show %s: %v: %s", file, err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", dev, err, out)
		}
		// LOOP_CLR_FD on a device someone still holds open only sets
		// autoclear (drivers/block/loop.c, loop_clr_fd), so the device goes
		// when its last opener closes it. Mounts live below SharedArena, so
		// nothing should hold it; allow a short grace.
		var out []byte
		retryFor(5*time.Second, func() bool {
			out, _ = exec.Command("losetup", "-j", file).Output()
			return len(out) == 0
		})
		if len(out) != 0 {
			t.Errorf("loop device still bound to %s: %s%s", file, out, holders(dev))
		}
	})
	return dev
}

// Device binds a loop device over a new blank file of size bytes and
// returns its path; it is detached when t ends.
func Device(t testing.TB, size int64, flags ...string) string {
	t.Helper()
	testenv.RequireRoot(t)
	return Attach(t, Image(t, size), flags...)
}

// Ext4 makes ext4 on dev (mkfs.ext4 -q -F, then extra, such as "-E",
// "lazy_itable_init=0"), mounts it in a new directory below a SharedArena
// in dir and returns the mount point; it is unmounted when t ends.
func Ext4(t testing.TB, dev, dir string, extra ...string) string {
	t.Helper()
	testenv.RequireTool(t, "mkfs.ext4", "e2fsprogs")
	args := append(append([]string{"-q", "-F"}, extra...), dev)
	if out, err := exec.Command("mkfs.ext4", args...).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	mnt := filepath.Join(SharedArena(t, dir), "mnt-"+RandomHex(t))
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	Mount(t, dev, mnt)
	return mnt
}

// LoopExt4 is Ext4 on a Device of size bytes, in the directory of its
// image; it returns the mount point and the loop device's name (loopN).
func LoopExt4(t testing.TB, size int64, flags ...string) (mnt, name string) {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "mkfs.ext4", "e2fsprogs")
	img := Image(t, size)
	dev := Attach(t, img, flags...)
	return Ext4(t, dev, filepath.Dir(img)), filepath.Base(dev)
}

// SharedArena mounts a small tmpfs at dir/arena, marks it shared and
// returns its path; the test mounts its filesystems below it. Every test
// package runs at once under `go test ./...`, and `ip netns exec` (netlab,
// net watch) unshares the mount namespace, copying all mounts as slaves of
// this one (iproute2 lib/namespace.c). A copy of a mount below a private
// parent would keep the filesystem, and so the loop device, alive after
// this test unmounts it; below a shared parent the unmount propagates to
// the copies (Documentation/filesystems/sharedsubtree.rst).
func SharedArena(t testing.TB, dir string) string {
	t.Helper()
	arena := filepath.Join(dir, "arena")
	if err := os.Mkdir(arena, 0o755); err != nil {
		t.Fatal(err)
	}
	Mount(t, "-t", "tmpfs", "-o", "size=1m,mode=0755", "slowpath-test", arena)
	if out, err := exec.Command("mount", "--make-shared", arena).CombinedOutput(); err != nil {
		t.Fatalf("mount --make-shared %s: %v: %s", arena, err, out)
	}
	return arena
}

// Mount runs mount(8) with args (the last one is the target) and
// unmounts the target when t ends. The unmount is retried for a moment on
// EBUSY: a collector in another test package may be opening the mount
// point to ask for its fscrypt policy.
func Mount(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
		t.Fatalf("mount %v: %v: %s", args, err, out)
	}
	target := args[len(args)-1]
	t.Cleanup(func() {
		var err error
		retryFor(5*time.Second, func() bool {
			err = unix.Unmount(target, 0)
			return !errors.Is(err, unix.EBUSY)
		})
		if err != nil {
			t.Errorf("umount %s: %v", target, err)
		}
	})
}

// DropCache writes p back and drops its pages from the page cache, so
// the next read of it goes to the device.
func DropCache(t testing.TB, p string) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}

// RandomHex returns 16 random hex digits, for names no other test picks.
func RandomHex(t testing.TB) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// retryFor calls try every 50 ms until it returns true or d has passed.
func retryFor(d time.Duration, try func() bool) {
	for deadline := time.Now().Add(d); !try() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
}

// holders names the processes that keep dev alive, for the error when it
// outlives its test: those with it open, and those whose mount namespace
// still mounts it (a namespace copied while the test's filesystem was
// mounted, as `ip netns exec`, podman or unshare copy them).
func holders(dev string) string {
	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil {
		return ""
	}
	mm := fmt.Sprintf(" %d:%d ", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	pids, _ := filepath.Glob("/proc/[0-9]*")
	var open, mounted []string
	for _, p := range pids {
		comm, _ := os.ReadFile(p + "/comm")
		who := filepath.Base(p) + " (" + strings.TrimSpace(string(comm)) + ")"
		if mi, err := os.ReadFile(p + "/mountinfo"); err == nil && strings.Contains(string(mi), mm) {
			mounted = append(mounted, who)
		}
		fds, _ := filepath.Glob(p + "/fd/*")
		for _, fd := range fds {
			if l, err := os.Readlink(fd); err == nil && l == dev {
				open = append(open, who)
				break
			}
		}
	}
	return fmt.Sprintf("; open in %v; mounted in the namespace of %v", open, mounted)
}
