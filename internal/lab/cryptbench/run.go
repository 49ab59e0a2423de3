// Package cryptbench is `slowpath lab crypt`: one workload run on a
// throwaway device (cryptlab) plain and under each dm-crypt variant,
// interleaved by the experiment engine, judged by the one verdict step
// (comparison.ForProfile) with the expected encryption tax from this CPU's
// cipher. Its catalogue (Profiles) is read from the profile registry; the
// command (internal/cli/labcmd) only wires flags to Run and renders.
package cryptbench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/collect/cipherlimit"
	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/experiment"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/lab/cryptlab"
	"github.com/slowpath/slowpath/internal/model/cryptotax"
	"github.com/slowpath/slowpath/internal/workload/fio"
	"github.com/slowpath/slowpath/internal/workload/neighbour"
)

// Options are one lab crypt run's.
type Options struct {
	FS       hostfs.FS
	Version  string // slowpath's, recorded in each run's result
	Profile  *Profile
	Backing  cryptlab.Backing
	Variants []cryptlab.Variant
	Runs     int
	Runtime  time.Duration
	// Scale is the bench profiles' size (bench --scale); 0 is 1.
	Scale   float64
	Figures Figures
	// Filesystem, when set, is made on every side before each run and the
	// profile runs on its files (ChooseFilesystem); nil: on the raw device.
	Filesystem *cryptlab.Filesystem
	// Neighbour runs the co-runner (internal/workload/neighbour) beside
	// every run; its lateness p99 becomes a guard row.
	Neighbour bool
	// Log gets the lab's progress lines (setup, each run, teardown).
	Log func(format string, args ...any)
}

// Run measures the cipher, sets the lab up, runs the matrix and tears the
// lab down whatever happened; it returns the comparison and its sides. A
// cancelled ctx ends the runs, and the lab is still torn down.
func Run(ctx context.Context, o Options) (*comparison.Result, []comparison.Side, error) {
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	if _, err := exec.LookPath("fio"); err != nil {
		return nil, nil, fio.ErrNotFound
	}
	limit, err := cipherlimit.Measure(ctx, o.FS, cipherlimit.Options{Duration: 300 * time.Millisecond})
	if err != nil {
		return nil, nil, fmt.Errorf("crypto-limit: %w", err)
	}
	lab, err := cryptlab.Setup(ctx, cryptlab.Options{Backing: o.Backing, Variants: o.Variants, PlainMapping: o.Filesystem != nil,
		Sys: o.FS.Sys, Proc: o.FS.Proc, Log: o.Log})
	if err != nil {
		return nil, nil, err
	}
	r, sides, runErr := matrix(ctx, o, lab, limit)
	closeErr := lab.Close()
	if err := errors.Join(runErr, closeErr); err != nil {
		if ctx.Err() != nil && closeErr == nil {
			return nil, nil, fmt.Errorf("interrupted; lab %s torn down", lab.ID)
		}
		return nil, nil, err
	}
	return r, sides, nil
}

