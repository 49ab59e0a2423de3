package apply

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/model/netmodel"
)

// The transaction runs against the in-memory host of apply_test.go; each
// observation is scripted: the softnet drops counted over a 10 s window
// and the findings of the collection.

const backlogKey = "net.core.netdev_max_backlog"

func backlogEntry() fix.Entry {
	return fix.Entry{ID: "net.backlog-drops", Subject: "softnet", Steps: []fix.Step{sysctlStep(backlogKey, 1024)}}
}

func cryptEntry() fix.Entry {
	return fix.Entry{ID: "dmcrypt.workqueue", Subject: "data", Steps: []fix.Step{cryptStep("data", "no_read_workqueue")}}
}

// drops is a network model with n softnet drops over a 10 s window.
func drops(n uint64) *netmodel.Model {
	return &netmodel.Model{IntervalSeconds: 10, Counters: []netmodel.Counter{
		{Layer: netmodel.LayerBacklog, Counter: "softnet_dropped", Subject: "cpu0", Total: n, Delta: &n}}}
}

// script returns observations in order, after calling each one's hook
// (which may cancel or signal), and counts the calls.
type script struct {
	obs   []Observation
	hooks []func(context.Context)
	calls int
}

func (s *script) observe(ctx context.Context) (Observation, error) {
	i := s.calls
	s.calls++
	if i < len(s.hooks) && s.hooks[i] != nil {
		s.hooks[i](ctx)
	}
	if i >= len(s.obs) {
		return Observation{}, errors.New("observed more often than scripted")
	}
	return s.obs[i], nil
}

// transact runs ApplyAndVerify on plan and returns its result, error and
// log lines.
func transact(t *testing.T, ctx context.Context, h testHost, s *script, entries ...fix.Entry) (Result, []string, error) {
	t.Helper()
	a := open(t, h, filepath.Join(t.TempDir(), "state.json"))
	var log []string
	r, err := a.ApplyAndVerify(ctx, &fix.Plan{Entries: entries}, Verification{
		Watch: 10 * time.Second, Observe: s.observe,
		Event: func(e Event) { log = append(log, e.String()) },
	})
	if got := len(a.State().Changes); err != nil && got != 0 {
		t.Errorf("failed with %d change(s) still recorded: %+v", got, a.State().Changes)
	}
	return r, log, err
}

func TestApplyAndVerifyKeepsVerified(t *testing.T) {
	h := newHost(t)
	s := &script{obs: []Observation{{Network: drops(5000)}, {Network: drops(10)}}}
	r, log, err := transact(t, context.Background(), h, s, backlogEntry(),
		fix.Entry{ID: "net.ring-undersized", Subject: "eth9", NotApplicable: "the driver reports no ring maximum"})
	if err != nil {
		t.Fatal(err)
	}
	if r.RolledBack || len(r.Kept) != 1 || r.Kept[0].ID != "net.backlog-drops" {
		t.Errorf("result %+v, want the backlog entry kept", r)
	}
	if got := h.sysctl(t, backlogKey); got != "1024" {
		t.Errorf("%s = %s, want 1024 (verified, kept)", backlogKey, got)
	}
	want := []string{
		"sampling the counters for 10s before the change",
		"net.ring-undersized on eth9: not applicable here: the driver reports no ring maximum",
		"verifying: collecting again, counters watched for 10s",
		"net.backlog-drops: softnet_dropped cpu0: 500.0/s over 10.0 s before, 1.0/s over 10.0 s after (noise margin ±21.2/s)",
		"net.backlog-drops on softnet: verified",
	}
	if d := cmp.Diff(want, log); d != "" {
		t.Errorf("log (-want +got):\n%s", d)
	}
}

func TestApplyAndVerifyRollsBackFailure(t *testing.T) {
	for name, after := range map[string]Observation{
		"finding remains": {Network: drops(10), Findings: []check.Finding{{ID: "net.backlog-drops", Subject: "softnet", Status: check.Fail, Summary: "backlog drops"}}},
		"counters rose":   {Network: drops(9000)},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHost(t)
			s := &script{obs: []Observation{{Network: drops(5000)}, after}}
			r, log, err := transact(t, context.Background(), h, s, backlogEntry())
			if err != nil {
				t.Fatal(err)
			}
			if !r.RolledBack || len(r.Kept) != 0 {
				t.Errorf("result %+v, want rolled back, nothing kept", r)
			}
			if got := h.sysctl(t, backlogKey); got != "16" {
				t.Errorf("%s = %s, want 16 restored", backlogKey, got)
			}
			if last := log[len(log)-1]; !strings.HasPrefix(last, "net.backlog-drops on softnet: rolling back, ") {
				t.Errorf("last line %q, want the rollback", last)
			}
		})
	}
}

