package storagecheck

import (
	"fmt"
	"strings"

	"github.com/slowpath/slowpath/internal/check"
)

// dmcrypt.same-cpu-crypt: on kernels before 5.9 the workqueue bypass flags
// do not exist; same_cpu_crypt (Linux 4.0) at least keeps encryption on the
// CPU that submitted the I/O instead of spreading it over all CPUs through
// an unbound workqueue. On a ramdisk of a PostgreSQL server, fio 4 KiB
// read/write gave 171k IOPS plain, 26.6k through dm-crypt and 45.3k through
// dm-crypt with same_cpu_crypt
// (https://blog.gonchik.com/2021/03/yet-another-compliance-request-can.html).
// On 5.9+ dmcrypt.workqueue gives the larger fix.
func init() {
	check.Register(check.Check{
		ID:       "dmcrypt.same-cpu-crypt",
		Title:    "dm-crypt on fast storage on a pre-5.9 kernel without same_cpu_crypt",
		Severity: check.Info,
		Run:      runSameCPU,
		Series:   addedAwaitSeries,
	})
}

func runSameCPU(in *check.Input) []check.Finding {
	uses, _ := cryptUses(in.Storage)
	if len(uses) == 0 {
		return nil
	}
	rel := kernelRelease(in)
	newer, known := kernelAtLeast(rel, 5, 9)
	var out []check.Finding
	for _, u := range uses {
		c := u.layer.Crypt
		switch {
		case !known:
			out = append(out, check.Finding{Status: check.Unknown, Subject: u.Subject(),
				Summary: fmt.Sprintf("kernel release %q could not be read", rel)})
			continue
		case newer:
			// dmcrypt.workqueue covers 5.9+; no_*_workqueue makes same_cpu_crypt moot.
			continue
		case c.SameCPUCrypt:
			out = append(out, check.Finding{Status: check.Pass, Subject: u.Subject(), Summary: "same_cpu_crypt set"})
			continue
		}
		sp := storageSpeed(u.below)
		if !sp.fast {
			continue
		}
		devName := "the device below"
		if sp.dev != nil {
			devName = sysName(sp.dev)
		}
		fix := cryptFix(u.layer, "same_cpu_crypt")
		rem, _ := cryptRemedy(in, u.layer, []string{"same_cpu_crypt"}, sameCPURemediation(u.layer.Name, fix.Crypt))
		out = append(out, check.Finding{
			Subject: u.Subject(),
			Summary: fmt.Sprintf("dm-crypt %s on fast storage (%s) with kernel %s spreads encryption over all CPUs "+
				"through unbound workqueues. On a ramdisk of a PostgreSQL server, fio 4 KiB read/write gave 171k IOPS plain, "+
				"26.6k through dm-crypt and 45.3k with same_cpu_crypt (blog.gonchik.com, 2021).", u.layer.Name, devName, rel),
			Evidence: []check.Evidence{
				tableEvidence(u, "same_cpu_crypt"),
				sp.ev,
				{Source: "/proc/sys/kernel/osrelease", Observed: rel, Expected: ">= 5.9"},
			},
			Remediation: rem,
			References:  []string{refLUKSRamdisk, refDMCrypt, refCloudflare, refCryptsetup},
			Fix:         fix,
			Cost:        taxCost(in, u.layer.Name),
		})
	}
	return out
}

// sameCPURemediation words the fix c; its command is check.PersistCommand's,
// as fix's plan prints it.
func sameCPURemediation(name string, c *check.CryptChange) string {
	var b strings.Builder
	if cmd, asks := check.PersistCommand(c); cmd != "" {
		b.WriteString("LUKS2: " + cmd + "\n" + reflow("("+asks+")", 72) + "\n")
	} else {
		b.WriteString(reflow("LUKS2, but "+asks+": the header cannot be written from here.", 72) + "\n")
	}
	fmt.Fprintf(&b, "Otherwise add same-cpu-crypt to the options of %s in /etc/crypttab\n"+
		"(applies at the next open). Better: a 5.9+ kernel and\n"+
		"no_read_workqueue/no_write_workqueue (see dmcrypt.workqueue).", name)
	return b.String()
}
