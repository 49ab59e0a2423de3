package comparecmd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
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

// loadSide reads one side's result files.
func loadSide(name string, files []string) (comparison.Side, error) {
	ss, err := loadSides([]string{name}, [][]string{files})
	if err != nil {
		return comparison.Side{}, err
	}
	return ss[0], nil
}

// ErrDuplicate is wrapped by readAll's error for a result given twice.
var ErrDuplicate = errors.New("the same bench result is given twice")

// readAll decodes result files on every CPU: with full histograms a file is
// ~100 KB of JSON, and decoding 20 of them is most of a comparison's time.
// Two files with the same bytes, or that decode to the same run (profile,
// host, start and duration: a copy re-indented or with fields reordered),
// are refused with both arguments named.
func readAll(files []string) ([]*benchresult.Result, error) {
	rs := make([]*benchresult.Result, len(files))
	sums := make([][sha256.Size]byte, len(files))
	errs := make([]error, len(files))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			b, err := os.ReadFile(f)
			if err != nil {
				errs[i] = err
				return
			}
			sums[i] = sha256.Sum256(b)
			if rs[i], err = benchresult.Read(bytes.NewReader(b)); err != nil {
				errs[i] = fmt.Errorf("%s: %w", f, err)
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
		id := runIdentity(r)
		if j, ok := byRun[id]; ok {
			return nil, fmt.Errorf("%w: %s and %s are the same run (%s); give each run once", ErrDuplicate, files[j], files[i], id)
		}
		byRun[id] = i
	}
	return rs, nil
}

// runIdentity is the digest of the decoded run re-encoded: a copy of a
// file re-indented, with fields reordered or unknown fields added decodes
// to the same run and so to the same digest.
func runIdentity(r *benchresult.Result) string {
	b, err := json.Marshal(r)
	if err != nil {
		return "" // not reached: a decoded result re-encodes
	}
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%s started %s, sha256 of the decoded run %x", r.Profile, r.Started.UTC().Format(time.RFC3339Nano), sum[:8])
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
	// Every run writes into a private temporary directory, removed however
	// compare ends; --save gets copies through an os.Root, so no name and
	// no symbolic link already in --save can put a file outside it.
	tmp, err := os.MkdirTemp("", "slowpath-compare-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var save *os.Root
	if o.Save != "" {
		if err := os.MkdirAll(o.Save, 0o755); err != nil {
			return nil, err
		}
		if save, err = os.OpenRoot(o.Save); err != nil {
			return nil, fmt.Errorf("--save: %w", err)
		}
		defer save.Close()
	}
	files := make([][]string, len(targets))
	order := Schedule(len(targets), o.Runs)
	for i, ti := range order {
		t := targets[ti]
		name, err := saveName(t.Name, len(files[ti])+1)
		if err != nil {
			return nil, err
		}
		out := filepath.Join(tmp, name)
		args := append([]string{"bench", o.Profile, "--dir", t.Dir, "-o", out}, o.Bench.args()...)
		fmt.Fprintf(env.Stderr, "compare: run %d/%d: %s (%s)\n", i+1, len(order), t.Name, t.Dir)
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Stdout, cmd.Stderr = env.Stderr, env.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("bench run %d (%s on %s): %w", i+1, o.Profile, t.Name, err)
		}
		if save != nil {
			if err := copyInto(save, name, out); err != nil {
				return nil, fmt.Errorf("--save %s: %w", o.Save, err)
			}
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

// saveName is a run's result file name, NAME-N.json, checked to be one
// local name after cleaning (the side name's alphabet already ensures it).
func saveName(side string, n int) (string, error) {
	if err := validSideName(side); err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s-%d.json", side, n)
	if !filepath.IsLocal(name) || filepath.Base(name) != name {
		return "", fmt.Errorf("result file name %q would leave the directory it is saved in", name)
	}
	return name, nil
}

// copyInto copies file src to name inside root (replacing a file of that
// name; a symbolic link there is not followed out of root).
func copyInto(root *os.Root, name, src string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return root.WriteFile(name, b, 0o644)
}
