// Package apply makes the runtime changes of a fix plan (sysctls, NIC
// rings, dm-crypt table flags) and undoes them. Every change it makes is
// recorded with the value it replaced in a state file, written before the
// next change, so a failed step rolls back the ones before it, and
// `slowpath fix --rollback` restores them later. It changes back only
// what still holds the value it set, unless forced: a setting someone
// changed since is theirs. Applier.ApplyAndVerify is `fix --apply`'s
// transaction: apply, verify on the live host, roll back what did not hold.
package apply

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/fixstate"
	"github.com/slowpath/slowpath/internal/stdfile"
)

// DefaultStatePath is where fix keeps its state (fixstate.DefaultPath).
const DefaultStatePath = fixstate.DefaultPath

// The state's types live in fixstate, which the host collector reads too.
type (
	State      = fixstate.State
	Change     = fixstate.Change
	FileChange = fixstate.FileChange
)

// Applier makes and undoes changes on Host, recording them at StatePath.
type Applier struct {
	Host      Host
	StatePath string
	Log       io.Writer
	lock      *os.File
	state     *State
}

// Open locks the state file (one fix at a time on a host) and loads it.
// Close releases the lock.
func Open(h Host, statePath string, log io.Writer) (*Applier, error) {
	if statePath == "" {
		statePath = DefaultStatePath
	}
	if log == nil {
		log = io.Discard
	}
	if err := os.MkdirAll(filepath.Dir(statePath), 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w (run as root)", err)
	}
	l, err := os.OpenFile(statePath+".lock", os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s.lock: %w", statePath, err)
	}
	if err := unix.Flock(int(l.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		l.Close()
		return nil, fmt.Errorf("another slowpath fix holds %s.lock: %w", statePath, err)
	}
	a := &Applier{Host: h, StatePath: statePath, Log: log, lock: l, state: &State{}}
	if err := a.load(); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// Close releases the lock.
func (a *Applier) Close() error {
	if a.lock == nil {
		return nil
	}
	err := a.lock.Close()
	a.lock = nil
	return err
}

// State returns a copy of the recorded state.
func (a *Applier) State() State {
	s := *a.state
	s.Changes = slices.Clone(s.Changes)
	s.Files = slices.Clone(s.Files)
	return s
}

func (a *Applier) bootID() string {
	b, err := os.ReadFile(a.Host.FS.ProcPath("sys", "kernel", "random", "boot_id"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// stepOf decodes the step a recorded change keeps as fix wrote it.
func stepOf(c Change) (fix.Step, error) {
	var s fix.Step
	if err := json.Unmarshal(c.Step, &s); err != nil {
		return s, fmt.Errorf("change %s: step: %w", c.Key, err)
	}
	return s, nil
}

func (a *Applier) load() error {
	b, err := os.ReadFile(a.StatePath)
	if errors.Is(err, os.ErrNotExist) {
		a.state = &State{BootID: a.bootID()}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read state %s: %w", a.StatePath, err)
	}
	s, err := fixstate.Decode(b)
	if err == nil {
		// Every step must decode now, not when --rollback needs it.
		for _, c := range s.Changes {
			if _, err = stepOf(c); err != nil {
				break
			}
		}
	}
	if err != nil {
		return fmt.Errorf("state %s: %w (move it away to start over)", a.StatePath, err)
	}
	boot := a.bootID()
	if held := s.Holding(boot); len(held) < len(s.Changes) {
		fmt.Fprintf(a.Log, "the host rebooted since slowpath changed %d runtime setting(s): they are gone, forgetting them\n", len(s.Changes))
		s.Changes = held
	}
	s.BootID = boot
	a.state = s
	return nil
}

// save writes the state whole or not at all (stdfile.WriteFileIn, in an
// os.Root at the state's directory); with nothing recorded it removes the
// file.
func (a *Applier) save() error {
	dir, base := filepath.Split(a.StatePath)
	if dir == "" {
		dir = "."
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	defer r.Close()
	if len(a.state.Changes) == 0 && len(a.state.Files) == 0 {
		if err := r.Remove(base); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	a.state.Stamp()
	b, err := json.MarshalIndent(a.state, "", "  ")
	if err != nil {
		return err
	}
	err = stdfile.WriteFileIn(r, base, 0o600, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
	if err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return nil
}

func (a *Applier) find(key string) int {
	return slices.IndexFunc(a.state.Changes, func(c Change) bool { return c.Key == key })
}

// Outcome is what happened to one step.
type Outcome struct {
	ID, Subject, Key string
	From, To         string
	// Changed is false when the setting already had the value.
	Changed bool
}

// ApplyEntry applies the steps of e in order. When step N fails, steps
// 1..N-1 of this call are undone and the error returned; changes of
// earlier calls stay (the caller undoes them with Undo when it must).
func (a *Applier) ApplyEntry(e fix.Entry) ([]Outcome, error) {
	var done []Outcome
	for i, s := range e.Steps {
		cur, err := s.Change.Read(a.Host)
		if err != nil {
			return done, a.failed(done, fmt.Errorf("step %d (%s): %w", i+1, s.Key(), err))
		}
		want := s.Change.Want(cur)
		o := Outcome{ID: e.ID, Subject: e.Subject, Key: s.Key(), From: cur, To: want}
		if s.Change.Same(cur, want) {
			fmt.Fprintf(a.Log, "%s: %s already %s\n", e.ID, s.Key(), show(cur))
			done = append(done, o)
			continue
		}
		if err := s.Change.Write(a.Host, want); err != nil {
			return done, a.failed(done, fmt.Errorf("step %d (%s): %w", i+1, s.Key(), err))
		}
		o.Changed = true
		// Record before the next step, so a crash leaves a state that
		// --rollback can use.
		now := time.Now().UTC()
		if j := a.find(o.Key); j >= 0 {
			a.state.Changes[j].Applied, a.state.Changes[j].AppliedAt = want, now
		} else {
			step, err := json.Marshal(s)
			if err != nil {
				return done, a.failed(done, fmt.Errorf("step %d (%s): %w", i+1, s.Key(), err))
			}
			a.state.Changes = append(a.state.Changes, Change{Key: o.Key, ID: e.ID, Subject: e.Subject, Step: step, Previous: cur, Applied: want, AppliedAt: now})
		}
		if err := a.save(); err != nil {
			return append(done, o), a.failed(append(done, o), err)
		}
		fmt.Fprintf(a.Log, "%s: %s %s -> %s\n", e.ID, o.Key, show(cur), show(want))
		done = append(done, o)
	}
	return done, nil
}

// failed undoes the changes of done (in reverse) after err.
func (a *Applier) failed(done []Outcome, err error) error {
	var keys []string
	for _, o := range slices.Backward(done) {
		if o.Changed {
			keys = append(keys, o.Key)
		}
	}
	if len(keys) == 0 {
		return err
	}
	if uerr := a.Undo(keys, false); uerr != nil {
		return fmt.Errorf("%w; rolling back the earlier steps also failed: %w", err, uerr)
	}
	fmt.Fprintf(a.Log, "rolled back %s\n", strings.Join(keys, ", "))
	return fmt.Errorf("%w (earlier steps rolled back: %s)", err, strings.Join(keys, ", "))
}

// ErrChangedSince marks a setting that no longer holds the value slowpath
// set: someone else changed it, so rollback leaves it alone unless forced.
var ErrChangedSince = errors.New("changed since slowpath set it")

// Undo restores the recorded previous value of each key, in the order
// given, and forgets it. A key whose setting no longer holds the value
// slowpath set is refused (ErrChangedSince) unless force is set.
func (a *Applier) Undo(keys []string, force bool) error {
	var errs []error
	for _, k := range keys {
		i := a.find(k)
		if i < 0 {
			errs = append(errs, fmt.Errorf("%s: not changed by slowpath (no record in %s)", k, a.StatePath))
			continue
		}
		c := a.state.Changes[i]
		step, err := stepOf(c)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
			continue
		}
		cur, err := step.Change.Read(a.Host)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
			continue
		}
		if !step.Change.Same(cur, c.Applied) && !force {
			errs = append(errs, fmt.Errorf("%s: is %q, slowpath set %q: %w (--force restores %q anyway)", k, cur, c.Applied, ErrChangedSince, c.Previous))
			continue
		}
		if !step.Change.Same(cur, c.Previous) {
			if err := step.Change.Write(a.Host, c.Previous); err != nil {
				errs = append(errs, fmt.Errorf("%s: restore %q: %w", k, c.Previous, err))
				continue
			}
		}
		fmt.Fprintf(a.Log, "%s: %s restored to %s\n", c.ID, k, show(c.Previous))
		a.state.Changes = slices.Delete(a.state.Changes, i, i+1)
		if err := a.save(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// UndoEntry undoes every recorded change of the finding id on subject.
func (a *Applier) UndoEntry(id, subject string) error {
	var keys []string
	for _, c := range slices.Backward(a.state.Changes) {
		if c.ID == id && c.Subject == subject {
			keys = append(keys, c.Key)
		}
	}
	return a.Undo(keys, false)
}

// Rollback undoes every recorded runtime change (last first) and removes
// or restores every file slowpath wrote.
func (a *Applier) Rollback(force bool) error {
	var keys []string
	for _, c := range slices.Backward(a.state.Changes) {
		keys = append(keys, c.Key)
	}
	err := a.Undo(keys, force)
	return errors.Join(err, a.unpersist(force))
}

// show prints an empty value (a crypt table without optional parameters).
func show(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}
