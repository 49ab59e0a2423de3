package labcmd

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/lab/cryptbench"
	"github.com/slowpath/slowpath/internal/lab/cryptlab"
	"github.com/slowpath/slowpath/internal/report/comparereport"
	"github.com/slowpath/slowpath/internal/workload/profile"
)

// CryptOptions are the flags of `slowpath lab crypt`.
type CryptOptions struct {
	Backing  string
	Variants []string
	Runs     int
	Runtime  time.Duration
	Profile  string
	Scale    float64
	FS       string
	HTML     string
	Format   string
	Emulated bool
	// Neighbour runs a thread sleeping 1 ms beside every run; its wake-up
	// lateness p99 is a guard.
	Neighbour bool
	// IcountShift is qemu's -icount shift when the guest runs under an
	// instruction-count clock; -1: detect from the kernel command line.
	IcountShift int

	// What validate resolved: the profile (its argument read) and the
	// filesystem (nil: none).
	prof *cryptbench.Profile
	fs   *cryptlab.Filesystem
}

// NewCmdCrypt builds the command; runF replaces the action in tests.
func NewCmdCrypt(env *clienv.Env, runF func(context.Context, *CryptOptions) error) *cobra.Command {
	o := &CryptOptions{}
	cmd := &cobra.Command{
		Use:   "crypt",
		Short: "Run one workload on a ramdisk plain and under each dm-crypt variant; print the table and the encryption tax",
		Long: `crypt creates a brd ramdisk (or a loop device over a new file), one plain
dm-crypt mapping per variant with a random key that exists only in memory,
runs the profile on the plain device (the baseline) and on each mapping,
interleaved over --runs, removes everything, and prints the comparison:
IOPS, change against plain with its significance, p99, CPU and the CPU of
kernel threads (where dm-crypt encrypts), then the expected encryption tax
from this CPU's AES-XTS cost. Needs root, device-mapper with dm-crypt, and
brd or loop. Variants: ` + strings.Join(cryptlab.KnownVariants(), ", ") + `.

A profile that needs files (search-index, fio:FILE, replay:DIR: your own
service, captured with 'slowpath capture') runs on a filesystem (--fs, ext4
by default) that the lab makes with the same options on the plain device
and on each mapping before every run, mounts in a directory of its own and
unmounts after the run; the others run on the raw devices.`,
		Args: cobra.NoArgs,
		RunE: clienv.Action(o, func([]string) error { return o.validate() }, runF,
			func(ctx context.Context) error { return runCrypt(ctx, env, o) }),
	}
	f := cmd.Flags()
	f.StringVar(&o.Backing, "backing", "", "ram:SIZE (a brd ramdisk) or file:PATH:SIZE (a loop device over a new file, removed afterwards); default: a ramdisk of 1G for the lab jobs, sized to the files of a bench profile (and its filesystem's metadata)")
	f.StringSliceVar(&o.Variants, "variants", cryptlab.DefaultVariants, "dm-crypt variants, comma-separated: "+strings.Join(cryptlab.KnownVariants(), ", "))
	f.IntVar(&o.Runs, "runs", 5, "runs per target, interleaved (a verdict needs 4 or more at alpha 0.05)")
	f.DurationVar(&o.Runtime, "runtime", 10*time.Second, "length of each run")
	f.StringVar(&o.Profile, "profile", "db-commit", "workload: "+cryptbench.Names())
	f.Float64Var(&o.Scale, "scale", 1, "size of a bench profile's files and jobs (search-index, db-commit, telemetry-ingest), as bench --scale; the default ramdisk follows it")
	f.StringVar(&o.FS, "fs", "", "filesystem made anew on every side before each run, the profile running on its files: "+strings.Join(cryptlab.Filesystems, ", ")+" or none (default: none for a profile that runs on the raw device, ext4 for one that needs files)")
	f.StringVar(&o.HTML, "html", "", "deprecated, use --format html: also write the HTML page to `FILE` (- prints it instead of --format)")
	cryptFormats.AddFlag(f, &o.Format)
	f.BoolVar(&o.Neighbour, "neighbour", false, "run a latency-sensitive co-runner beside every run (a thread that sleeps 1 ms) and guard its wake-up lateness p99: what a variant costs other tenants")
	f.BoolVar(&o.Emulated, "emulated", false, "label the figures as from an emulated CPU (detected for qemu TCG)")
	f.IntVar(&o.IcountShift, "icount-shift", -1, "the guest runs under qemu -icount shift=`N`: label the figures as an instruction-count model (detected from "+cryptbench.IcountParam+"=N on the kernel command line)")
	return cmd
}

// cryptFormats are lab crypt's --format values: what
// comparereport.WritePage renders, as compare; its usage line has no
// "output format:" opening.
var cryptFormats = clienv.Formats{Names: comparereport.PageFormats, Default: "text", Also: []string{"md"},
	Usage: "text, markdown, json or html (a self-contained page with charts)"}

func runCrypt(ctx context.Context, env *clienv.Env, o *CryptOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	// SIGINT/SIGTERM cancel the runs; the lab is torn down before Run
	// returns.
	ctx, stop := clienv.Interruptible(ctx)
	defer stop()
	variants, _ := cryptlab.ParseVariants(o.Variants)
	backing, err := cryptbench.ChooseBacking(o.Backing, o.prof, cryptbench.Sizing{NumCPU: runtime.NumCPU(), MemAvailable: cryptbench.MemAvailable(env.FS), Filesystem: o.fs, Scale: o.Scale})
	if err != nil {
		return &clienv.ExitError{Code: clienv.ExitUsage, Err: err}
	}
	r, sides, err := cryptbench.Run(ctx, cryptbench.Options{FS: env.FS, Version: env.Version, Profile: o.prof, Filesystem: o.fs, Backing: backing, Variants: variants,
		Runs: o.Runs, Runtime: o.Runtime, Scale: o.Scale, Neighbour: o.Neighbour, Figures: cryptbench.DetectFigures(env.FS, o.Emulated, o.IcountShift),
		Log: func(format string, args ...any) { fmt.Fprintf(env.Stderr, format+"\n", args...) }})
	if err == nil {
		if o.HTML != "" {
			fmt.Fprintf(env.Stderr, "slowpath lab crypt: --html is deprecated: %s\n", comparereport.HTMLDeprecated)
		}
		err = comparereport.Print(env.Stdout, r, sides, o.Format, o.HTML)
	}
	if err != nil {
		return &clienv.ExitError{Code: clienv.ExitUsage, Err: err}
	}
	return nil
}

// validate checks the flags before anything runs.
func (o *CryptOptions) validate() error {
	if o.Runs < 1 || o.Runtime < time.Second {
		return errors.New("--runs must be at least 1 and --runtime at least 1s")
	}
	if _, err := cryptlab.ParseVariants(o.Variants); err != nil {
		return err
	}
	if err := profile.ParseScale(o.Scale); err != nil {
		return err
	}
	prof, err := cryptbench.Resolve(o.Profile)
	if err != nil {
		return err
	}
	if o.fs, err = cryptbench.ChooseFilesystem(o.FS, prof); err != nil {
		return err
	}
	o.prof = prof
	if o.Backing != "" {
		// A given backing must hold the profile's files; the default is
		// sized to them (cryptbench.ChooseBacking).
		if _, err := cryptbench.ChooseBacking(o.Backing, prof, cryptbench.Sizing{NumCPU: runtime.NumCPU(), Filesystem: o.fs, Scale: o.Scale}); err != nil {
			return err
		}
	}
	if err := checkIcountShift(o.IcountShift); err != nil {
		return err
	}
	return cryptFormats.Check(o.Format)
}
