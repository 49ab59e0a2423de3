package prove

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/fix/apply"
)

// Toggle switches one plan entry on and off on this host through an
// apply.Applier, so every change is in the state file before the
// workload runs on it: an interrupted prove restores it (Off), and one
// killed harder leaves it to `slowpath fix --rollback`.
type Toggle struct {
	A     *apply.Applier
	Entry fix.Entry
	on    bool
}

// ErrRecorded marks an entry whose settings an earlier `fix --apply`
// changed and still records: switching it "off" would restore the value
// from before that run, not the value now, so it cannot be toggled.
var ErrRecorded = errors.New("already changed by an earlier slowpath fix --apply")

// ErrNothingToToggle marks an entry whose settings already hold the
// planned values: off and on would be the same configuration.
var ErrNothingToToggle = errors.New("every setting already has the planned value")

// NewToggle checks that e can be switched: it has runtime steps and none
// of its settings is recorded as changed by slowpath.
func NewToggle(a *apply.Applier, e fix.Entry) (*Toggle, error) {
	if len(e.Steps) == 0 {
		return nil, fmt.Errorf("%s on %s: no runtime change to measure", e.ID, e.Subject)
	}
	st := a.State()
	for _, s := range e.Steps {
		if slices.ContainsFunc(st.Changes, func(c apply.Change) bool { return c.Key == s.Key() }) {
			return nil, fmt.Errorf("%s on %s: %s: %w; run slowpath fix --rollback first to measure it from the original state", e.ID, e.Subject, s.Key(), ErrRecorded)
		}
	}
	return &Toggle{A: a, Entry: e}, nil
}

// On applies the entry: the "on" side's setup. A step that fails undoes
// the steps before it (apply.ApplyEntry). A setting that already had its
// value is refused: the two sides would not differ by this entry.
func (t *Toggle) On() error {
	if t.on {
		return nil
	}
	outs, err := t.A.ApplyEntry(t.Entry)
	t.on = slices.ContainsFunc(outs, func(o apply.Outcome) bool { return o.Changed })
	if err != nil {
		t.on = false
		return fmt.Errorf("%s on %s: %w", t.Entry.ID, t.Entry.Subject, err)
	}
	var same []string
	for _, o := range outs {
		if !o.Changed {
			same = append(same, o.Key)
		}
	}
	if len(same) > 0 {
		uerr := t.Off()
		return errors.Join(fmt.Errorf("%s on %s: %s: %w", t.Entry.ID, t.Entry.Subject, strings.Join(same, ", "), ErrNothingToToggle), uerr)
	}
	return nil
}

// Off restores what On changed, exactly: the values read just before On
// (the state file's "previous"), and forgets them. It is the "on" side's
// undo and safe to call when the entry is off.
func (t *Toggle) Off() error {
	if !t.on {
		return nil
	}
	if err := t.A.UndoEntry(t.Entry.ID, t.Entry.Subject); err != nil {
		return fmt.Errorf("restore %s on %s: %w (run slowpath fix --rollback)", t.Entry.ID, t.Entry.Subject, err)
	}
	t.on = false
	return nil
}

// IsOn reports whether the entry is applied by this toggle.
func (t *Toggle) IsOn() bool { return t.on }
