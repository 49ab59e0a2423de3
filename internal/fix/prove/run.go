package prove

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/experiment"
	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/fix/apply"
)

// Side names: the first side is the baseline of the comparison.
const (
	SideOff = "off"
	SideOn  = "on"
)

// Options say how to measure an entry.
type Options struct {
	Workload experiment.Workload
	Dir      string
	// Runs per side; DefaultRuns(Alpha) when zero.
	Runs  int
	Alpha float64
	Env   experiment.Env
	// Progress, when set, is called as each run starts.
	Progress func(fix.Entry, experiment.RunInfo)
}

// Proof is one entry measured: both sides' runs, their comparison, and
// the decision. The entry is off (the host as before) when it is
// returned; the caller applies the kept ones.
type Proof struct {
	Entry    fix.Entry
	Sides    []comparison.Side
	Result   *comparison.Result
	Decision Decision
	// Applied is set by Run once a kept entry is applied again.
	Applied bool
}

// Measure runs the workload on o.Dir with e off and on, o.Runs times
// each, interleaved (experiment.Schedule), and decides. The "on" side's
// setup applies e through a (recorded in its state file first) and its
// undo restores the values from before, after every run, also a failed
// or interrupted one; e is off again when Measure returns, whatever
// happened. An interrupted measurement returns an error wrapping
// experiment.ErrInterrupted (the partial runs decide nothing).
func Measure(ctx context.Context, a *apply.Applier, e fix.Entry, o Options) (p *Proof, err error) {
	if o.Runs == 0 {
		o.Runs = DefaultRuns(o.Alpha)
	}
	d := experiment.Declared(o.Workload.Profile)
	if len(d.Primary) == 0 {
		return nil, fmt.Errorf("profile %q declares no primary metric to decide on", o.Workload.Profile)
	}
	tg, err := NewToggle(a, e)
	if err != nil {
		return nil, err
	}
	// Belt and braces: the engine undoes after every run, but a change
	// must not outlive Measure whatever path it returns by.
	defer func() {
		if uerr := tg.Off(); uerr != nil {
			err = errors.Join(err, uerr)
		}
	}()
	target := experiment.Target{Dir: o.Dir}
	x := experiment.Experiment{
		Workload: o.Workload,
		Runs:     o.Runs,
		Env:      o.Env,
		Sides: []experiment.Side{
			{Name: SideOff, Target: target, Facts: []comparison.Fact{{Key: e.ID, Value: "off: " + describeSteps(e, false)}}},
			{Name: SideOn, Target: target, Facts: []comparison.Fact{{Key: e.ID, Value: "on: " + describeSteps(e, true)}},
				Setup: func(context.Context) (func() error, error) {
					if err := tg.On(); err != nil {
						return nil, err
					}
					return tg.Off, nil
				}},
		},
	}
	if o.Progress != nil {
		x.Progress = func(ri experiment.RunInfo) { o.Progress(e, ri) }
	}
	out, err := experiment.Run(ctx, x)
	if err != nil {
		if out != nil && out.Interrupted && !errors.Is(err, experiment.ErrInterrupted) {
			err = fmt.Errorf("%w: %w", experiment.ErrInterrupted, err)
		}
		return nil, fmt.Errorf("%s on %s: %w", e.ID, e.Subject, err)
	}
	p = &Proof{Entry: e}
	for _, s := range out.Sides {
		p.Sides = append(p.Sides, s.Comparison)
	}
	p.Result, err = comparison.ForProfile(p.Sides, d, comparison.Options{Alpha: o.Alpha}, nil)
	if err != nil {
		return nil, fmt.Errorf("%s on %s: %w", e.ID, e.Subject, err)
	}
	p.Decision, err = Decide(p.Result)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// describeSteps says what the entry's steps set, on or off ("crypt:data
// +no_read_workqueue +no_write_workqueue"), for the sides' facts.
func describeSteps(e fix.Entry, on bool) string {
	var out []string
	for _, s := range e.Steps {
		if !on {
			out = append(out, s.Key()+" as found")
			continue
		}
		out = append(out, s.Change.Setting())
	}
	return strings.Join(out, ", ")
}

// Run measures each entry in turn (Measure), each from the host as found,
// calls done with each proof as it is decided (to print it), and then
// applies the entries kept, as measured, recording them in a's state file
// for --rollback. Interrupted or failing, the entry under measurement is
// undone and nothing is applied. The proofs are returned in entry order.
func Run(ctx context.Context, a *apply.Applier, entries []fix.Entry, o Options, done func(*Proof) error) ([]*Proof, error) {
	var proofs []*Proof
	for _, e := range entries {
		p, err := Measure(ctx, a, e, o)
		if err != nil {
			return proofs, err
		}
		proofs = append(proofs, p)
		if done != nil {
			if err := done(p); err != nil {
				return proofs, err
			}
		}
	}
	return proofs, applyKept(a, proofs)
}

// applyKept applies the kept entries of proofs in order, all or nothing:
// when one fails, those applied before it are undone, last first.
func applyKept(a *apply.Applier, proofs []*Proof) error {
	for i, p := range proofs {
		if !p.Decision.Keep {
			continue
		}
		if _, err := a.ApplyEntry(p.Entry); err != nil {
			err = fmt.Errorf("%s on %s: proven, but applying it failed: %w", p.Entry.ID, p.Entry.Subject, err)
			// All or nothing: the kept entries applied before it are
			// undone too, last first.
			for _, q := range slices.Backward(proofs[:i]) {
				if q.Applied {
					if uerr := a.UndoEntry(q.Entry.ID, q.Entry.Subject); uerr != nil {
						err = errors.Join(err, uerr)
					}
					q.Applied = false
				}
			}
			return err
		}
		p.Applied = true
	}
	return nil
}
