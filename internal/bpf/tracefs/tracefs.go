// Package tracefs finds the kernel's tracing filesystem for slowpath's
// tracers, and mounts a private one for them when the host has none.
//
// Tracepoint programs are attached through tracefs: the event ids under
// events/ and, for the capture, the syscall tracepoints' format files. A
// fresh host or a container often has no tracefs mounted although slowpath
// runs as root. Mounting one on the host would change it for everyone and
// leave a mount behind when slowpath is killed, so Do mounts it inside a
// mount namespace of one OS thread of its own: the host never sees the
// mount, and it is gone with that thread, whatever ends slowpath (SIGINT,
// SIGTERM or SIGKILL). What the tracers keep afterwards (program and
// perf-event file descriptors) does not need tracefs.
package tracefs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/bpf/bpfload"
)

// Canonical is where the kernel provides a mount point for tracefs
// (Linux 4.1+, kernel/trace/trace.c tracer_init_tracefs) and where cilium/ebpf
// looks for it when /proc/self/mountinfo lists none.
const Canonical = "/sys/kernel/tracing"

// legacy is tracefs under debugfs (before 4.1, and distributions that
// still mount it there).
const legacy = "/sys/kernel/debug/tracing"

// ErrNotMounted: no tracefs was found and none could be mounted.
var ErrNotMounted = errors.New("tracefs not found at /sys/kernel/tracing or /sys/kernel/debug/tracing: mount it (mount -t tracefs nodev /sys/kernel/tracing)")

// Find returns the tracefs directory: dir when it holds tracefs's events/,
// or, for "", the canonical place and then the debugfs one. It looks from
// the calling thread's mount namespace.
func Find(dir string) (string, error) {
	cands := []string{dir}
	if dir == "" {
		cands = []string{Canonical, legacy}
	}
	for _, d := range cands {
		if fi, err := os.Stat(filepath.Join(d, "events")); err == nil && fi.IsDir() {
			return d, nil
		}
	}
	return "", ErrNotMounted
}

// Do calls fn with the tracefs directory. When dir is "" and the host has no
// tracefs, fn runs on an OS thread of its own that first enters a private
// mount namespace and mounts tracefs at Canonical there; logf (when not
// nil) is told so. That thread ends when fn returns, and the mount with it.
// fn must do everything that reads tracefs itself, on its goroutine: files
// opened and programs attached stay valid after it returns.
//
// Without CAP_SYS_ADMIN (needed for both the namespace and the mount) the
// error wraps ErrNotMounted and names the capability.
func Do(dir string, logf func(string), fn func(dir string) error) error {
	found, err := Find(dir)
	if err == nil {
		return fn(found)
	}
	if dir != "" {
		return fmt.Errorf("%w (looked at %s)", err, dir)
	}
	if !bpfload.HasSysAdmin() {
		return fmt.Errorf("%w; slowpath mounts a private one itself when it has CAP_SYS_ADMIN, which it lacks", ErrNotMounted)
	}
	return onOwnThread(func() error { return private(logf, fn) })
}

// onOwnThread runs fn on a goroutine locked to an OS thread that ends
// with it. It is never the main thread: that thread's namespace is what
// /proc/PID/mountinfo shows, and the runtime never ends it (a goroutine
// exiting locked there wedges it instead), so the mount would outlive fn.
func onOwnThread(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		// Never unlocked on success: the runtime ends a thread whose
		// goroutine exits locked, and the namespace and its mount end with
		// it, instead of the thread going back to run other goroutines.
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// Held while another goroutine runs fn, so that one cannot be
			// scheduled here.
			errc <- onOwnThread(fn)
			runtime.UnlockOSThread()
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// private runs fn in a new mount namespace of this thread with tracefs at
// Canonical.
func private(logf func(string), fn func(string) error) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("%w; a private mount namespace for one failed: %w", ErrNotMounted, err)
	}
	// The namespace starts as a copy whose mounts still share propagation
	// with the host's (systemd makes / shared): without this, the mount
	// below would appear on the host too. Slave, not private: a private
	// copy would keep every filesystem the host unmounts meanwhile alive
	// (and its loop or dm device busy) until this thread ends; a slave
	// still receives the host's unmounts and sends it nothing, as
	// iproute2's `ip netns exec` does (lib/namespace.c).
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("%w; making the private mount namespace a slave failed: %w", ErrNotMounted, err)
	}
	if err := unix.Mount("nodev", Canonical, "tracefs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("%w; mounting a private one at %s failed: %w", ErrNotMounted, Canonical, err)
	}
	if _, err := Find(Canonical); err != nil {
		return fmt.Errorf("private tracefs at %s has no events/: %w", Canonical, err)
	}
	if logf != nil {
		logf("tracefs is not mounted on this host: mounted a private one at " + Canonical + " that only slowpath's loading thread sees; it is gone once the programs are attached")
	}
	return fn(Canonical)
}
