package storagecheck

import (
	"fmt"
	"strconv"

	"github.com/slowpath/slowpath/internal/check"
)

// dmcrypt.sector-size: a crypt target with 512-byte encryption sectors on a
// device with 4096-byte physical blocks does eight cipher operations (and
// eight IVs) per 4 KiB block instead of one, and lets the filesystem issue
// sub-block writes the device must read-modify-write. dm-crypt has
// supported sector_size since Linux 4.12 (Documentation/admin-guide/device-mapper/dm-crypt.rst).
func init() {
	check.Register(check.Check{
		ID:       "dmcrypt.sector-size",
		Title:    "512-byte dm-crypt sectors on a 4096-byte device",
		Severity: check.Warning,
		Run:      runSectorSize,
	})
}

func runSectorSize(in *check.Input) []check.Finding {
	uses, _ := cryptUses(in.Storage)
	var out []check.Finding
	for _, u := range uses {
		c := u.layer.Crypt
		dev := storageBelow(u.below)
		if dev == nil || dev.Queue == nil || dev.Queue.PhysicalBlockSize == 0 {
			out = append(out, check.Finding{Status: check.Unknown, Severity: check.Info, Subject: u.Subject(),
				Summary: "the physical block size of the device under the crypt target was not collected"})
			continue
		}
		pbs := dev.Queue.PhysicalBlockSize
		if c.SectorSize >= pbs || pbs < 4096 {
			out = append(out, check.Finding{Status: check.Pass, Subject: u.Subject(),
				Summary: fmt.Sprintf("crypt sector %d, device physical block %d", c.SectorSize, pbs)})
			continue
		}
		out = append(out, check.Finding{
			Subject: u.Subject(),
			Summary: fmt.Sprintf("dm-crypt %s encrypts in %d-byte sectors on %s, whose physical block is %d bytes: "+
				"%d cipher operations per block instead of one, and sub-block writes the device must read-modify-write.",
				u.layer.Name, c.SectorSize, dev.Name, pbs, pbs/c.SectorSize),
			Evidence: []check.Evidence{
				{Source: "dm table " + u.layer.Name, Key: "sector_size", Observed: strconv.Itoa(c.SectorSize), Expected: strconv.Itoa(pbs)},
				{Source: queuePath(sysName(dev), "physical_block_size"), Observed: strconv.Itoa(pbs)},
			},
			Remediation: sectorRemediation(u, pbs),
			References:  []string{refDMCrypt, "https://man7.org/linux/man-pages/man8/cryptsetup-reencrypt.8.html"},
		})
	}
	return out
}

func sectorRemediation(u *cryptUse, pbs int) string {
	if isLUKS2(u.layer) {
		return fmt.Sprintf("Back up, then re-encrypt in place with %d-byte sectors (LUKS2; the filesystem block\n"+
			"size must be at least %d):\n  cryptsetup reencrypt --sector-size %d /dev/<device under %s>",
			pbs, pbs, pbs, u.layer.Name)
	}
	return fmt.Sprintf("Recreate the mapping with %d-byte sectors. LUKS1: convert to LUKS2\n"+
		"(cryptsetup convert --type luks2), then\n"+
		"  cryptsetup reencrypt --sector-size %d DEVICE\n"+
		"Plain mode: add sector-size=%d to its /etc/crypttab options.\n"+
		"This changes the on-disk layout: copy the data off first.", pbs, pbs, pbs)
}