// matrix runs the profile on every side of a set-up lab and returns the
// comparison.
func matrix(ctx context.Context, o Options, lab *cryptlab.Lab, limit *cipherlimit.Result) (*comparison.Result, []comparison.Side, error) {
	prof, figures := o.Profile, o.Figures
	if err := lab.Prefill(); err != nil {
		return nil, nil, err
	}
	// Every variant is a side whose target is its mapping; the plain side
	// is the backing device beneath them (on a filesystem, a dm-linear
	// mapping over it: cryptlab.Options.PlainMapping).
	sides := []experiment.Side{{Name: "plain", Target: experiment.Target{Device: lab.PlainPath, Created: true}}}
	devs, layers := []string{lab.PlainPath}, []int{0}
	var notRun []comparison.NotRun
	for _, m := range lab.Mappings {
		if m.Unsupported != "" {
			notRun = append(notRun, comparison.NotRun{Name: m.Variant.Name, Reason: m.Unsupported})
			continue
		}
		n := 1
		switch {
		case m.Variant.Stacked:
			n = 2
		case !m.Variant.Encrypts():
			n = 0 // a dm-crypt layer that encrypts nothing: no tax expected
		}
		sides = append(sides, experiment.Side{Name: m.Variant.Name, Target: experiment.Target{Device: m.Path, Created: true}})
		devs, layers = append(devs, m.Path), append(layers, n)
	}
	for i := range sides {
		sides[i].Facts = []comparison.Fact{{Key: "encryption layers", Value: fmt.Sprint(layers[i])}}
		if fs := o.Filesystem; fs != nil {
			dev, name := devs[i], sides[i].Name
			sides[i].Target = experiment.Target{Dir: lab.MountDir(name)}
			sides[i].Setup = func(ctx context.Context) (func() error, error) { return lab.Mount(ctx, dev, *fs, name) }
		}
	}
	if len(sides) < 2 {
		_, err := Result(Setup{Profile: prof, NotRun: notRun, Limit: limit}, nil, nil)
		return nil, nil, err
	}
	// The cipher was measured once before the lab was set up: no run
	// measures it again.
	cipher := limit.Cipher("lab crypt")
	co := newCoRunner(o.Neighbour)
	defer co.stop()
	out, err := experiment.Run(ctx, experiment.Experiment{
		Workload: experiment.Workload{Profile: prof.Workload, JobFile: prof.Arg.JobFile, Capture: prof.Arg.Capture, Runtime: o.Runtime, Scale: o.Scale},
		Sides:    sides,
		Runs:     o.Runs,
		Env: experiment.Env{FS: o.FS, Version: o.Version, Cloud: cloud.Options{Cloud: "none"},
			Cipher: cipher, CipherEmulated: figures.Kind != "measured"},
		Progress: func(r experiment.RunInfo) {
			o.Log("%s", r)
			co.start(r.Name())
		},
		Result: func(r experiment.RunInfo, _ *benchresult.Result) error {
			co.stop()
			return nil
		},
	})
	if err != nil {
		return nil, nil, err
	}
	var cs []comparison.Side
	for i, so := range out.Sides {
		s := so.Comparison
		if prof.IO != nil {
			// A lab job's table: IOPS, p99s and CPU (cryptlab.JobRun),
			// not every figure of the bench result.
			s.Runs = nil
			for n, res := range so.Results {
				s.Runs = append(s.Runs, cryptlab.JobRun(fmt.Sprintf("%s-%d", so.Name, n+1), res))
			}
			s.Facts = sides[i].Facts
		} else {
			for n, res := range so.Results {
				cryptlab.AddCPU(&s.Runs[n], res)
			}
		}
		for n := range s.Runs {
			co.addTo(&s.Runs[n], experiment.RunInfo{Side: so.Name, N: n + 1}.Name())
		}
		s.Sources = []string{devs[i]}
		cs = append(cs, s)
	}
	r, err := Result(Setup{Profile: prof, Backing: lab.Backing.String(), BackingPath: lab.BackingPath, CryptVersion: lab.CryptVersion.String(),
		Runs: o.Runs, Runtime: o.Runtime, Figures: figures, NotRun: notRun, Limit: limit, Neighbour: o.Neighbour, Filesystem: o.Filesystem, Scale: o.Scale}, cs, layers)
	if err != nil {
		return nil, nil, err
	}
	return r, cs, nil
}

// Setup is what lab crypt knows beyond its sides' runs.
type Setup struct {
	Profile                            *Profile
	Backing, BackingPath, CryptVersion string
	Runs                               int
	Runtime                            time.Duration
	Figures                            Figures
	NotRun                             []comparison.NotRun
	Limit                              *cipherlimit.Result
	Neighbour                          bool // the runs have NeighbourP99 rows
	Filesystem                         *cryptlab.Filesystem
	Scale                              float64 // 0 or 1: the profile's own size
}

