package storagecheck

import (
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
)

// cryptFix is the structured fix that adds flags to the crypt mapping l.
// Keep lists the refresh-relevant flags already set: refresh applies
// exactly the flags it is given and --persistent stores exactly those
// (cryptsetup-refresh(8)), so a flag left out would silently turn off.
func cryptFix(l storagemodel.Layer, add ...string) *check.Fix {
	format := "plain"
	switch {
	case isLUKS2(l):
		format = "luks2"
	case isLUKS1(l):
		format = "luks1"
	}
	c := &check.CryptChange{Name: l.Name, Format: format, Add: add, KeyInKeyring: l.Crypt.KeySource == "keyring",
		Opens: check.OpenersOf(l.LUKS)}
	if len(c.Opens) > 0 {
		c.Device = l.LUKS.Device
	}
	for _, f := range l.Crypt.Flags() {
		if !slices.Contains(add, f) && !strings.Contains(f, ":") && f != "iv_large_sectors" {
			c.Keep = append(c.Keep, f)
		}
	}
	return &check.Fix{Crypt: c}
}

// stackedFix is the cloud change behind the Azure cases of the stacked
// remediation: turning encryption at host off (it needs the VM
// deallocated: https://learn.microsoft.com/azure/virtual-machines/disks-enable-host-based-encryption-cli).
func stackedFix(chain []storagemodel.Layer) *check.Fix {
	if !hasFact(chain, "azure-eah") {
		return nil
	}
	return &check.Fix{Cloud: []check.CloudChange{{
		Provider: "azure",
		What:     "turn encryption at host off (the VM is deallocated, so it stops until started again)",
		Commands: []string{
			"az vm deallocate -g RG -n VM",
			"az vm update -g RG -n VM --set securityProfile.encryptionAtHost=false",
			"az vm start -g RG -n VM",
		},
		Setting: check.CloudAzureEAHOff,
	}}}
}
