package netlab

import (
	"context"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// New sets up a lab for a test and closes it in t.Cleanup, which also runs
// when the test fails or panics. It skips t (fails it under
// SLOWPATH_STRICT=1) without root, ip or iperf3. It waits for another
// package's lab to finish, up to 10 minutes or the test deadline.
func New(t testing.TB, opts Options) *Lab {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "ip", "iproute2")
	testenv.RequireTool(t, "iperf3", "iperf3")
	deadline := time.Now().Add(10 * time.Minute)
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if td, ok := d.Deadline(); ok && td.Add(-30*time.Second).Before(deadline) {
			deadline = td.Add(-30 * time.Second)
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	slow := time.AfterFunc(2*time.Second, func() {
		t.Logf("netlab: waiting for another lab on this host to close (lock %s/lock)", stateDir)
	})
	l, err := Setup(ctx, opts)
	slow.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("netlab close: %v", err)
		}
	})
	return l
}
