package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/model/netmodel"
)

// Observation is the live host collected and analyzed over one watch
// window: what fix.Verify judges an entry by.
type Observation struct {
	Findings []check.Finding
	Network  *netmodel.Model
}

// Verification is how ApplyAndVerify observes the host and reports.
type Verification struct {
	// Watch is the length of each window, for the log lines; Observe
	// samples over it.
	Watch time.Duration
	// Observe collects and analyzes the live host over one window. The
	// transaction calls it once before the change (only when an entry has
	// counters to watch) and once after it.
	Observe func(context.Context) (Observation, error)
	// Event, when set, is called with each line of the transaction's log.
	Event func(Event)
}

// Result is what ApplyAndVerify leaves applied.
type Result struct {
	// Kept are the entries that hold: verified or applied, not proven.
	Kept []fix.Entry
	// RolledBack is true when an entry was rolled back after verification.
	RolledBack bool
}

// ApplyAndVerify is `fix --apply`: it observes the watched counters of the
// plan's network entries over a window, applies the entries in order (a
// failing step rolls back every change of this run), then observes again
// over an equal window and judges each entry (fix.Verify): rolled back
// when its finding remains or its counters rose beyond the noise margin,
// verified only when its counters fell beyond it, otherwise kept as
// "applied, not proven".
//
// A ctx cancelled during a window leaves the changes unverified: before
// the change nothing is changed, after it every change of this run is
// rolled back rather than left behind. The caller cancels it on an
// interrupt (Ctrl-C) or SIGTERM: fix's command runs the transaction under
// clienv.Interruptible.
func (a *Applier) ApplyAndVerify(ctx context.Context, plan *fix.Plan, v Verification) (Result, error) {
	if v.Event == nil {
		v.Event = func(Event) {}
	}
	var before *netmodel.Model
	if slices.ContainsFunc(plan.Entries, func(e fix.Entry) bool { return len(e.Steps) > 0 && fix.Watched(e) }) {
		// The window before the change, as long as the one after it: a
		// rate over 1 s against one over 10 s mixes noise of two sizes.
		v.Event(Event{Kind: EventSampling, Watch: v.Watch})
		o, err := v.Observe(ctx)
		if ctx.Err() != nil {
			return Result{}, errors.New("interrupted before any change: nothing changed")
		}
		if err != nil {
			return Result{}, err
		}
		before = o.Network
	}
	applied, changed, err := a.applyAll(plan.Entries, v.Event)
	if err != nil {
		return Result{}, err
	}
	if len(changed) == 0 {
		v.Event(Event{Kind: EventNothingChanged})
		return Result{Kept: applied}, nil
	}
	v.Event(Event{Kind: EventVerifying, Watch: v.Watch})
	after, err := v.Observe(ctx)
	if ctx.Err() != nil {
		slices.Reverse(changed)
		if err := a.Undo(changed, false); err != nil {
			return Result{}, fmt.Errorf("interrupted before verification; rolling back failed: %w (run slowpath fix --rollback)", err)
		}
		return Result{}, fmt.Errorf("interrupted before verification: rolled back %s", strings.Join(changed, ", "))
	}
	if err != nil {
		return Result{}, err
	}
	return a.judge(applied, before, after, v.Event)
}

// applyAll applies the entries with steps in order and returns them with
// the keys this run changed. When one fails, ApplyEntry has undone its
// earlier steps and applyAll undoes the entries before it, last first.
func (a *Applier) applyAll(entries []fix.Entry, event func(Event)) ([]fix.Entry, []string, error) {
	var applied []fix.Entry
	var changed []string
	for _, e := range entries {
		if len(e.Steps) == 0 {
			if e.NotApplicable != "" {
				event(Event{Kind: EventNotApplicable, ID: e.ID, Subject: e.Subject, Why: e.NotApplicable})
			}
			continue
		}
		outs, err := a.ApplyEntry(e)
		if err != nil {
			slices.Reverse(changed)
			if uerr := a.Undo(changed, false); uerr != nil {
				return nil, nil, fmt.Errorf("%s on %s: %w; rolling back earlier entries failed: %w", e.ID, e.Subject, err, uerr)
			}
			if len(changed) > 0 {
				event(Event{Kind: EventRolledBackEarlier, Keys: changed})
			}
			return nil, nil, fmt.Errorf("%s on %s: %w", e.ID, e.Subject, err)
		}
		for _, out := range outs {
			if out.Changed {
				changed = append(changed, out.Key)
			}
		}
		applied = append(applied, e)
	}
	return applied, changed, nil
}

// judge verifies each applied entry against the observation after the
// change and rolls back those that fail.
func (a *Applier) judge(applied []fix.Entry, before *netmodel.Model, after Observation, event func(Event)) (Result, error) {
	var r Result
	var unproven []string
	storage := false
	for _, e := range applied {
		v := fix.Verify(e, before, after.Findings, after.Network)
		if v.Counters != "" {
			event(Event{Kind: EventCounters, ID: e.ID, Subject: e.Subject, Why: v.Counters})
		}
		switch v.Status {
		case fix.Verified:
			event(Event{Kind: EventVerified, ID: e.ID, Subject: e.Subject})
			r.Kept = append(r.Kept, e)
			continue
		case fix.NotProven:
			event(Event{Kind: EventNotProven, ID: e.ID, Subject: e.Subject, Why: v.Why})
			unproven = append(unproven, e.ID+" on "+e.Subject)
			storage = storage || !fix.Watched(e)
			r.Kept = append(r.Kept, e)
			continue
		}
		event(Event{Kind: EventRollingBack, ID: e.ID, Subject: e.Subject, Why: v.Why})
		if err := a.UndoEntry(e.ID, e.Subject); err != nil {
			return Result{RolledBack: true}, fmt.Errorf("roll back %s: %w", e.ID, err)
		}
		r.RolledBack = true
	}
	if len(unproven) > 0 {
		event(Event{Kind: EventUnproven, Keys: unproven})
		if storage {
			event(Event{Kind: EventStorageHint})
		}
	}
	return r, nil
}
