package storagecheck

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
)

// References shared by several checks.
const (
	refDMCrypt    = "https://docs.kernel.org/admin-guide/device-mapper/dm-crypt.html"
	refCloudflare = "https://blog.cloudflare.com/speeding-up-linux-disk-encryption/"
	refWorkqueue  = "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git/commit/?id=39d42fa96ba1b7d2544db3f8ed5da8fb0d5cb877"
	refCryptsetup = "https://man7.org/linux/man-pages/man8/cryptsetup-refresh.8.html"
	refCrypttab   = "https://man7.org/linux/man-pages/man5/crypttab.5.html"
	// refLUKSRamdisk is the write-up the IOPS figures of
	// dmcrypt.same-cpu-crypt come from (fio on a ramdisk of a PostgreSQL
	// server, plain, through dm-crypt and with same_cpu_crypt).
	refLUKSRamdisk = "https://blog.gonchik.com/2021/03/yet-another-compliance-request-can.html"
	// refDoubleEncryption is the search-engine incident's write-up: a
	// second encryption layer nobody meant to have.
	refDoubleEncryption = "https://www.algolia.com/blog/engineering/unintended-double-encryption"
	refIOStats          = "https://docs.kernel.org/block/stat.html"
)

// addedAwaitSeries is what a dm-crypt flag's fix should lower on each
// node: the await dm-crypt adds over the device beneath, a recording rule
// of deploy/kubernetes/prometheusrule.yaml over 5 minutes.
var addedAwaitSeries = &check.Series{Name: "dmcrypt_added_await_seconds", Lookback: 5 * time.Minute,
	Expr: `avg by ($node) (instance_mountpoint:slowpath_dmcrypt_added_await_seconds:rate5m)`}

// cryptUse is one dm-crypt device and the paths it serves. A crypt device
// can appear in several paths (a loop file on it, bind mounts), but checks
// report it once.
type cryptUse struct {
	layer storagemodel.Layer
	// below is the subtree under the crypt layer in the first path that has it.
	below    []storagemodel.Layer
	subjects []string
}

// Subject names the device the way an operator would type it.
func (c *cryptUse) Subject() string { return "/dev/mapper/" + c.layer.Name }

// lastCryptUses is cryptUses of the last model asked: five checks ask for
// the same model in one evaluation, and the agent evaluates the model it
// keeps per topology read on every scrape (a copy of each crypt layer and
// its subtree; docs/performance.md has what it cost at 512 dm-crypt
// devices). Callers only read what it returns.
var lastCryptUses struct {
	sync.Mutex
	m                *storagemodel.Model
	uses, unreadable []*cryptUse
}

// cryptUses returns every dm-crypt layer with a parsed table, sorted by name.
// Layers whose table could not be parsed are returned in unreadable.
func cryptUses(m *storagemodel.Model) (uses []*cryptUse, unreadable []*cryptUse) {
	if m == nil {
		return nil, nil
	}
	c := &lastCryptUses
	c.Lock()
	defer c.Unlock()
	if c.m != m {
		c.uses, c.unreadable = buildCryptUses(m)
		c.m = m
	}
	return c.uses, c.unreadable
}

