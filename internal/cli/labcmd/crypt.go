package labcmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/experiment"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/lab/cryptlab"
	"github.com/slowpath/slowpath/internal/model/cryptotax"
	"github.com/slowpath/slowpath/internal/report/comparereport"
	"github.com/slowpath/slowpath/internal/report/htmlreport"
	"github.com/slowpath/slowpath/internal/workload/cipherlimit"
	"github.com/slowpath/slowpath/internal/workload/fio"
	"github.com/slowpath/slowpath/internal/workload/profile"
)

// CryptOptions are the flags of `slowpath lab crypt`.
type CryptOptions struct {
	Backing  string
	Variants []string
	Runs     int
	Runtime  time.Duration
	Profile  string
	HTML     string
	Format   string
	Emulated bool
	// IcountShift is qemu's -icount shift when the guest runs under an
	// instruction-count clock; -1: detect from the kernel command line.
	IcountShift int
}

// Profile is a workload the lab runs on every target.
type Profile struct {
	Name, Description string
	RW                string
	// BlockSize and IODepth describe the I/O the tax is computed on.
	BlockSize int
	IODepth   int
	// Bench names a `slowpath bench` profile (internal/workload/profile)
	// run on the device instead of a lab job (profile.LabJobs); BlockSize
	// and IODepth then describe its I/O-shaped phase for the tax.
	Bench string
}

// workload is the profile as the experiment engine runs it.
func (p *Profile) workload() string {
	if p.Bench != "" {
		return p.Bench
	}
	return profile.LabPrefix + p.Name
}

// Profiles are the lab's workloads: the lab jobs (fio on the raw device,
// direct I/O so the page cache does not hide the device) and two bench
// profiles.
var Profiles = append(labProfiles(),
	Profile{"db-commit", "slowpath bench's db-commit: 4 KiB direct random 50/50, then 8 KiB write+fdatasync commits with 1 and N jobs", "", 4096, 1, profile.DBCommit},
	Profile{"telemetry-ingest", "slowpath bench's telemetry-ingest: 64 KiB appends with a checkpoint fsync every 8 MiB", "", 65536, 1, profile.TelemetryIngest},
)

func labProfiles() []Profile {
	var out []Profile
	for _, p := range profile.Family(profile.LabFamily) {
		s := p.Spec()
		out = append(out, Profile{Name: strings.TrimPrefix(s.Name, profile.LabPrefix), Description: s.Description, BlockSize: s.IO.BytesPerIO, IODepth: s.IO.QueueDepth})
	}
	return out
}

func profileNames() string {
	var n []string
	for _, p := range Profiles {
		n = append(n, p.Name)
	}
	return strings.Join(n, ", ")
}

