package cryptbench

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"

	"github.com/slowpath/slowpath/internal/collect/host"
	"github.com/slowpath/slowpath/internal/hostfs"
)

// IcountParam is the guest kernel command-line parameter that says the
// guest runs under qemu's instruction-count clock (-icount shift=N,
// sleep=off) and gives N. The VM lab (test/vm) sets it; the kernel ignores
// it (an unknown module parameter) and leaves it in /proc/cmdline.
const IcountParam = "slowpath.icount_shift"

// IcountShift returns N from IcountParam=N in /proc/cmdline, or -1 when
// the parameter is absent or not a shift qemu accepts (0-10).
func IcountShift(fs hostfs.FS) int {
	pfs, err := procfs.NewFS(fs.Proc)
	if err != nil {
		return -1
	}
	args, err := pfs.CmdLine()
	if err != nil {
		return -1
	}
	for _, f := range args {
		if v, ok := strings.CutPrefix(f, IcountParam+"="); ok {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 && n <= 10 {
				return n
			}
		}
	}
	return -1
}

// Figures says what the lab's figures are, for the label over them and the
// "figures" field of the JSON.
type Figures struct {
	// Kind is "measured", "emulated" (qemu TCG: functional evidence) or
	// "icount-model" (qemu TCG with an instruction-count clock).
	Kind string
	// Shift is qemu's -icount shift for an icount-model: one guest
	// instruction is 2^Shift ns of guest time.
	Shift int
}

// DetectFigures decides what this run's figures are: an icount shift
// (from --icount-shift or IcountParam) makes them a model, an emulated CPU
// (--emulated or detected) functional evidence, anything else measured.
func DetectFigures(fs hostfs.FS, emulated bool, icountShift int) Figures {
	if icountShift < 0 {
		icountShift = IcountShift(fs)
	}
	switch {
	case icountShift >= 0:
		return Figures{Kind: "icount-model", Shift: icountShift}
	case emulated || host.Emulated(fs):
		return Figures{Kind: "emulated"}
	}
	return Figures{Kind: "measured"}
}

// Label is the line printed over the figures, "" for measured ones.
func (f Figures) Label() string {
	switch f.Kind {
	case "icount-model":
		return fmt.Sprintf("instruction-count model (qemu -icount shift=%d: guest time is %d ns per guest instruction), not a measurement: "+
			"the figures count emulated instructions; they repeat (IOPS within 0.05%%) on the same kernel, tools and qemu and say nothing about how fast any CPU or disk is", f.Shift, 1<<f.Shift)
	case "emulated":
		return host.EmulatedLabel
	}
	return ""
}
