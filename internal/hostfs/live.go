package hostfs

import (
	"errors"
	"fmt"
	"os"
)

// Live-only sources answer for the kernel slowpath runs on, whatever the
// roots say: ethtool ioctls and rtnetlink (this network namespace), the
// device-mapper and fscrypt ioctls and stat(2) of loop backing files (this
// kernel's devices and mounts, found by path under Root but answered by
// the running kernel), and cloud instance metadata (this VM). Collected
// for a foreign tree (a saved /sys, a chroot), they would mix this host's
// facts into another host's snapshot, so they run only when the roots are
// this host's: FS.Live. Everything else is read as files under the roots.

// LiveSources is the --live-sources mode. It implements pflag.Value.
type LiveSources string

const (
	// LiveAuto uses live sources only when the roots are this process's
	// own /proc, /sys and / (the same files, not just the same names).
	LiveAuto LiveSources = "auto"
	// LiveOn uses them whatever the roots: the user says the tree is this
	// host's (a DaemonSet mounting the host's /proc and /sys elsewhere,
	// with the host's network namespace).
	LiveOn LiveSources = "on"
	// LiveOff never uses them.
	LiveOff LiveSources = "off"
)

// String returns the mode; the zero value is auto.
func (m *LiveSources) String() string {
	if m == nil || *m == "" {
		return string(LiveAuto)
	}
	return string(*m)
}

// Set parses a flag value.
func (m *LiveSources) Set(v string) error {
	switch LiveSources(v) {
	case LiveAuto, LiveOn, LiveOff:
		*m = LiveSources(v)
		return nil
	}
	return fmt.Errorf("unknown --live-sources %q: use auto, on or off", v)
}

// Type names the value in usage text.
func (m *LiveSources) Type() string { return "auto|on|off" }

// FlagUsage is the help text of --live-sources, shared by every command
// that takes it.
const FlagUsage = "use the sources this host's kernel answers whatever the roots (ethtool, netlink, DM and fscrypt ioctls, instance metadata): auto (only when --path.* are this host's /proc, /sys and /), on (the tree is this host's, e.g. a DaemonSet with the host's /proc, /sys and network), off (none of them)"

// ErrNotLive marks a live-only source that was not used because the roots
// are not this host's. Classify calls it KindSkipped.
var ErrNotLive = errors.New("live-only source not used")

// WithLiveSources returns f with Live decided by mode, and the reason
// recorded for every live-only source skipped.
func (f FS) WithLiveSources(mode LiveSources) FS {
	switch mode {
	case LiveOn:
		f.Live, f.notLive = true, ""
	case LiveOff:
		f.Live, f.notLive = false, "--live-sources off"
	default:
		why := f.foreignRoot()
		f.Live, f.notLive = why == "", why
	}
	return f
}

// NotLive is the error recorded for a live-only source that f does not
// allow; nil when f is live.
func (f FS) NotLive() error {
	if f.Live {
		return nil
	}
	why := f.notLive
	if why == "" {
		why = "the roots are a fixture tree"
	}
	return fmt.Errorf("%w: it would answer for this host, not for the tree read (%s); pass --live-sources on if the tree is this host's", ErrNotLive, why)
}

// OwnProc reports whether the proc root is this process's own /proc (as a
// file, like foreignRoot), where "self" means the namespaces slowpath runs in.
func (f FS) OwnProc() bool {
	got, err := os.Stat(f.Proc)
	if err != nil {
		return false
	}
	want, err := os.Stat(Default().Proc)
	return err == nil && os.SameFile(got, want)
}

// foreignRoot says which root is not this host's, "" when all three are.
// Roots are compared as files (device and inode after resolving symlinks),
// so /proc/ or a symlink to /sys is still live, and a directory named
// like them elsewhere is not.
func (f FS) foreignRoot() string {
	live := Default()
	for _, r := range []struct{ flag, got, want string }{
		{"--path.procfs", f.Proc, live.Proc},
		{"--path.sysfs", f.Sys, live.Sys},
		{"--path.rootfs", f.Root, live.Root},
	} {
		got, err := os.Stat(r.got)
		if err != nil {
			return fmt.Sprintf("%s %s: %v", r.flag, r.got, err)
		}
		want, err := os.Stat(r.want)
		if err != nil || !os.SameFile(got, want) {
			return fmt.Sprintf("%s %s is not this host's %s", r.flag, r.got, r.want)
		}
	}
	return ""
}
