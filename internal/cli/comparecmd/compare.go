// Package comparecmd implements `slowpath compare`: saved bench results (or
// runs it makes itself, interleaved) compared side by side with
// significance, as text, Markdown, JSON and a self-contained HTML report.
package comparecmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/collect/cipherlimit"
	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/experiment"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/model/cryptotax"
	"github.com/slowpath/slowpath/internal/report/comparereport"
	"github.com/slowpath/slowpath/internal/stats"
	"github.com/slowpath/slowpath/internal/stdfile"
)

// Target is one --target NAME=DIR.
type Target struct{ Name, Dir string }

// Options are the flags of `slowpath compare`.
type Options struct {
	Sides      []string // positional: [NAME=]FILE[,FILE...]
	Format     string
	HTML       string
	Alpha      float64
	Confidence float64
	FailOn     string // comparison.Gates: exit 1 when the comparison trips it
	// Interleaved runs.
	Profile string
	Targets []string
	Runs    int
	Save    string // keep the interleaved runs' result files here
	// CipherLimit is a `lab crypto-limit --format json` file for the
	// encryption tax, instead of measuring the cipher now.
	CipherLimit string
	Bench       BenchFlags
}

// NewCmdCompare builds the command; runF replaces the action in tests.
func NewCmdCompare(env *clienv.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{}
	cmd := &cobra.Command{
		Use:   "compare [NAME=]RESULT.json[,RESULT.json...] ... | --profile P --target NAME=DIR --target NAME=DIR",
		Short: "Compare bench results side by side: which differences are significant, and charts",
		Long: `Compare reads saved bench results, one side per argument (NAME=a.json,b.json
gives a side several runs), or with --profile and two or more --target runs the
bench on each target itself, in process, interleaved (A B B A ...) --runs
times (one line of progress per run on stderr).

Per metric it prints each side's median, the change against the first side and
whether it is significant (Mann-Whitney U over runs at --alpha, corrected for
multiple rows): "~" when the test could have found a difference and did not,
"cannot decide ... needs N per side" when no outcome of these runs could be
significant. Results of different bench profiles are refused. The environment
facts that differ between sides are listed below. --format html prints a
self-contained HTML report with charts instead. See docs/compare.md.

Exit status: 0, or 1 when --fail-on worse (a side's verdict worse, or a guard
worse) or --fail-on different (either direction) is met, 2 on error.`,
		RunE: clienv.Action(o, func(args []string) error { o.Sides = args; return nil }, runF,
			func(ctx context.Context) error { return run(ctx, env, o) }),
	}
	f := cmd.Flags()
	formats.AddFlag(f, &o.Format)
	f.StringVar(&o.HTML, "html", "", "deprecated, use --format html: also write the HTML page to `FILE` (- prints it instead of --format)")
	f.Float64Var(&o.Alpha, "alpha", stats.DefaultAlpha, "significance level of the Mann-Whitney U test")
	f.Float64Var(&o.Confidence, "confidence", 0.95, "confidence level of the intervals")
	f.StringVar(&o.FailOn, "fail-on", comparison.GateNone, "exit 1 when a side is significantly `WHAT`: worse, different or none")
	f.StringVar(&o.Profile, "profile", "", "bench `PROFILE` to run on every --target (interleaved runs)")
	f.StringArrayVar(&o.Targets, "target", nil, "`NAME=DIR` to bench (repeat; with --profile)")
	f.IntVar(&o.Runs, "runs", 5, "runs per target with --target (a verdict at alpha 0.05 needs 4)")
	f.StringVar(&o.Save, "save", "", "keep the result files of --target runs in `DIR` (NAME-N.json)")
	f.StringVar(&o.CipherLimit, "cipher-limit", "", "encryption tax: take the cipher's cost from `FILE` (slowpath lab crypto-limit --format json) instead of measuring it now")
	o.Bench.AddFlags(f)
	return cmd
}

// formats are compare's --format values: what comparereport.WritePage
// renders.
var formats = clienv.Formats{Names: comparereport.PageFormats, Default: "text",
	Notes: map[string]string{"html": "a self-contained page with charts"}, Also: []string{"md"}}

// validate checks the flags before anything runs, so a typo never costs a
// bench run.
func (o *Options) validate() ([]Target, error) {
	if err := formats.Check(o.Format); err != nil {
		return nil, err
	}
	if _, _, err := (&comparison.Result{}).Fails(o.FailOn); err != nil {
		return nil, fmt.Errorf("--fail-on: %w", err)
	}
	if !(o.Alpha > 0 && o.Alpha < 1) {
		return nil, fmt.Errorf("--alpha %v outside (0, 1)", o.Alpha)
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		return nil, fmt.Errorf("--confidence %v outside (0, 1)", o.Confidence)
	}
	// Checked now, whether or not the tax will need it: a wrong file is
	// named before anything runs. Standard input is read once, when used.
	if o.CipherLimit != "" && o.CipherLimit != stdfile.Dash {
		if _, err := cipherlimit.ReadFile(o.CipherLimit); err != nil {
			return nil, fmt.Errorf("--cipher-limit: %w", err)
		}
	}
	if len(o.Targets) > 0 || o.Profile != "" {
		if len(o.Sides) > 0 {
			return nil, errors.New("give result files or --profile with --target, not both")
		}
		if o.Profile == "" {
			return nil, errors.New("--target needs --profile")
		}
		if len(o.Targets) < 2 {
			return nil, errors.New("give at least two --target NAME=DIR")
		}
		if o.Runs < 1 {
			return nil, fmt.Errorf("--runs %d: need at least 1", o.Runs)
		}
		if err := (cloud.Options{Cloud: o.Bench.Cloud}).Validate(); err != nil {
			return nil, err
		}
		var ts []Target
		seen := map[string]bool{}
		for _, t := range o.Targets {
			name, dir, ok := strings.Cut(t, "=")
			if !ok || name == "" || dir == "" {
				return nil, fmt.Errorf("--target %q: want NAME=DIR", t)
			}
			if err := validSideName(name); err != nil {
				return nil, fmt.Errorf("--target %w", err)
			}
			if seen[name] {
				return nil, fmt.Errorf("--target name %q given twice", name)
			}
			seen[name] = true
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return nil, fmt.Errorf("--target %s: %s is not a directory", name, dir)
			}
			ts = append(ts, Target{Name: name, Dir: dir})
		}
		return ts, nil
	}
	if len(o.Sides) < 2 {
		return nil, errors.New("give at least two results to compare (or --profile with --target NAME=DIR twice)")
	}
	return nil, nil
}

