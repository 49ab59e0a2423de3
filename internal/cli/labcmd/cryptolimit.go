package labcmd

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/collect/cipherlimit"
	"github.com/slowpath/slowpath/internal/lab/cryptbench"
	"github.com/slowpath/slowpath/internal/report/cipherreport"
)

// CryptoLimitOptions are the flags of `slowpath lab crypto-limit`.
type CryptoLimitOptions struct {
	Limit       cipherlimit.Options
	Format      string
	Emulated    bool
	IcountShift int // -1: detect (see CryptOptions)
}

// NewCmdCryptoLimit builds the command; runF replaces the action in tests.
func NewCmdCryptoLimit(env *clienv.Env, runF func(context.Context, *CryptoLimitOptions) error) *cobra.Command {
	o := &CryptoLimitOptions{}
	cmd := &cobra.Command{
		Use:   "crypto-limit",
		Short: "Measure what AES-XTS (dm-crypt's default cipher) costs on this CPU, per core and on all cores",
		Long: `crypto-limit encrypts sectors with AES-XTS as dm-crypt's aes-xts-plain64 does, on
one core and on every core at once. It uses the kernel's own skcipher through
AF_ALG where the kernel has it (the implementation dm-crypt uses, named from
/proc/crypto). Where it does not, it measures a user-space bound (Go's AES,
AES-NI where the CPU has it) and says so. The figure feeds the encryption tax
that 'lab crypt' prints.`,
		Args: cobra.NoArgs,
		RunE: clienv.Action(o, func([]string) error {
			if err := checkIcountShift(o.IcountShift); err != nil {
				return err
			}
			return limitFormats.Check(o.Format)
		}, runF, func(ctx context.Context) error { return runCryptoLimit(ctx, env, o) }),
	}
	f := cmd.Flags()
	f.IntVar(&o.Limit.KeyBits, "key-bits", 512, "XTS key size in bits: 512 (AES-256, cryptsetup's default) or 256 (AES-128)")
	f.IntVar(&o.Limit.SectorSize, "sector-size", 512, "bytes per XTS data unit, as dm-crypt's sector_size: 512 or 4096")
	f.DurationVar(&o.Limit.Duration, "duration", 500*time.Millisecond, "how long each measurement runs")
	f.StringVar(&o.Limit.Method, "method", "", "af_alg or user-space (default: af_alg where the kernel has it)")
	limitFormats.AddFlag(f, &o.Format)
	f.BoolVar(&o.Emulated, "emulated", false, "label the figures as from an emulated CPU (detected for qemu TCG)")
	f.IntVar(&o.IcountShift, "icount-shift", -1, "the guest runs under qemu -icount shift=`N`: label the figures as an instruction-count model (detected from "+cryptbench.IcountParam+"=N on the kernel command line)")
	return cmd
}

// limitFormats are lab crypto-limit's --format values; its usage line has
// no "output format:" opening.
var limitFormats = clienv.Formats{Names: []string{"text", "json", "markdown"}, Default: "text",
	Usage: "text, json or markdown (the figures as a table, for a ticket)"}

func runCryptoLimit(ctx context.Context, env *clienv.Env, o *CryptoLimitOptions) error {
	figures := cryptbench.DetectFigures(env.FS, o.Emulated, o.IcountShift)
	r, err := cipherlimit.Measure(ctx, env.FS, o.Limit)
	if err != nil {
		return err
	}
	if o.Format == "json" {
		return (&cipherlimit.File{Result: r, Emulated: figures.Kind != "measured", Figures: figures.Kind, FiguresNote: figures.Label()}).Write(env.Stdout)
	}
	if o.Format == "markdown" {
		return cipherreport.WriteMarkdown(env.Stdout, r, figures)
	}
	return cipherreport.WriteText(env.Stdout, r, figures)
}
