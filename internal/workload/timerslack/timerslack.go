// Package timerslack gives a goroutine an OS thread whose sleeps end on
// time (Lock), and the clock and the sleep to use on it (Now,
// SleepUntil): the replayer's threads and lab crypt's neighbour measure how late
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

// Now is CLOCK_MONOTONIC in ns, the clock SleepUntil sleeps on.
func Now() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// SleepUntil sleeps the calling OS thread until the monotonic time at
// (ns): clock_nanosleep with TIMER_ABSTIME, an hrtimer ended within the
// thread's timer slack (Go's timers wake at a millisecond's resolution at
// best), resumed after a signal.
func SleepUntil(at int64) {
	ts := unix.NsecToTimespec(at)
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil) == unix.EINTR {
	}
}