// Result is lab crypt's one result: the comparison of the sides (plain
// first; layers are each side's encryption layers), with the setup, what
// the figures are, the variants the kernel could not run and the expected
// encryption tax, for every renderer.
func Result(c Setup, sides []comparison.Side, layers []int) (*comparison.Result, error) {
	if len(sides) < 2 {
		var why []string
		for _, n := range c.NotRun {
			why = append(why, n.Name+": "+n.Reason)
		}
		return nil, fmt.Errorf("no variant could run on this kernel (%s): choose others with --variants", strings.Join(why, "; "))
	}
	prof := c.Profile
	d := declared(prof)
	if c.Neighbour {
		d.Guards = append(d.Guards, NeighbourP99)
	}
	tax := &comparison.TaxSource{Layers: layers, Cipher: func() (comparison.TaxInput, error) {
		what := c.Limit.What
		if c.Limit.Kernel != nil && !strings.Contains(what, c.Limit.Kernel.Driver) {
			// The user-space bound stands in for the kernel's driver, which
			// the tax is still about: name it.
			what += "; the kernel's xts(aes) driver is " + c.Limit.Kernel.Driver
		}
		return comparison.TaxInput{Limit: cryptotax.Limit{BytesPerSecPerCore: c.Limit.PerCore, Source: what}, Cores: c.Limit.Cores}, nil
	}}
	r, err := comparison.ForProfile(sides, d, comparison.Options{}, tax)
	if err != nil {
		return nil, err
	}
	r.Title = "slowpath lab crypt"
	r.Setup = []comparison.Fact{
		{Key: "profile", Value: fmt.Sprintf("%s (%s)", prof.Name, prof.Description)},
		{Key: "backing", Value: fmt.Sprintf("%s (%s)", c.Backing, c.BackingPath)},
		{Key: "dm-crypt target", Value: c.CryptVersion},
		{Key: "runs", Value: fmt.Sprintf("%d × %v per side, interleaved", c.Runs, c.Runtime)},
		{Key: "crypto CPU", Value: "CPU of kernel threads (dm-crypt encrypts in kcryptd workers and submits writes from dmcrypt_write)"},
	}
	if c.Scale != 0 && c.Scale != 1 {
		r.Setup[0].Value += fmt.Sprintf(", at --scale %g", c.Scale)
	}
	if c.Filesystem != nil {
		r.Setup = append(r.Setup, comparison.Fact{Key: "filesystem", Value: c.Filesystem.String() + " on each side; unmounted after it, which drops its page cache"},
			comparison.Fact{Key: "plain side", Value: "a dm-linear mapping over the backing (the device-mapper layer without dm-crypt): the backing itself cannot hold a filesystem while the crypt mappings hold it"})
	}
	if c.Neighbour {
		r.Setup = append(r.Setup, comparison.Fact{Key: "neighbour", Value: fmt.Sprintf("a thread sleeping %v beside every run; %s (how late it woke) is a guard: what the variant costs other tenants", neighbour.Period, NeighbourP99)})
	}
	r.Figures, r.FiguresNote = c.Figures.Kind, c.Figures.Label()
	if c.Figures.Kind == "icount-model" {
		r.IcountShift = &c.Figures.Shift
	}
	r.NotRun = c.NotRun
	if slices.ContainsFunc(sides, func(s comparison.Side) bool { return s.Name == "null_cipher" }) && len(r.Primary) > 0 {
		r.Split = comparison.Split(r, r.Primary[0], SplitSteps)
		if r.Split != nil {
			r.Split.Note = "null_cipher is dm-crypt copying without encrypting (ecb(cipher_null)), so plain → null_cipher is dm-crypt's queueing and null_cipher → default the cipher"
		}
	}
	return r, nil
}

// SplitSteps are the parts of the tax lab crypt measures when its variants
// include null_cipher: each the change between two sides that differ in
// one thing. A step whose sides did not both run is left out.
var SplitSteps = []comparison.StepSpec{
	{Part: "queueing", From: "plain", To: "null_cipher"},
	{Part: "cipher", From: "null_cipher", To: "default"},
	{Part: "bypass, with AES", From: "default", To: "no_workqueue"},
	{Part: "bypass of reads", From: "default", To: "no_read_workqueue"},
	{Part: "bypass of writes", From: "default", To: "no_write_workqueue"},
	{Part: "bypass, no cipher", From: "null_cipher", To: "null_cipher_no_workqueue"},
}

// declared is what the verdict and the tax are on: a bench profile's own
// declaration; for a lab job, the IOPS of its table (cryptlab.JobRun: at a
// fixed queue depth the same information as its mean latency, Little's
// law) and its one I/O shape.
func declared(prof *Profile) comparison.Declared {
	if prof.IO != nil {
		return comparison.Declared{Primary: []string{"IOPS"},
			Shape: &comparison.TaxShape{IOPS: []string{"IOPS"}, CPU: "CPU", BytesPerIO: float64(prof.IO.BytesPerIO), QueueDepth: prof.IO.QueueDepth}}
	}
	d := experiment.Declared(prof.Workload)
	if d.Shape == nil {
		d.NoShape = fmt.Sprintf("profile %s has no fixed-size I/O phase to measure (the fio profiles and db-commit have one)", prof.Name)
	}
	return d
}