// validSideName is the engine's alphabet of side names: a name becomes a
// file name under --save (NAME-N.json), a table cell and a chart label.
func validSideName(name string) error { return experiment.ValidSideName(name) }

// parseSide splits [NAME=]FILE[,FILE...]; the name defaults to the first
// file's base name without .json.
func parseSide(arg string) (name string, files []string) {
	name, list, ok := strings.Cut(arg, "=")
	if !ok {
		list, name = arg, ""
	}
	for _, f := range strings.Split(list, ",") {
		if f != "" {
			files = append(files, f)
		}
	}
	if name == "" && len(files) > 0 {
		name = strings.TrimSuffix(filepath.Base(files[0]), ".json")
	}
	return name, files
}

func run(ctx context.Context, env *clienv.Env, o *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	targets, err := o.validate()
	if err != nil {
		return clienv.Usage(err)
	}
	var sides []comparison.Side
	if len(targets) > 0 {
		// The workload is checked before anything runs: a typo in a job
		// file never costs a run.
		w, err := o.Bench.workload(o.Profile)
		if err != nil {
			return clienv.Usage(err)
		}
		if sides, err = runInterleaved(ctx, env, o, w, targets); err != nil {
			return clienv.Usage(err)
		}
	} else {
		var names []string
		var lists [][]string
		for _, arg := range o.Sides {
			name, files := parseSide(arg)
			if len(files) == 0 {
				return clienv.Usage(fmt.Errorf("side %q names no file", arg))
			}
			if err := validSideName(name); err != nil {
				return clienv.Usage(err)
			}
			names = append(names, name)
			lists = append(lists, files)
		}
		if sides, err = loadSides(names, lists); err != nil {
			return clienv.Usage(err)
		}
	}
	// The verdict on the profile's declared metrics; the tax on the first
	// side's fixed-size I/O phase (docs/lab.md, "The tax line").
	d := experiment.Declared(comparison.CommonProfile(sides))
	d.Shape = experiment.Declared(sides[0].FactValue("profile")).Shape
	tax := &comparison.TaxSource{Layers: comparison.StorageLayers(sides), Cipher: func() (comparison.TaxInput, error) {
		return taxCipher(ctx, env.FS, o.CipherLimit)
	}}
	res, err := comparison.ForProfile(sides, d, comparison.Options{Alpha: o.Alpha, Confidence: o.Confidence}, tax)
	if err != nil {
		return clienv.Usage(err)
	}
	if o.HTML != "" {
		fmt.Fprintf(env.Stderr, "slowpath compare: --html is deprecated: %s\n", comparereport.HTMLDeprecated)
	}
	if err := comparereport.Print(env.Stdout, res, sides, o.Format, o.HTML); err != nil {
		return clienv.Usage(err)
	}
	if fail, why, _ := res.Fails(o.FailOn); fail {
		return &clienv.ExitError{Code: clienv.ExitFindings, Err: errors.New(why)}
	}
	return nil
}

// taxCipher is the cipher's cost for the tax, asked only when the profile
// has a fixed-size I/O phase and some side has more encryption layers on
// its target than the first: other comparisons measure nothing, and their
// output stays deterministic. A cipher measured now speaks for the results
// only if they ran on this CPU: the tax says so.
func taxCipher(ctx context.Context, fs hostfs.FS, cipherFile string) (comparison.TaxInput, error) {
	in := comparison.TaxInput{Caveat: "cipher measured now on this machine: valid for results from this CPU"}
	if cipherFile != "" {
		c, _, err := experiment.ReadCipherLimit(cipherFile)
		if err != nil {
			return in, fmt.Errorf("--cipher-limit: %w", err)
		}
		in.Limit = cryptotax.Limit{BytesPerSecPerCore: c.BytesPerSecPerCore, Source: c.What}
		in.Caveat = "cipher from " + cipherFile + ": valid for results from the CPU it was measured on"
	} else {
		r, err := cipherlimit.Measure(ctx, fs, cipherlimit.Options{Duration: 300 * time.Millisecond, PerCoreOnly: true})
		if err != nil {
			return in, fmt.Errorf("encryption tax: %w", err)
		}
		in.Limit = cryptotax.Limit{BytesPerSecPerCore: r.PerCore, Source: r.What}
	}
	return in, nil
}
