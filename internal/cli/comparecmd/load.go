package comparecmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/comparison"
)

// loadSide reads a side's result files.
func loadSide(name string, files []string) (comparison.Side, error) {
	rs, err := readAll(files)
	if err != nil {
		return comparison.Side{}, err
	}
	return comparison.FromResults(name, files, rs)
}

// readAll decodes result files on every CPU: with full histograms a file is
// ~100 KB of JSON, and decoding 20 of them is most of a comparison's time.
func readAll(files []string) ([]*benchresult.Result, error) {
	rs := make([]*benchresult.Result, len(files))
	errs := make([]error, len(files))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rs[i], errs[i] = benchresult.ReadFile(f)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rs, nil
}

// BenchFlags are the bench flags compare passes through to every run.
type BenchFlags struct {
	Runtime  time.Duration
	Scale    float64
	SlowLoad time.Duration
	Cloud    string
	set      func(name string) bool
}

// AddFlags registers them; only flags the user set are passed on, so bench
// keeps its own defaults.
func (b *BenchFlags) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&b.Runtime, "runtime", 0, "bench --runtime for every run (default: bench's)")
	fs.Float64Var(&b.Scale, "scale", 0, "bench --scale for every run (default: bench's)")
	fs.DurationVar(&b.SlowLoad, "slow-load", 0, "bench --slow-load for every run (default: bench's)")
	fs.StringVar(&b.Cloud, "cloud", "", "bench --cloud for every run: auto, azure, aws, gcp or none (default: bench's)")
	b.set = func(name string) bool { f := fs.Lookup(name); return f != nil && f.Changed }
}

func (b *BenchFlags) args() []string {
	var out []string
	if b.set == nil {
		return out
	}
	if b.set("runtime") {
		out = append(out, "--runtime", b.Runtime.String())
	}
	if b.set("scale") {
		out = append(out, "--scale", strconv.FormatFloat(b.Scale, 'g', -1, 64))
	}
	if b.set("slow-load") {
		out = append(out, "--slow-load", b.SlowLoad.String())
	}
	if b.set("cloud") {
		out = append(out, "--cloud", b.Cloud)
	}
	return out
}

// runInterleaved runs `slowpath bench` (this same binary) on every target
// in Schedule's order and reads the results back. Each run is its own
// process, exactly what a user running bench by hand gets; bench's own
// output goes to stderr so compare's stdout stays one document.
func runInterleaved(ctx context.Context, env *clienv.Env, o *Options, targets []Target) ([]comparison.Side, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the slowpath binary to run bench: %w", err)
	}
	dir := o.Save
	if dir == "" {
		tmp, err := os.MkdirTemp("", "slowpath-compare-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	files := make([][]string, len(targets))
	order := Schedule(len(targets), o.Runs)
	for i, ti := range order {
		t := targets[ti]
		out := filepath.Join(dir, fmt.Sprintf("%s-%d.json", t.Name, len(files[ti])+1))
		args := append([]string{"bench", o.Profile, "--dir", t.Dir, "-o", out}, o.Bench.args()...)
		fmt.Fprintf(env.Stderr, "compare: run %d/%d: %s (%s)\n", i+1, len(order), t.Name, t.Dir)
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Stdout, cmd.Stderr = env.Stderr, env.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("bench run %d (%s on %s): %w", i+1, o.Profile, t.Name, err)
		}
		files[ti] = append(files[ti], out)
	}
	var sides []comparison.Side
	for i, t := range targets {
		s, err := loadSide(t.Name, files[i])
		if err != nil {
			return nil, err
		}
		sides = append(sides, s)
	}
	return sides, nil
}
