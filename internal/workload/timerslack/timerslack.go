// Package timerslack gives a goroutine an OS thread whose sleeps end on
// time: the replayer's threads and lab crypt's neighbour measure how late
// they wake, and the default 50 µs timer slack would be lateness of their
// own (Documentation/timers/timers-howto.rst; prctl PR_SET_TIMERSLACK).
package timerslack

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// Lock locks the calling goroutine to its OS thread and sets the thread's
// timer slack to 1 ns. The returned function restores the slack and
// unlocks the thread (which then goes back to the runtime); call it on the
// same goroutine.
func Lock() (restore func()) {
	runtime.LockOSThread()
	old, _ := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	return func() {
		if old > 0 {
			_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(old), 0, 0, 0)
		}
		runtime.UnlockOSThread()
	}
}
