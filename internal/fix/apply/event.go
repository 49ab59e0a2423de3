package apply

import (
	"fmt"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/fix"
)

// EventKind says what an Event of ApplyAndVerify reports.
type EventKind int

const (
	// EventSampling: the window before the change starts (Watch).
	EventSampling EventKind = iota
	// EventNotApplicable: an entry without steps is skipped (Why).
	EventNotApplicable
	// EventRolledBackEarlier: an entry failed and the entries applied
	// before it were rolled back (Keys).
	EventRolledBackEarlier
	// EventNothingChanged: every setting already had its planned value.
	EventNothingChanged
	// EventVerifying: the window after the change starts (Watch).
	EventVerifying
	// EventCounters: an entry's watched rates and margin (Why).
	EventCounters
	// EventVerified: an entry's counters fell beyond the noise margin.
	EventVerified
	// EventNotProven: an entry is kept unproven (Why).
	EventNotProven
	// EventRollingBack: an entry failed verification (Why).
	EventRollingBack
	// EventUnproven: the entries kept unproven (Keys, "ID on SUBJECT").
	EventUnproven
	// EventStorageHint: a kept unproven entry has no counters: how to
	// measure it instead.
	EventStorageHint
)

// Event is one line of ApplyAndVerify's log.
type Event struct {
	Kind        EventKind
	ID, Subject string // the entry, for the per-entry kinds
	Why         string
	Keys        []string
	Watch       time.Duration
}

// String is the line as `slowpath fix --apply` prints it.
func (e Event) String() string {
	switch e.Kind {
	case EventSampling:
		return fmt.Sprintf("sampling the counters for %s before the change", e.Watch)
	case EventNotApplicable:
		return fmt.Sprintf("%s on %s: not applicable here: %s", e.ID, e.Subject, e.Why)
	case EventRolledBackEarlier:
		return "rolled back the earlier entries: " + strings.Join(e.Keys, ", ")
	case EventNothingChanged:
		return "nothing changed: every setting already has the planned value"
	case EventVerifying:
		return fmt.Sprintf("verifying: collecting again, counters watched for %s", e.Watch)
	case EventCounters:
		return fmt.Sprintf("%s: %s", e.ID, e.Why)
	case EventVerified:
		return fmt.Sprintf("%s on %s: verified", e.ID, e.Subject)
	case EventNotProven:
		return fmt.Sprintf("%s on %s: applied, not proven: %s", e.ID, e.Subject, e.Why)
	case EventRollingBack:
		return fmt.Sprintf("%s on %s: rolling back, %s", e.ID, e.Subject, e.Why)
	case EventUnproven:
		return "applied, not proven (kept; slowpath fix --rollback undoes them): " + strings.Join(e.Keys, ", ")
	case EventStorageHint:
		return "storage changes: " + fix.ProveHint
	}
	return fmt.Sprintf("event %d", int(e.Kind))
}