// A change no counter measures is kept unproven, with the hint to measure
// it, and observed once: no entry has counters to sample before.
func TestApplyAndVerifyKeepsUnproven(t *testing.T) {
	h := newHost(t)
	s := &script{obs: []Observation{{}}}
	r, log, err := transact(t, context.Background(), h, s, cryptEntry())
	if err != nil {
		t.Fatal(err)
	}
	if r.RolledBack || len(r.Kept) != 1 || s.calls != 1 {
		t.Errorf("result %+v after %d observation(s), want the entry kept after 1", r, s.calls)
	}
	if !strings.Contains(h.dm["data"], "no_read_workqueue") {
		t.Errorf("table %q, want no_read_workqueue kept", h.dm["data"])
	}
	want := []string{
		"verifying: collecting again, counters watched for 10s",
		"dmcrypt.workqueue on data: applied, not proven: no counter measures this change; " + fix.ProveHint,
		"applied, not proven (kept; slowpath fix --rollback undoes them): dmcrypt.workqueue on data",
		"storage changes: " + fix.ProveHint,
	}
	if d := cmp.Diff(want, log); d != "" {
		t.Errorf("log (-want +got):\n%s", d)
	}
}

func TestApplyAndVerifyNothingChanged(t *testing.T) {
	h := newHost(t)
	e := backlogEntry()
	e.Steps = []fix.Step{sysctlStep(backlogKey, 16)}
	s := &script{obs: []Observation{{Network: drops(5000)}}}
	r, log, err := transact(t, context.Background(), h, s, e)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kept) != 1 || s.calls != 1 {
		t.Errorf("result %+v after %d observation(s), want the entry kept, no verification", r, s.calls)
	}
	if last := log[len(log)-1]; last != "nothing changed: every setting already has the planned value" {
		t.Errorf("last line %q", last)
	}
}

// A step that fails rolls back the entries applied before it.
func TestApplyAndVerifyFailedStepRollsBackEarlier(t *testing.T) {
	h := newHost(t)
	bad := fix.Entry{ID: "net.ring-undersized", Subject: "eth1", Steps: []fix.Step{ringStep("eth1", 8192)}}
	s := &script{obs: []Observation{{Network: drops(5000)}}}
	_, log, err := transact(t, context.Background(), h, s, backlogEntry(), bad)
	if !errors.Is(err, syscall.EINVAL) || !strings.HasPrefix(err.Error(), "net.ring-undersized on eth1: ") {
		t.Fatalf("err = %v, want the ring's EINVAL", err)
	}
	if got := h.sysctl(t, backlogKey); got != "16" {
		t.Errorf("%s = %s, want 16 restored", backlogKey, got)
	}
	if last := log[len(log)-1]; last != "rolled back the earlier entries: sysctl:"+backlogKey {
		t.Errorf("last line %q", last)
	}
}

// Interrupted during a window, the transaction leaves the host as it was:
// before the change nothing is changed, after it the changes are rolled
// back. SIGINT cancels ctx as fix's command makes it (clienv.Interruptible,
// which this package below cli cannot import: signal.NotifyContext here).
func TestApplyAndVerifyInterrupted(t *testing.T) {
	sigint := func(context.Context) {
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
			t.Error(err)
		}
	}
	for _, tc := range []struct {
		name   string
		window int // 0 before the change, 1 after
		signal bool
		want   string
	}{
		{"cancel before", 0, false, "interrupted before any change: nothing changed"},
		{"cancel after", 1, false, "interrupted before verification: rolled back sysctl:" + backlogKey},
		{"SIGINT before", 0, true, "interrupted before any change: nothing changed"},
		{"SIGINT after", 1, true, "interrupted before verification: rolled back sysctl:" + backlogKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			hook := func(context.Context) { cancel() }
			if tc.signal {
				hook = sigint
			}
			s := &script{obs: []Observation{{Network: drops(5000)}, {Network: drops(10)}}, hooks: make([]func(context.Context), 2)}
			s.hooks[tc.window] = func(ctx context.Context) {
				hook(ctx)
				<-ctx.Done() // the signal arrives asynchronously
			}
			_, _, err := transact(t, ctx, h, s, backlogEntry())
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if got := h.sysctl(t, backlogKey); got != "16" {
				t.Errorf("%s = %s, want 16 as found", backlogKey, got)
			}
		})
	}
}