// NewCmdCrypt builds the command; runF replaces the action in tests.
func NewCmdCrypt(env *clienv.Env, runF func(context.Context, *CryptOptions) error) *cobra.Command {
	o := &CryptOptions{}
	cmd := &cobra.Command{
		Use:   "crypt",
		Short: "Run one workload on a ramdisk plain and under each dm-crypt variant; print the table and the encryption tax",
		Long: `crypt creates a brd ramdisk (or a loop device over a new file), one plain
dm-crypt mapping per variant with a random key that exists only in memory,
runs the profile on the raw device (the baseline) and on each mapping,
interleaved over --runs, removes everything, and prints the comparison:
IOPS, change against plain with its significance, p99, CPU and the CPU of
kernel threads (where dm-crypt encrypts), then the expected encryption tax
from this CPU's AES-XTS cost. Needs root, device-mapper with dm-crypt, and
brd or loop. Variants: ` + strings.Join(cryptlab.KnownVariants(), ", ") + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Runs < 1 || o.Runtime < time.Second {
				return &clienv.ExitError{Code: clienv.ExitUsage, Err: errors.New("--runs must be at least 1 and --runtime at least 1s")}
			}
			if _, err := cryptlab.ParseVariants(o.Variants); err != nil {
				return &clienv.ExitError{Code: clienv.ExitUsage, Err: err}
			}
			prof := findProfile(o.Profile)
			if prof == nil {
				return &clienv.ExitError{Code: clienv.ExitUsage, Err: fmt.Errorf("unknown profile %q (known: %s)", o.Profile, profileNames())}
			}
			if o.Backing != "" {
				// A given backing must hold the profile's files; the
				// default is sized to them (chooseBacking).
				if _, err := chooseBacking(o.Backing, prof, runtime.NumCPU(), 0); err != nil {
					return &clienv.ExitError{Code: clienv.ExitUsage, Err: err}
				}
			}
			if err := checkIcountShift(o.IcountShift); err != nil {
				return err
			}
			if o.Format != "text" && o.Format != "markdown" && o.Format != "json" {
				return &clienv.ExitError{Code: clienv.ExitUsage, Err: fmt.Errorf("--format %q: use text, markdown or json", o.Format)}
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runCrypt(cmd.Context(), env, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Backing, "backing", "", "ram:SIZE (a brd ramdisk) or file:PATH:SIZE (a loop device over a new file, removed afterwards); default: a ramdisk of 1G for the fio profiles, sized to the files of db-commit and telemetry-ingest")
	f.StringSliceVar(&o.Variants, "variants", cryptlab.DefaultVariants, "dm-crypt variants, comma-separated: "+strings.Join(cryptlab.KnownVariants(), ", "))
	f.IntVar(&o.Runs, "runs", 5, "runs per target, interleaved (a verdict needs 4 or more at alpha 0.05)")
	f.DurationVar(&o.Runtime, "runtime", 10*time.Second, "length of each run")
	f.StringVar(&o.Profile, "profile", "db-commit", "workload: "+profileNames())
	f.StringVar(&o.HTML, "html", "", "also write the comparison as a self-contained HTML page to `FILE`")
	f.StringVar(&o.Format, "format", "text", "text, markdown or json")
	f.BoolVar(&o.Emulated, "emulated", false, "label the figures as from an emulated CPU (detected for qemu TCG)")
	f.IntVar(&o.IcountShift, "icount-shift", -1, "the guest runs under qemu -icount shift=`N`: label the figures as an instruction-count model (detected from "+IcountParam+"=N on the kernel command line)")
	return cmd
}

// defaultRAM is the ramdisk of the fio profiles, which run over the whole
// device and fit any size.
const defaultRAM = 1 << 30

// profileSpace is what a bench profile writes on this machine at scale 1
// (db-commit: a 64 MiB database region and 32 MiB per commit job, 2 jobs
// per CPU), with a sentence saying so; 0 for the fio profiles.
func profileSpace(p *Profile, numCPU int) (uint64, string) {
	if p.Bench == "" {
		return 0, ""
	}
	plan, err := profile.New(p.Bench, profile.Params{Scale: 1, Runtime: time.Second, Dir: os.TempDir(), Device: "/dev/null", NumCPU: numCPU})
	if err != nil {
		return 0, ""
	}
	why := fmt.Sprintf("profile %s writes up to %d MiB on this machine", p.Name, plan.SpaceBytes>>20)
	if n := plan.Settings["commit_jobs_n"]; n != "" {
		why += fmt.Sprintf(" (a %s database region and %s for each of %s commit jobs, 2 per CPU)", plan.Settings["direct_file"], plan.Settings["wal_size"], n)
	}
	return plan.SpaceBytes, why
}

// fitSize is a backing size for need bytes, as --backing spells it: an
// eighth to spare, rounded up to 64 MiB.
func fitSize(need uint64) string {
	const step = 64 << 20
	n := (need + need/8 + step - 1) / step * step
	if n%(1<<30) == 0 {
		return fmt.Sprintf("%dG", n>>30)
	}
	return fmt.Sprintf("%dM", n>>20)
}

// chooseBacking is the lab's device: the one given, refused when the
// profile's files do not fit it, or by default a ramdisk of 1G (fio
// profiles) or sized to the profile's files, refused when it would take
// more than half of the available memory (memAvail bytes, 0 if unknown).
// Every refusal names the --backing and --profile that would do.
func chooseBacking(given string, p *Profile, numCPU int, memAvail uint64) (cryptlab.Backing, error) {
	need, why := profileSpace(p, numCPU)
	if given != "" {
		b, err := cryptlab.ParseBacking(given)
		if err != nil {
			return b, err
		}
		if need > uint64(b.Size) {
			bigger := "ram:" + fitSize(need)
			if b.Kind == "file" {
				bigger = "file:" + b.Path + ":" + fitSize(need)
			}
			return b, fmt.Errorf("%s and --backing %s has %d MiB: use --backing %s (or leave --backing out: the default ramdisk is sized to the profile), or --profile randrw-4k, whose fio job fits any backing",
				why, given, b.Size>>20, bigger)
		}
		return b, nil
	}
	size := fmt.Sprint(defaultRAM>>30, "G")
	if need > 0 {
		size = fitSize(need)
	}
	b, err := cryptlab.ParseBacking("ram:" + size)
	if err != nil {
		return b, err
	}
	if memAvail > 0 && uint64(b.Size) > memAvail/2 {
		what := fmt.Sprintf("profile %s", p.Name)
		if why != "" {
			what = why
		}
		return b, fmt.Errorf("%s: a ramdisk of %s would take more than half of the %d MiB of memory available: use --backing file:PATH:%s (a file on a disk with that much free space), or --profile randrw-4k with a smaller --backing ram:SIZE",
			what, size, memAvail>>20, size)
	}
	return b, nil
}

// memAvailable is MemAvailable from /proc/meminfo in bytes, 0 if unknown.
func memAvailable(fs hostfs.FS) uint64 {
	pfs, err := procfs.NewFS(fs.Proc)
	if err != nil {
		return 0
	}
	mi, err := pfs.Meminfo()
	if err != nil || mi.MemAvailableBytes == nil {
		return 0
	}
	return *mi.MemAvailableBytes
}

func findProfile(name string) *Profile {
	i := slices.IndexFunc(Profiles, func(p Profile) bool { return p.Name == name })
	if i < 0 {
		return nil
	}
	return &Profiles[i]
}

func runCrypt(ctx context.Context, env *clienv.Env, o *CryptOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	// SIGINT/SIGTERM cancel the runs; the lab is torn down below before the
	// command returns.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	variants, _ := cryptlab.ParseVariants(o.Variants)
	prof := findProfile(o.Profile)
	backing, err := chooseBacking(o.Backing, prof, runtime.NumCPU(), memAvailable(env.FS))
	if err != nil {
		return &clienv.ExitError{Code: clienv.ExitUsage, Err: err}
	}
	figures := DetectFigures(env.FS, o.Emulated, o.IcountShift)
	logf := func(format string, args ...any) { fmt.Fprintf(env.Stderr, format+"\n", args...) }
	if _, err := exec.LookPath("fio"); err != nil {
		return &clienv.ExitError{Code: clienv.ExitUsage, Err: fio.ErrNotFound}
	}

	limit, err := cipherlimit.Measure(ctx, env.FS, cipherlimit.Options{Duration: 300 * time.Millisecond})
	if err != nil {
		return &clienv.ExitError{Code: clienv.ExitUsage, Err: fmt.Errorf("crypto-limit: %w", err)}
	}
	lab, err := cryptlab.Setup(ctx, cryptlab.Options{Backing: backing, Variants: variants, Sys: env.FS.Sys, Proc: env.FS.Proc, Log: logf})
	if err != nil {
		return &clienv.ExitError{Code: clienv.ExitUsage, Err: err}
	}
	runErr := runMatrix(ctx, env, o, prof, lab, limit, figures, logf)
	closeErr := lab.Close()
	if err := errors.Join(runErr, closeErr); err != nil {
		if ctx.Err() != nil && closeErr == nil {
			return &clienv.ExitError{Code: clienv.ExitUsage, Err: fmt.Errorf("interrupted; lab %s torn down", lab.ID)}
		}
		return &clienv.ExitError{Code: clienv.ExitUsage, Err: err}
	}
	return nil
}

func runMatrix(ctx context.Context, env *clienv.Env, o *CryptOptions, prof *Profile, lab *cryptlab.Lab, limit *cipherlimit.Result, figures Figures, logf func(string, ...any)) error {
	if err := lab.Prefill(); err != nil {
		return err
	}
	// Every variant is a side whose target is its mapping; the plain side
	// is the backing device beneath them.
	sides := []experiment.Side{{Name: "plain", Target: experiment.Target{Device: lab.BackingPath, Created: true}}}
	layers := []int{0}
	var notRun []comparison.NotRun
	for _, m := range lab.Mappings {
		if m.Unsupported != "" {
			notRun = append(notRun, comparison.NotRun{Name: m.Variant.Name, Reason: m.Unsupported})
			continue
		}
		n := 1
		if m.Variant.Stacked {
			n = 2
		}
		sides = append(sides, experiment.Side{Name: m.Variant.Name, Target: experiment.Target{Device: m.Path, Created: true}})
		layers = append(layers, n)
	}
	for i := range sides {
		sides[i].Facts = []comparison.Fact{{Key: "encryption layers", Value: fmt.Sprint(layers[i])}}
	}
	if len(sides) < 2 {
		_, err := cryptResult(cryptSetup{prof: prof, notRun: notRun, limit: limit}, nil, nil)
		return err
	}
	// The cipher was measured once before the lab was set up: no run
	// measures it again.
	cipher := limit.Cipher("lab crypt")
	out, err := experiment.Run(ctx, experiment.Experiment{
		Workload: experiment.Workload{Profile: prof.workload(), Runtime: o.Runtime},
		Sides:    sides,
		Runs:     o.Runs,
		Env: experiment.Env{FS: env.FS, Version: env.Version, Cloud: cloud.Options{Cloud: "none"},
			Cipher: cipher, CipherEmulated: figures.Kind != "measured"},
		Progress: func(r experiment.RunInfo) { logf("%s", r) },
	})
	if err != nil {
		return err
	}
	var cs []comparison.Side
	for i, so := range out.Sides {
		s := so.Comparison
		if prof.Bench == "" {
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
		s.Sources = []string{sides[i].Target.Device}
		cs = append(cs, s)
	}
	r, err := cryptResult(cryptSetup{prof: prof, backing: lab.Backing.String(), backingPath: lab.BackingPath, cryptVersion: lab.CryptVersion.String(),
		runs: o.Runs, runtime: o.Runtime, figures: figures, notRun: notRun, limit: limit}, cs, layers)
	if err != nil {
		return err
	}
	if o.HTML != "" {
		if err := htmlreport.WriteCompareFile(o.HTML, r, cs); err != nil {
			return err
		}
	}
	return comparereport.Write(env.Stdout, r, o.Format)
}

// cryptSetup is what lab crypt knows beyond its sides' runs.
type cryptSetup struct {
	prof                               *Profile
	backing, backingPath, cryptVersion string
	runs                               int
	runtime                            time.Duration
	figures                            Figures
	notRun                             []comparison.NotRun
	limit                              *cipherlimit.Result
}

// cryptResult is lab crypt's one result: the comparison of the sides (plain
// first; layers are each side's encryption layers), with the setup, what
// the figures are, the variants the kernel could not run and the expected
// encryption tax, for every renderer.
func cryptResult(c cryptSetup, sides []comparison.Side, layers []int) (*comparison.Result, error) {
	if len(sides) < 2 {
		var why []string
		for _, n := range c.notRun {
			why = append(why, n.Name+": "+n.Reason)
		}
		return nil, fmt.Errorf("no variant could run on this kernel (%s): choose others with --variants", strings.Join(why, "; "))
	}
	prof := c.prof
	tax := &comparison.TaxSource{Layers: layers, Cipher: func() (comparison.TaxInput, error) {
		what := c.limit.What
		if c.limit.Kernel != nil && !strings.Contains(what, c.limit.Kernel.Driver) {
			// The user-space bound stands in for the kernel's driver, which
			// the tax is still about: name it.
			what += "; the kernel's xts(aes) driver is " + c.limit.Kernel.Driver
		}
		return comparison.TaxInput{Limit: cryptotax.Limit{BytesPerSecPerCore: c.limit.PerCore, Source: what}, Cores: c.limit.Cores}, nil
	}}
	r, err := comparison.ForProfile(sides, declared(prof), comparison.Options{}, tax)
	if err != nil {
		return nil, err
	}
	r.Title = "slowpath lab crypt"
	r.Setup = []comparison.Fact{
		{Key: "profile", Value: fmt.Sprintf("%s (%s)", prof.Name, prof.Description)},
		{Key: "backing", Value: fmt.Sprintf("%s (%s)", c.backing, c.backingPath)},
		{Key: "dm-crypt target", Value: c.cryptVersion},
		{Key: "runs", Value: fmt.Sprintf("%d × %v per side, interleaved", c.runs, c.runtime)},
		{Key: "crypto CPU", Value: "CPU of kernel threads (dm-crypt encrypts in kcryptd workers and submits writes from dmcrypt_write)"},
	}
	r.Figures, r.FiguresNote = c.figures.Kind, c.figures.Label()
	if c.figures.Kind == "icount-model" {
		r.IcountShift = &c.figures.Shift
	}
	r.NotRun = c.notRun
	return r, nil
}

// declared is what the verdict and the tax are on: a bench profile's own
// declaration; for a lab job, the IOPS of its table (cryptlab.JobRun: at a
// fixed queue depth the same information as its mean latency, Little's
// law) and its one I/O shape.
func declared(prof *Profile) comparison.Declared {
	if prof.Bench == "" {
		return comparison.Declared{Primary: []string{"IOPS"},
			Shape: &comparison.TaxShape{IOPS: []string{"IOPS"}, CPU: "CPU", BytesPerIO: float64(prof.BlockSize), QueueDepth: prof.IODepth}}
	}
	d := experiment.Declared(prof.Bench)
	if d.Shape == nil {
		d.NoShape = fmt.Sprintf("profile %s has no fixed-size I/O phase to measure (the fio profiles and db-commit have one)", prof.Name)
	}
	return d
}
