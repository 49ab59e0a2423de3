package storagecheck

import (
	"fmt"
	"strings"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
)

// dmcrypt.workqueue: by default dm-crypt queues every read and write to
// kcryptd workqueues. On fast storage the queueing, not the cipher, is the
// cost; Linux 5.9 added no_read_workqueue/no_write_workqueue to bypass it
// (commit 39d42fa96ba1, Cloudflare's "Speeding up Linux disk encryption").
func init() {
	check.Register(check.Check{
		ID:       "dmcrypt.workqueue",
		Title:    "dm-crypt on fast storage still uses kcryptd workqueues",
		Severity: check.Warning,
		Run:      runWorkqueue,
		Series:   addedAwaitSeries,
	})
}

func runWorkqueue(in *check.Input) []check.Finding {
	uses, unreadable := cryptUses(in.Storage)
	var out []check.Finding
	for _, u := range unreadable {
		out = append(out, check.Finding{Status: check.Unknown, Severity: check.Info, Subject: u.Subject(),
			Summary: "crypt table could not be read, so its workqueue flags are unknown: " + u.layer.Note})
	}
	if len(uses) == 0 {
		return out
	}
	rel := kernelRelease(in)
	ok, known := kernelAtLeast(rel, 5, 9)
	for _, u := range uses {
		c := u.layer.Crypt
		if c.NoReadWorkqueue && c.NoWriteWorkqueue {
			out = append(out, check.Finding{Status: check.Pass, Subject: u.Subject(), Summary: "workqueues bypassed"})
			continue
		}
		sp := storageSpeed(u.below)
		if sp.dev == nil && !sp.known {
			out = append(out, check.Finding{Status: check.Unknown, Severity: check.Info, Subject: u.Subject(),
				Summary: "the device under the crypt target has no queue facts in the snapshot, so whether it is fast storage is unknown"})
			continue
		}
		if !sp.known {
			out = append(out, check.Finding{Status: check.Unknown, Severity: check.Info, Subject: u.Subject(),
				Summary: fmt.Sprintf("queue/rotational of %s was not collected, so whether it is fast storage is unknown", sysName(sp.dev))})
			continue
		}
		if !sp.fast {
			out = append(out, check.Finding{Status: check.Pass, Subject: u.Subject(), Summary: "rotational storage: workqueues do not dominate"})
			continue
		}
		if !known {
			out = append(out, check.Finding{Status: check.Unknown, Severity: check.Info, Subject: u.Subject(),
				Summary: fmt.Sprintf("kernel release %q could not be read, so whether it has no_read_workqueue (5.9+) is unknown", rel)})
			continue
		}
		if !ok {
			out = append(out, check.Finding{Status: check.Skipped, Severity: check.Info, Subject: u.Subject(),
				Summary:    fmt.Sprintf("kernel %s predates 5.9, which added no_read_workqueue/no_write_workqueue; see dmcrypt.same-cpu-crypt", rel),
				References: []string{refWorkqueue}})
			continue
		}
		out = append(out, workqueueFinding(in, u, sp, rel))
	}
	return out
}

func workqueueFinding(in *check.Input, u *cryptUse, sp speed, rel string) check.Finding {
	kind, name := "non-rotational", "the device below"
	if sp.dev != nil {
		name = sysName(sp.dev)
		if sp.dev.Kind == storagemodel.LayerZram || sp.dev.Kind == storagemodel.LayerRAM {
			kind = "RAM"
		}
	}
	if strings.HasPrefix(sp.ev.Source, "cloud fact") {
		kind = "local SSD"
	}
	ev := []check.Evidence{
		tableEvidence(u, "no_read_workqueue no_write_workqueue"),
		sp.ev,
		{Source: "/proc/sys/kernel/osrelease", Observed: rel, Expected: ">= 5.9"},
	}
	var missing []string
	if !u.layer.Crypt.NoReadWorkqueue {
		missing = append(missing, "no_read_workqueue")
	}
	if !u.layer.Crypt.NoWriteWorkqueue {
		missing = append(missing, "no_write_workqueue")
	}
	fix := cryptFix(u.layer, missing...)
	if platformOf(in) == check.PlatformCoreOS {
		fix.Crypt.Butane = butaneLUKS(u.layer.Name, missing)
	}
	rem, prefs := cryptRemedy(in, u.layer, missing, workqueueRemediation(u.layer, fix.Crypt))
	refs := []string{refWorkqueue, refCloudflare, refCryptsetup, refCrypttab}
	if len(prefs) > 0 {
		refs = append(refs, prefs...)
		ev = append(ev, check.Evidence{Source: "/etc/os-release", Key: "ID", Observed: in.Snapshot.Host.OS.ID,
			Expected: "the platform's own setting keeps the flags"})
	}
	return check.Finding{
		Subject: u.Subject(),
		Summary: fmt.Sprintf("dm-crypt %s on %s storage (%s) runs without %s: every I/O is queued to kcryptd workqueues, "+
			"which on fast devices can cost more than the cipher itself (see the kernel commit and Cloudflare's measurements).",
			u.layer.Name, kind, name, strings.Join(missing, " and ")),
		Evidence:    ev,
		Remediation: rem,
		References:  refs,
		Fix:         fix,
		Cost:        taxCost(in, u.layer.Name),
	}
}

// workqueueRemediation words the fix c of mapping l; its commands are
// check.RefreshCommand's, as fix's plan prints them.
func workqueueRemediation(l storagemodel.Layer, c *check.CryptChange) string {
	name := l.Name
	var b strings.Builder
	if isLUKS2(l) {
		cmd, asks := check.PersistCommand(c)
		if cmd != "" {
			s := "(LUKS2: applies now and is stored in the header for every later open; " + asks
			if len(c.Keep) > 0 {
				s += "; the other options keep the flags the mapping has now"
			}
			return cmd + "\n" + reflow(s+")", 72)
		}
		// No way into the volume from a shell: crypttab's options, which
		// systemd-cryptsetup applies at every open, keep the flags.
		b.WriteString(reflow("(LUKS2, but "+asks+": the header cannot be written from here.)", 72) + "\n")
	}
	fmt.Fprintf(&b, "Add no-read-workqueue,no-write-workqueue to the options of %s in /etc/crypttab, e.g.\n", name)
	fmt.Fprintf(&b, "  %s UUID=... none luks,discard,no-read-workqueue,no-write-workqueue\n", name)
	fmt.Fprintf(&b, "then regenerate the initramfs if %s opens at boot.", name)
	if isLUKS1(l) {
		fmt.Fprintf(&b, "\nTo apply now:\n  %s", check.RefreshCommand(c, false))
	}
	return b.String()
}

// cryptRemedy is the remedy that adds flags to the mapping l, by the
// platform's way: Talos has no shell to run cryptsetup in, so its machine
// configuration is the one place; Bottlerocket cannot run the refresh (its
// key is sealed in the TPM), so the platform's text stands alone. Elsewhere
// the platform's way (the Butane fragment) comes first and generic, the
// command for this node, after it. prefs are the platform's references.
func cryptRemedy(in *check.Input, l storagemodel.Layer, flags []string, generic string) (string, []string) {
	p, prefs := platformWorkqueue(in, l, flags)
	switch {
	case p == "":
		return generic, nil
	case platformOf(in) == check.PlatformTalos || platformOf(in) == check.PlatformBottlerocket:
		return p, prefs
	}
	return p + "\n" + generic, prefs
}
