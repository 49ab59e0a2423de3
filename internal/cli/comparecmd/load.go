package comparecmd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/experiment"
	"github.com/slowpath/slowpath/internal/stdfile"
	"github.com/slowpath/slowpath/internal/workload/profile"
)

// loadSides reads every side's result files, refusing a file given twice
// (by name or by content) anywhere on the command line: a run counted
// twice makes a difference look significant that is not.
func loadSides(names []string, lists [][]string) ([]comparison.Side, error) {
	var all []string
	for _, l := range lists {
		all = append(all, l...)
	}
	rs, err := readAll(all)
	if err != nil {
		return nil, err
	}
	var sides []comparison.Side
	for i, l := range lists {
		s, err := comparison.FromResults(names[i], l, rs[:len(l)])
		if err != nil {
			return nil, err
		}
		rs = rs[len(l):]
		sides = append(sides, s)
	}
	return sides, nil
}

// ErrDuplicate is wrapped by readAll's error for a result given twice
// (experiment.ErrDuplicate: the engine refuses the same).
var ErrDuplicate = experiment.ErrDuplicate

// readAll decodes result files on every CPU: with full histograms a file is
// ~100 KB of JSON, and decoding 20 of them is most of a comparison's time.
// Two files with the same bytes, or that decode to the same run (profile,
// host, start and duration: a copy re-indented or with fields reordered),
// are refused with both arguments named.
func readAll(files []string) ([]*benchresult.Result, error) {
	rs := make([]*benchresult.Result, len(files))
	sums := make([][sha256.Size]byte, len(files))
	errs := make([]error, len(files))
	if n := slices.Index(files, stdfile.Dash); n >= 0 && slices.Contains(files[n+1:], stdfile.Dash) {
		return nil, errors.New("- (stdin) given more than once: standard input holds one result")
	}
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			b, err := stdfile.ReadFile(f)
			if err != nil {
				errs[i] = err
				return
			}
			sums[i] = sha256.Sum256(b)
			if rs[i], err = benchresult.Read(bytes.NewReader(b)); err != nil {
				errs[i] = fmt.Errorf("%s: %w", stdfile.Name(f), err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	byHash := map[[sha256.Size]byte]int{}
	byRun := map[string]int{}
	for i, r := range rs {
		if j, ok := byHash[sums[i]]; ok {
			return nil, fmt.Errorf("%w: %s and %s have the same content; give each run once", ErrDuplicate, files[j], files[i])
		}
		byHash[sums[i]] = i
		id := experiment.RunIdentity(r)
		if j, ok := byRun[id]; ok {
			return nil, fmt.Errorf("%w: %s and %s are the same run (%s); give each run once", ErrDuplicate, files[j], files[i], id)
		}
		byRun[id] = i
	}
	return rs, nil
}

// BenchFlags are the bench flags compare applies to every run.
type BenchFlags struct {
	Runtime  time.Duration
	Scale    float64
	SlowLoad time.Duration
	Cloud    string
	// Fidelity: a replay's runs record their block requests, for the
	// fidelity of the results in --save (experiment.Workload.Fidelity).
	Fidelity bool
	set      func(name string) bool
}

// AddFlags registers them; only flags the user set change the workload,
// so the runs keep bench's own defaults.
func (b *BenchFlags) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&b.Runtime, "runtime", 0, "bench --runtime for every run (default: bench's)")
	fs.Float64Var(&b.Scale, "scale", 0, "bench --scale for every run (default: bench's)")
	fs.DurationVar(&b.SlowLoad, "slow-load", 0, "bench --slow-load for every run (default: bench's)")
	fs.StringVar(&b.Cloud, "cloud", "", "bench --cloud for every run: auto, azure, aws, gcp or none (default: bench's)")
	fs.BoolVar(&b.Fidelity, "fidelity", false, "replay profiles: record each run's block requests for its fidelity (in --save's results); the recorder's CPU is then in the figures")
	b.set = func(name string) bool { f := fs.Lookup(name); return f != nil && f.Changed }
}

