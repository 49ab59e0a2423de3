package cryptlab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Filesystem is what the lab makes on every side when the profile runs on
// files: the same mkfs options on the plain device and on each mapping,
// made anew before every run (the sides share the backing's sectors, and
// a fresh filesystem per run leaves no run's files or ageing to the next),
// mounted on a directory of the lab's own and unmounted after the run,
// which also drops the filesystem's page cache.
type Filesystem struct {
	Type string // "ext4" or "xfs"
}

// Filesystems are the types --fs takes besides "none".
var Filesystems = []string{"ext4", "xfs"}

// ParseFilesystem reads --fs: nil for "none".
func ParseFilesystem(s string) (*Filesystem, error) {
	if s == "none" {
		return nil, nil
	}
	if !slices.Contains(Filesystems, s) {
		return nil, fmt.Errorf("--fs %q: use %s or none", s, strings.Join(Filesystems, ", "))
	}
	return &Filesystem{Type: s}, nil
}

// Mkfs is the command that makes the filesystem on dev. Discard is off (a
// ramdisk or a mapping gains nothing from it and it takes time); ext4's
// inode tables and journal are written at once, so no ext4lazyinit thread
// writes in the background of a run.
func (f Filesystem) Mkfs(dev string) []string {
	switch f.Type {
	case "xfs":
		return []string{"mkfs.xfs", "-f", "-q", "-K", dev}
	default:
		return []string{"mke2fs", "-t", "ext4", "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0,nodiscard", dev}
	}
}

// Package is the Debian package of the filesystem's mkfs.
func (f Filesystem) Package() string {
	if f.Type == "xfs" {
		return "xfsprogs"
	}
	return "e2fsprogs"
}

// CheckTools says what to install when this host has no mkfs for f:
// before the lab creates anything.
func (f Filesystem) CheckTools() error {
	if _, err := exec.LookPath(f.Mkfs("")[0]); err != nil {
		return fmt.Errorf("--fs %s: %s not found (apt-get install %s)", f.Type, f.Mkfs("")[0], f.Package())
	}
	return nil
}

// MinBytes is the smallest device mkfs makes the filesystem on: xfsprogs
// refuses below 300 MB since 5.19 (Debian 12 ships 6.1); ext4 has no
// practical floor here.
func (f Filesystem) MinBytes() int64 {
	if f.Type == "xfs" {
		return 300 << 20
	}
	return 0
}

// MountOptions are the options it is mounted with: the kernel's defaults.
func (f Filesystem) MountOptions() string { return "defaults (rw,relatime)" }

// String is the setup fact: the type, the mkfs command and the mount
// options.
func (f Filesystem) String() string {
	return fmt.Sprintf("%s: %s, mounted with %s, made anew before every run", f.Type, strings.Join(f.Mkfs("DEVICE"), " "), f.MountOptions())
}

// mountRecord is a mount the lab made, recorded before the mount.
type mountRecord struct {
	Dir string `json:"dir"`
	Dev string `json:"dev"` // major:minor of the device mounted
}

// MountDir is the directory a side's filesystem is mounted on.
func (l *Lab) MountDir(side string) string { return filepath.Join(mountRoot(l.ID), side) }

// Mount makes f on dev, which must be the lab's backing device or one of
// its mappings, mounts it on MountDir(side) and returns the undo: unmount
// and remove the directory. The mount is in the state file from before it
// is made until it is undone, so a lab killed meanwhile is unmounted by
// the next one.
func (l *Lab) Mount(ctx context.Context, dev string, f Filesystem, side string) (undo func() error, err error) {
	if !l.owns(dev) {
		return nil, fmt.Errorf("refusing to make a filesystem on %s: not a device of lab %s", dev, l.ID)
	}
	if side == "" || side != filepath.Base(side) || side == "." || side == ".." {
		return nil, fmt.Errorf("side %q: not one directory name", side)
	}
	mm, err := devNumber(dev)
	if err != nil {
		return nil, err
	}
	// Recorded before the directory exists: a lab killed during mkfs
	// leaves a record whose directory the next one removes.
	dir := l.MountDir(side)
	l.state.Mounts = append(l.state.Mounts, mountRecord{Dir: dir, Dev: mm})
	failed := func(err error) (func() error, error) {
		l.forgetMount(dir)
		os.Remove(dir)
		return nil, errors.Join(err, l.state.save())
	}
	if err := l.state.save(); err != nil {
		return failed(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return failed(err)
	}
	for _, d := range []string{filepath.Dir(StateDir), StateDir, mountRoot(l.ID)} {
		if err := allowEnter(d); err != nil {
			return failed(err)
		}
	}
	args := f.Mkfs(dev)
	if out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput(); err != nil {
		return failed(fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out))))
	}
	if err := unix.Mount(dev, dir, f.Type, 0, ""); err != nil {
		return failed(fmt.Errorf("mount %s (%s) on %s: %w", dev, f.Type, dir, err))
	}
	return func() error {
		if err := unmount(dir); err != nil {
			return err
		}
		l.forgetMount(dir)
		return l.state.save()
	}, nil
}

// allowEnter adds the search bits (enter, not list: 0700 becomes 0711)
// to dir when it is a directory of this user: a database profile's server
// runs as its engine's user (mysql, postgres), which must enter every
// directory above the run's. That is the lab's state directory, its
// parent (/run/slowpath, made 0700 by whichever of slowpath's labs ran
// first) and the lab's mount root; the state files in them stay 0600.
// A directory of another user is left alone: the server's own check
// names it.
func allowEnter(dir string) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("lab directory: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o011 == 0o011 {
		return nil
	}
	if err := unix.Chmod(dir, st.Mode&0o7777|0o011); err != nil {
		return fmt.Errorf("lab directory %s: %w", dir, err)
	}
	return nil
}

func (l *Lab) forgetMount(dir string) {
	l.state.Mounts = slices.DeleteFunc(l.state.Mounts, func(m mountRecord) bool { return m.Dir == dir })
}

// owns says whether dev is the backing device or one of the lab's
// mappings.
func (l *Lab) owns(dev string) bool {
	if dev == l.BackingPath || dev == l.PlainPath {
		return true
	}
	return slices.ContainsFunc(l.Mappings, func(m Mapping) bool { return m.Path != "" && m.Path == dev })
}

// unmount unmounts dir, retrying while a workload that ended with the run
// still holds it, then removes the directory.
func unmount(dir string) error {
	err := retryWhile(func() error {
		if err := unix.Unmount(dir, 0); !errors.Is(err, unix.EINVAL) {
			return err
		}
		return nil // EINVAL: not a mount point (any more)
	}, func(err error) bool { return errors.Is(err, unix.EBUSY) })
	if err != nil {
		return fmt.Errorf("unmount %s: %w", dir, err)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
