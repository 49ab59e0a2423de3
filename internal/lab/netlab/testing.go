package netlab

import (
	"context"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/testenv"
)

// New sets up a lab for a test and closes it in t.Cleanup, which also runs
// when the test fails or panics. It skips t (fails it under
// SLOWPATH_STRICT=1) without root, ip or iperf3.
func New(t testing.TB, opts Options) *Lab {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "ip", "iproute2")
	testenv.RequireTool(t, "iperf3", "iperf3")
	// Another package's lab may hold the host lock for a while.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l, err := Setup(ctx, opts)
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