// workload is the experiment's workload: profile arg with the flags the
// user set; checked before anything runs.
func (b *BenchFlags) workload(arg string) (experiment.Workload, error) {
	w, err := experiment.ParseWorkload(arg)
	if err != nil {
		return w, err
	}
	w.Fidelity = b.Fidelity
	set := b.set
	if set == nil {
		set = func(string) bool { return false }
	}
	if set("runtime") {
		if b.Runtime <= 0 {
			return w, fmt.Errorf("--runtime %v: want a positive duration", b.Runtime)
		}
		w.Runtime = b.Runtime
	}
	if set("scale") {
		if err := profile.ParseScale(b.Scale); err != nil {
			return w, err
		}
		w.Scale = b.Scale
	}
	if set("slow-load") {
		w.SlowLoad = b.SlowLoad
	}
	return w, nil
}

// runInterleaved runs the profile on every target in process through the
// experiment engine, interleaved, and returns the sides. Progress lines go
// to stderr, so compare's stdout stays one document; --save gets each
// run's result file as it completes, through an os.Root, so no name and no
// symbolic link already in --save can put a file outside it.
func runInterleaved(ctx context.Context, env *clienv.Env, o *Options, w experiment.Workload, targets []Target) ([]comparison.Side, error) {
	var save *os.Root
	if o.Save != "" {
		if err := os.MkdirAll(o.Save, 0o755); err != nil {
			return nil, err
		}
		var err error
		if save, err = os.OpenRoot(o.Save); err != nil {
			return nil, fmt.Errorf("--save: %w", err)
		}
		defer save.Close()
	}
	xenv := experiment.Env{FS: env.FS, Version: env.Version, Cloud: cloud.Options{Cloud: o.Bench.Cloud}}
	// --cipher-limit serves every run's tax too, as bench --cipher-limit
	// does: no run measures the cipher again after it.
	if o.CipherLimit != "" {
		var err error
		if xenv.Cipher, xenv.CipherEmulated, err = experiment.ReadCipherLimit(o.CipherLimit); err != nil {
			return nil, fmt.Errorf("--cipher-limit: %w", err)
		}
	}
	x := experiment.Experiment{Workload: w, Runs: o.Runs, Env: xenv,
		Progress: func(r experiment.RunInfo) {
			fmt.Fprintf(env.Stderr, "compare: %s\n", r)
		},
	}
	for _, t := range targets {
		x.Sides = append(x.Sides, experiment.Side{Name: t.Name, Target: experiment.Target{Dir: t.Dir}})
	}
	if save != nil {
		x.Result = func(r experiment.RunInfo, res *benchresult.Result) error {
			name, err := saveName(r.Side, r.N)
			if err != nil {
				return err
			}
			if err := saveInto(save, name, res); err != nil {
				return fmt.Errorf("--save %s: %w", o.Save, err)
			}
			return nil
		}
	}
	// Signals interrupt the run in progress instead of killing compare:
	// the engine removes the run's files and undoes its side's setup.
	sctx, stop := clienv.Interruptible(ctx)
	defer stop()
	out, err := experiment.Run(sctx, x)
	if err != nil {
		if out != nil && out.Interrupted {
			return nil, fmt.Errorf("interrupted: %w (no comparison; the runs that completed are in --save when given)", err)
		}
		return nil, err
	}
	var sides []comparison.Side
	for _, s := range out.Sides {
		sides = append(sides, s.Comparison)
	}
	return sides, nil
}

// saveName is a run's result file name, NAME-N.json, checked to be one
// local name after cleaning (the side name's alphabet already ensures it).
func saveName(side string, n int) (string, error) {
	if err := experiment.ValidSideName(side); err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s-%d.json", side, n)
	if !filepath.IsLocal(name) || filepath.Base(name) != name {
		return "", fmt.Errorf("result file name %q would leave the directory it is saved in", name)
	}
	return name, nil
}

// saveInto writes res as the file name inside root (replacing a file of
// that name; a symbolic link there is not followed out of root).
func saveInto(root *os.Root, name string, res *benchresult.Result) error {
	var b bytes.Buffer
	if err := benchresult.Write(&b, res); err != nil {
		return err
	}
	return root.WriteFile(name, b.Bytes(), 0o644)
}
