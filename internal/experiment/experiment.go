package experiment

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/comparison"
)

// Side is one configuration of an experiment: a target, and what changes
// this host into the configuration for the side's runs.
type Side struct {
	// Name labels the side in tables, charts and result names (NAME-N):
	// 1-64 letters, digits, '.', '_' or '-', starting with a letter or
	// digit.
	Name   string
	Target Target
	// Setup, when set, is called before each of the side's runs and puts
	// the configuration in place (a dm-crypt flag, a sysctl); the undo it
	// returns is called right after the run, also when the run failed or
	// ctx was cancelled. An error from Setup ends the experiment; it must
	// leave nothing changed (its undo is not called).
	Setup func(ctx context.Context) (undo func() error, err error)
	// Facts are added to the side's environment facts (what the setup
	// changed, which the results cannot show).
	Facts []comparison.Fact
}

// RunInfo says which run of an experiment is starting or finished.
type RunInfo struct {
	Index, Total int // 1-based position in the schedule, and its length
	Side         string
	N            int // 1-based run number within the side
	Target       Target
}

// Name is the run's result name, SIDE-N (compare --save writes
// SIDE-N.json).
func (r RunInfo) Name() string { return fmt.Sprintf("%s-%d", r.Side, r.N) }

// String is the progress line: "run 3/12: name (target)".
func (r RunInfo) String() string {
	return fmt.Sprintf("run %d/%d: %s (%s)", r.Index, r.Total, r.Side, r.Target)
}

// Experiment is a workload run Runs times on every side, interleaved.
type Experiment struct {
	Workload Workload
	Sides    []Side
	Runs     int // per side, at least 1
	Env      Env
	// Progress, when set, is called as each run starts.
	Progress func(RunInfo)
	// Result, when set, is called with each complete run's result, in
	// schedule order (compare --save writes its files from it). An error
	// ends the experiment.
	Result func(RunInfo, *benchresult.Result) error
}

// SideOutcome is what one side's runs gave.
type SideOutcome struct {
	Name string
	// Results are the side's complete runs in the order they ran.
	Results []*benchresult.Result
	// Partial is the run that was interrupted or failed, when it was
	// this side's.
	Partial *benchresult.Result
	// Comparison is Results as a comparison side (comparison.FromResults,
	// labelled SIDE-N, with the side's Facts); empty without results.
	Comparison comparison.Side
}

// Outcome is an experiment's results, also when it ended early.
type Outcome struct {
	Sides []SideOutcome
	// Interrupted is set when ctx was cancelled: the results are those of
	// the runs that completed before.
	Interrupted bool
	// Complete is set when every scheduled run completed.
	Complete bool
}

// sideNameRE is the alphabet of side names: a name becomes a file name
// (NAME-N.json), a table cell and a chart label: one path component, no
// markup, no line breaks. Compiled on first use: {0,63} unrolls into 64
// nodes, 861 allocations that every command paid in package init.
var sideNameRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
})

// ValidSideName checks a side's name.
func ValidSideName(name string) error {
	if !sideNameRE().MatchString(name) {
		return fmt.Errorf("side name %q: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit (NAME=FILE names a side)", name)
	}
	return nil
}

func (x *Experiment) validate() error {
	if len(x.Sides) == 0 {
		return errors.New("the experiment has no sides")
	}
	if x.Runs < 1 {
		return fmt.Errorf("%d runs per side: need at least 1", x.Runs)
	}
	seen := map[string]bool{}
	for _, s := range x.Sides {
		if err := ValidSideName(s.Name); err != nil {
			return err
		}
		if seen[s.Name] {
			return fmt.Errorf("side name %q given twice", s.Name)
		}
		seen[s.Name] = true
		if (s.Target.Dir == "") == (s.Target.Device == "") {
			return fmt.Errorf("side %s: give a directory or a block device as its target", s.Name)
		}
	}
	_, err := x.Workload.withDefaults()
	return err
}

// Run runs the experiment: Schedule's order over the sides, each run
// inside its side's Setup and undo. It stops at the first run that fails,
// is interrupted (ctx cancelled) or whose Setup fails, and returns the
// outcome so far with that error joined with every undo's error. Two runs
// that decode to the same result are refused (ErrDuplicate): counted twice,
// a run makes a difference look significant that is not.
func Run(ctx context.Context, x Experiment) (*Outcome, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := x.validate(); err != nil {
		return nil, err
	}
	out := &Outcome{Sides: make([]SideOutcome, len(x.Sides))}
	for i, s := range x.Sides {
		out.Sides[i].Name = s.Name
	}
	order := Schedule(len(x.Sides), x.Runs)
	runErr := func() error {
		for i, si := range order {
			s := x.Sides[si]
			so := &out.Sides[si]
			info := RunInfo{Index: i + 1, Total: len(order), Side: s.Name, N: len(so.Results) + 1, Target: s.Target}
			if err := ctx.Err(); err != nil {
				out.Interrupted = true
				return fmt.Errorf("before %s: %w", info, ErrInterrupted)
			}
			if x.Progress != nil {
				x.Progress(info)
			}
			res, err := runSide(ctx, x, s, info)
			if res != nil && err == nil && res.Status == benchresult.StatusComplete {
				so.Results = append(so.Results, res)
				if x.Result != nil {
					if err := x.Result(info, res); err != nil {
						return fmt.Errorf("%s: %w", info.Name(), err)
					}
				}
				continue
			}
			so.Partial = res
			if errors.Is(err, ErrInterrupted) || ctx.Err() != nil {
				out.Interrupted = true
			}
			if err == nil {
				err = errors.New(res.Error) // not reached: an incomplete result comes with its error
			}
			return fmt.Errorf("%s: %w", info, err)
		}
		return nil
	}()
	var labels []string
	var all []*benchresult.Result
	for i := range out.Sides {
		so := &out.Sides[i]
		if len(so.Results) == 0 {
			continue
		}
		names := make([]string, len(so.Results))
		for n := range so.Results {
			names[n] = RunInfo{Side: so.Name, N: n + 1}.Name()
			labels = append(labels, names[n])
		}
		all = append(all, so.Results...)
		cs, err := comparison.FromResults(so.Name, names, so.Results)
		if err != nil {
			runErr = errors.Join(runErr, err)
			continue
		}
		cs.Facts = append(cs.Facts, x.Sides[i].Facts...)
		so.Comparison = cs
	}
	if runErr == nil {
		if err := Distinct(labels, all); err != nil {
			return out, err
		}
		out.Complete = true
	}
	return out, runErr
}

// runSide runs one run of side s inside its Setup and undo.
func runSide(ctx context.Context, x Experiment, s Side, info RunInfo) (res *benchresult.Result, err error) {
	if s.Setup != nil {
		undo, serr := s.Setup(ctx)
		if serr != nil {
			return nil, fmt.Errorf("set up %s: %w", s.Name, serr)
		}
		if undo != nil {
			// Deferred, so a panic in the run undoes the change too.
			defer func() {
				if uerr := undo(); uerr != nil {
					err = errors.Join(err, fmt.Errorf("undo %s after %s: %w", s.Name, info.Name(), uerr))
				}
			}()
		}
	}
	return RunWorkload(ctx, x.Env, x.Workload, s.Target)
}