func buildCryptUses(m *storagemodel.Model) (uses []*cryptUse, unreadable []*cryptUse) {
	byName := map[string]*cryptUse{}
	var order []string
	for _, p := range m.Paths {
		for i, l := range p.Layers {
			// A layer taken as dm-crypt from its uuid (table unread) has no
			// flags to judge: unreadable, so dmcrypt.workqueue says unknown.
			if l.Kind != storagemodel.LayerDMCrypt && l.InferredCrypt == nil {
				continue
			}
			u := byName[l.Name]
			if u == nil {
				u = &cryptUse{layer: l, below: p.Below(i)}
				byName[l.Name] = u
				order = append(order, l.Name)
			}
			u.subjects = appendUnique(u.subjects, p.Subject())
		}
	}
	sort.Strings(order)
	for _, n := range order {
		if byName[n].layer.Crypt == nil {
			unreadable = append(unreadable, byName[n])
		} else {
			uses = append(uses, byName[n])
		}
	}
	return uses, unreadable
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// storageBelow is the first layer under a crypt layer that has queue facts
// (the device the crypt target writes to, or the disk under a partition).
func storageBelow(below []storagemodel.Layer) *storagemodel.Layer {
	for i := range below {
		l := &below[i]
		if l.Queue != nil || l.Kind == storagemodel.LayerZram || l.Kind == storagemodel.LayerRAM {
			return l
		}
	}
	return nil
}

// leavesBelow returns the bottom devices of a subtree (disks, RAM devices).
func leavesBelow(below []storagemodel.Layer) []storagemodel.Layer {
	var out []storagemodel.Layer
	for i, l := range below {
		if l.Kind == storagemodel.LayerCloud || l.Kind == storagemodel.LayerMissing {
			continue
		}
		next := i + 1
		for next < len(below) && below[next].Kind == storagemodel.LayerCloud {
			next++
		}
		if next == len(below) || below[next].Depth <= l.Depth {
			out = append(out, l)
		}
	}
	return out
}

func kernelAtLeast(release string, major, minor int) (atLeast, known bool) {
	maj, mnr, ok := check.KernelVersion(release)
	if !ok {
		return false, false
	}
	return maj > major || (maj == major && mnr >= minor), true
}

func kernelRelease(in *check.Input) string {
	if in.Snapshot == nil || in.Snapshot.Host == nil {
		return ""
	}
	return in.Snapshot.Host.KernelRelease
}

// tableEvidence is the crypt table as evidence, flags listed.
func tableEvidence(c *cryptUse, expected string) check.Evidence {
	flags := c.layer.Crypt.Flags()
	obs := "none"
	if len(flags) > 0 {
		obs = strings.Join(flags, " ")
	}
	return check.Evidence{Source: "dm table " + c.layer.Name, Key: "crypt optional params", Observed: obs, Expected: expected}
}

// isLUKS2 reads the dm uuid cryptsetup sets: CRYPT-LUKS2-<uuid>-<name>.
func isLUKS2(l storagemodel.Layer) bool { return strings.HasPrefix(l.DMUUID, "CRYPT-LUKS2-") }
func isLUKS1(l storagemodel.Layer) bool { return strings.HasPrefix(l.DMUUID, "CRYPT-LUKS1-") }

func queuePath(dev, file string) string { return "/sys/block/" + dev + "/queue/" + file }

// sysName is the kernel name of a layer's device (dm-0 rather than the dm name).
func sysName(l *storagemodel.Layer) string {
	if l.Device != "" {
		return l.Device
	}
	return l.Name
}

// speed is what is known about how fast the storage under a crypt target is.
type speed struct {
	dev   *storagemodel.Layer // the device whose queue was read
	fast  bool                // non-rotational, RAM, or documented local SSD
	known bool
	ev    check.Evidence
}

// storageSpeed decides whether the storage under a crypt target is fast:
// queue/rotational of the first device below, or a cloud fact that says the
// disk is local SSD (a hypervisor may report an SSD as rotational).
func storageSpeed(below []storagemodel.Layer) speed {
	dev := storageBelow(below)
	sp := speed{dev: dev}
	switch {
	case dev == nil:
	case dev.Kind == storagemodel.LayerZram || dev.Kind == storagemodel.LayerRAM:
		return speed{dev: dev, fast: true, known: true,
			ev: check.Evidence{Source: "/sys/class/block/" + sysName(dev), Key: "kind", Observed: dev.Kind}}
	case dev.Queue == nil || dev.Queue.Rotational == nil:
	case !*dev.Queue.Rotational:
		return speed{dev: dev, fast: true, known: true, ev: check.Evidence{Source: queuePath(sysName(dev), "rotational"), Observed: "0"}}
	default:
		sp = speed{dev: dev, known: true, ev: check.Evidence{Source: queuePath(sysName(dev), "rotational"), Observed: "1"}}
	}
	for i := range below {
		if c := below[i].Cloud; c != nil && c.LocalSSD {
			obs := "local SSD"
			if sp.known {
				obs += " (queue/rotational says 1)"
			}
			return speed{dev: dev, fast: true, known: true, ev: check.Evidence{Source: "cloud fact " + c.Fact,
				Key: c.Provider + " " + c.Role, Observed: obs}}
		}
	}
	return sp
}
