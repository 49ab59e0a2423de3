package storagecheck

import (
	"fmt"
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
			out = append(out, check.Finding{
				Subject: "/dev/" + leaf.Name,
				Summary: fmt.Sprintf("NVMe device %s under dm-crypt %s uses the %s I/O scheduler; on NVMe it adds per-request "+
					"overhead without benefit, and dm-crypt already decides the order of writes.", leaf.Name, u.layer.Name, leaf.Queue.Scheduler),
				Evidence: []check.Evidence{{Source: queuePath(leaf.Name, "scheduler"), Observed: leaf.Queue.Scheduler,
					Expected: "none (available: " + strings.Join(leaf.Queue.Schedulers, " ") + ")"}},
				Remediation: fmt.Sprintf("echo none > /sys/block/%s/queue/scheduler\n"+
					"and to keep it, a udev rule, e.g. /etc/udev/rules.d/60-nvme-scheduler.rules:\n"+
					"  ACTION==\"add|change\", KERNEL==\"nvme[0-9]*n[0-9]*\", ATTR{queue/scheduler}=\"none\"", leaf.Name),
				References: []string{"https://docs.kernel.org/block/blk-mq.html", refCloudflare},
			})
		}
	}
	return out
}
