package storagecheck

import (
	"fmt"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
)

// dmcrypt.scheduler: dm-crypt reorders nothing useful for an NVMe device,
// and an I/O scheduler on the NVMe queue under it only adds a lock and
// per-request work; "none" is the kernel's default for NVMe for that reason
// (Documentation/block/blk-mq.rst). A scheduler left on by a udev rule or
// tuned profile shows up here.
func init() {
	check.Register(check.Check{
		ID:       "dmcrypt.scheduler",
		Title:    "I/O scheduler other than none on NVMe under dm-crypt",
		Severity: check.Info,
		Run:      runScheduler,
	})
}

func runScheduler(in *check.Input) []check.Finding {
	uses, _ := cryptUses(in.Storage)
	var out []check.Finding
	seen := map[string]bool{}
	for _, u := range uses {
		for _, leaf := range leavesBelow(u.below) {
			if leaf.Kind != storagemodel.LayerDisk || leaf.Ident == nil || leaf.Ident.Transport != "nvme" || seen[leaf.Name] {
				continue
			}
			seen[leaf.Name] = true
			if leaf.Queue == nil || leaf.Queue.Scheduler == "" {
				out = append(out, check.Finding{Status: check.Unknown, Subject: "/dev/" + leaf.Name,
					Summary: "queue/scheduler of " + leaf.Name + " was not collected"})
				continue
			}
			if leaf.Queue.Scheduler == "none" {
				out = append(out, check.Finding{Status: check.Pass, Subject: "/dev/" + leaf.Name, Summary: "scheduler none"})
				continue
			}
			rem, fix := schedulerRemedy(leaf)
			out = append(out, check.Finding{
				Subject: "/dev/" + leaf.Name,
				Summary: fmt.Sprintf("NVMe device %s under dm-crypt %s uses the %s I/O scheduler; on NVMe it adds per-request "+
					"overhead without benefit, and dm-crypt already decides the order of writes.", leaf.Name, u.layer.Name, leaf.Queue.Scheduler),
				Evidence: []check.Evidence{{Source: queuePath(leaf.Name, "scheduler"), Observed: leaf.Queue.Scheduler,
					Expected: "none (available: " + strings.Join(leaf.Queue.Schedulers, " ") + ")"}},
				Remediation: rem,
				References:  []string{"https://docs.kernel.org/block/blk-mq.html", refCloudflare},
				Fix:         fix,
			})
		}
	}
	return out
}

// schedulerRemedy is the change to none, in doctor's words and as the
// plan's step: the same command and udev rule (check.SchedulerCommand,
// SchedulerRule). A queue that does not offer none gets no fix.
func schedulerRemedy(leaf storagemodel.Layer) (string, *check.Fix) {
	q := leaf.Queue
	if !slices.Contains(q.Schedulers, "none") {
		return fmt.Sprintf("%s offers no \"none\" scheduler (%s): choose the lightest it offers, or a kernel built with it.",
			leaf.Name, strings.Join(q.Schedulers, " ")), nil
	}
	rem := check.SchedulerCommand(leaf.Name, "none")
	if rule, err := check.SchedulerRule(leaf.Name, "none"); err == nil {
		rem += "\nand to keep it, a udev rule in " + check.SchedulerRuleFile(leaf.Name) + ":\n  " + rule
	}
	return rem, &check.Fix{Schedulers: []check.SchedulerChange{{Device: leaf.Name, From: q.Scheduler, To: "none", Available: q.Schedulers}}}
}
