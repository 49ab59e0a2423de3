package storagemodel

import (
	"fmt"
	"path"
	"strings"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// DiskIdentity is what a cloud's own tooling calls a disk, by the rule
// that said so: the same sysfs attributes its udev rules read.
type DiskIdentity struct {
	// Role: os-disk, temp-disk, data-disk, managed-disk (OS or data, not
	// told apart), ebs, instance-store, local-ssd, persistent-disk, or
	// unidentified (an Azure SCSI disk no rule names).
	Role string `json:"role"`
	// Rule is the id of the identity rule, Source the cloud's own rule
	// file it mirrors (repository and path).
	Rule   string `json:"rule"`
	Source string `json:"source"`
	// Evidence is the attribute values that matched.
	Evidence string `json:"evidence"`
	// Corroboration compares instance metadata with the identity; it
	// never decides. Empty when metadata says nothing about this disk.
	Corroboration string `json:"corroboration,omitempty"`
}

// Identity roles.
const (
	RoleOSDisk         = "os-disk"
	RoleTempDisk       = "temp-disk"
	RoleDataDisk       = "data-disk"
	RoleManagedDisk    = "managed-disk"
	RoleEBS            = "ebs"
	RoleInstanceStore  = "instance-store"
	RoleLocalSSD       = "local-ssd"
	RolePersistentDisk = "persistent-disk"
	RoleUnidentified   = "unidentified"
)

// Sources of the identity rules: the clouds' own udev rules and tools.
const (
	srcWALinuxAgent = "https://github.com/Azure/WALinuxAgent/blob/master/config/66-azure-storage.rules"
	srcAzureVMUtils = "https://github.com/Azure/azure-vm-utils/blob/main/udev/80-azure-disk.rules"
	srcAzureNVMeID  = "https://github.com/Azure/azure-vm-utils/blob/main/src/identify_disks.c"
	srcEC2Utils     = "https://github.com/amazonlinux/amazon-ec2-utils/blob/main/70-ec2-nvme-devices.rules"
	srcGCEDiskNames = "https://github.com/GoogleCloudPlatform/guest-configs/blob/master/src/lib/udev/rules.d/65-gce-disk-naming.rules"
)

// identityRule is one rule of a cloud's own disk identification. match
// returns the role and the evidence, or "" when the rule does not apply.
type identityRule struct {
	id, provider, source string
	match                func(id *snapshot.Identity) (role, evidence string)
}

// Azure SCSI controllers by VMBus device_id. WALinuxAgent's and
// azure-vm-utils' rules: "?00000000-0000-*" is the root (OS) disk and
// "?00000000-0001-*" the resource (temp) disk, each on its own VMBus
// device; on Gen2 VMs both sit on controller {f8b3781a-…} (scsi0), the OS
// disk at LUN 0 and the resource disk at LUN 1 (LUN 2 is the DVD drive);
// {f8b3781b,c,d-…} are the data-disk controllers scsi1..3.
const (
	azureRootPattern     = "?00000000-0000-*"
	azureResourcePattern = "?00000000-0001-*"
	azureGen2Scsi0       = "{f8b3781a-1e82-4818-a1c3-63d806ec15bb}"
)

var azureDataControllers = []string{
	"{f8b3781b-1e82-4818-a1c3-63d806ec15bb}",
	"{f8b3781c-1e82-4818-a1c3-63d806ec15bb}",
	"{f8b3781d-1e82-4818-a1c3-63d806ec15bb}",
}

// identityRules, tried in order: the first rule that matches names the
// disk. Model and vendor are compared trimmed, as udev's ATTRS{} does
// (sysfs pads SCSI inquiry strings with spaces).
var identityRules = []identityRule{
	{
		// KERNEL=="nvme*", ENV{ID_MODEL}=="Microsoft NVMe Direct Disk"|"… v2" → AZURE_DISK_TYPE=local;
		// v2 is the temp disk of v6 and later sizes (azure-vm-utils doc/disk-identification.md).
		id: "azure-nvme-direct", provider: "azure", source: srcAzureVMUtils,
		match: func(id *snapshot.Identity) (string, string) {
			if m := trim(id.Model); m == "Microsoft NVMe Direct Disk" || m == "Microsoft NVMe Direct Disk v2" {
				return RoleTempDisk, fmt.Sprintf("NVMe model %q (azure-vm-utils: type=local)", m)
			}
			return "", ""
		},
	},
	{
		// MSFT NVMe Accelerator v1.0: nsid 1 is the OS disk, nsid 2+ data disk LUN nsid-2.
		id: "azure-nvme-remote", provider: "azure", source: srcAzureNVMeID,
		match: func(id *snapshot.Identity) (string, string) {
			if trim(id.Model) != "MSFT NVMe Accelerator v1.0" {
				return "", ""
			}
			switch {
			case id.NVMeNSID == 1:
				return RoleOSDisk, `NVMe model "MSFT NVMe Accelerator v1.0", nsid 1`
			case id.NVMeNSID >= 2:
				return RoleDataDisk, fmt.Sprintf(`NVMe model "MSFT NVMe Accelerator v1.0", nsid %d (LUN %d)`, id.NVMeNSID, id.NVMeNSID-2)
			}
			return RoleManagedDisk, `NVMe model "MSFT NVMe Accelerator v1.0", nsid not collected (OS or data disk)`
		},
	},
	{
		// ENV{ID_VENDOR}=="Msft", ENV{ID_MODEL}=="Virtual_Disk", then ATTRS{device_id}
		// and the LUN; azure-vm-utils udev/80-azure-disk.rules repeats these rules.
		id: "azure-scsi-vmbus", provider: "azure", source: srcWALinuxAgent,
		match: azureSCSIRole,
	},
	{
		id: "aws-ebs", provider: "aws", source: srcEC2Utils,
		match: modelRule(RoleEBS, "Amazon Elastic Block Store"),
	},
	{
		id: "aws-instance-store", provider: "aws", source: srcEC2Utils,
		match: modelRule(RoleInstanceStore, "Amazon EC2 NVMe Instance Storage"),
	},
	{
		// ATTRS{model}=="nvme_card-pd": PD over NVMe (google_nvme_id names it from the namespace).
		id: "gcp-nvme-pd", provider: "gcp", source: srcGCEDiskNames,
		match: modelRule(RolePersistentDisk, "nvme_card-pd"),
	},
	{
		// ATTRS{model}=="nvme_card" and =="nvme_card[0-9]*" (local SSD multi-controller):
		// ID_SERIAL Google_EphemeralDisk_local-nvme-ssd-N.
		id: "gcp-nvme-local-ssd", provider: "gcp", source: srcGCEDiskNames,
		match: func(id *snapshot.Identity) (string, string) {
			m := trim(id.Model)
			if ok, _ := path.Match("nvme_card[0-9]*", m); ok || m == "nvme_card" {
				return RoleLocalSSD, fmt.Sprintf("NVMe model %q", m)
			}
			return "", ""
		},
	},
	{
		// SCSI: ENV{ID_VENDOR}=="Google" (the rules skip other vendors);
		// scsi_id's ID_SERIAL Google_PersistentDisk_<name> / Google_EphemeralDisk_local-ssd-N.
		id: "gcp-scsi", provider: "gcp", source: srcGCEDiskNames,
		match: func(id *snapshot.Identity) (string, string) {
			if trim(id.Vendor) != "Google" {
				return "", ""
			}
			switch m := trim(id.Model); m {
			case "PersistentDisk":
				return RolePersistentDisk, `SCSI vendor "Google", model "PersistentDisk"`
			case "EphemeralDisk":
				return RoleLocalSSD, `SCSI vendor "Google", model "EphemeralDisk"`
			}
			return "", ""
		},
	},
}

func trim(s string) string { return strings.TrimSpace(s) }

func modelRule(role, model string) func(*snapshot.Identity) (string, string) {
	return func(id *snapshot.Identity) (string, string) {
		if trim(id.Model) == model {
			return role, fmt.Sprintf("NVMe model %q", model)
		}
		return "", ""
	}
}

// azureSCSIRole applies the Azure SCSI rules to an Msft Virtual Disk.
// Size plays no part: only the VMBus device_id and the LUN do.
func azureSCSIRole(id *snapshot.Identity) (string, string) {
	if trim(id.Vendor) != "Msft" || trim(id.Model) != "Virtual Disk" {
		return "", ""
	}
	dev := id.VMBusDeviceID
	if dev == "" {
		return RoleUnidentified, `SCSI "Msft Virtual Disk" without a VMBus device_id in the snapshot`
	}
	if _, err := snapshot.ParseVMBusDeviceID(dev); err != nil {
		return RoleUnidentified, fmt.Sprintf(`SCSI "Msft Virtual Disk": %v`, err)
	}
	if ok, _ := path.Match(azureRootPattern, dev); ok {
		return RoleOSDisk, fmt.Sprintf("VMBus device_id %s matches %s (root)", dev, azureRootPattern)
	}
	if ok, _ := path.Match(azureResourcePattern, dev); ok {
		return RoleTempDisk, fmt.Sprintf("VMBus device_id %s matches %s (resource)", dev, azureResourcePattern)
	}
	lun, lunErr := scsiLUN(id)
	if strings.EqualFold(dev, azureGen2Scsi0) {
		switch {
		case lunErr != nil:
			return RoleUnidentified, fmt.Sprintf("VMBus device_id %s (Gen2 scsi0) but %v", dev, lunErr)
		case lun == 0:
			return RoleOSDisk, fmt.Sprintf("VMBus device_id %s (Gen2 scsi0), LUN 0 (root)", dev)
		case lun == 1:
			return RoleTempDisk, fmt.Sprintf("VMBus device_id %s (Gen2 scsi0), LUN 1 (resource)", dev)
		}
		return RoleUnidentified, fmt.Sprintf("VMBus device_id %s (Gen2 scsi0), LUN %d: neither root (0) nor resource (1)", dev, lun)
	}
	for i, c := range azureDataControllers {
		if strings.EqualFold(dev, c) {
			ev := fmt.Sprintf("VMBus device_id %s (data controller scsi%d)", dev, i+1)
			if lunErr == nil {
				ev += fmt.Sprintf(", LUN %d", lun)
			}
			return RoleDataDisk, ev
		}
	}
	return RoleUnidentified, fmt.Sprintf("VMBus device_id %s matches no Azure disk rule", dev)
}

// scsiLUN is the LUN of the disk's SCSI address, as the rules' `cut -d: -f4`.
func scsiLUN(id *snapshot.Identity) (uint64, error) {
	if id.SCSIAddress == "" {
		return 0, fmt.Errorf("no SCSI address in the snapshot")
	}
	a, err := snapshot.ParseSCSIAddress(id.SCSIAddress)
	if err != nil {
		return 0, err
	}
	return a.LUN, nil
}

// identifyDisk applies the identity rules of the snapshot's cloud to a
// whole disk; nil when no rule of that cloud matches.
func identifyDisk(c *snapshot.Cloud, d *snapshot.BlockDevice) *DiskIdentity {
	if c == nil || d == nil || d.Ident == nil {
		return nil
	}
	for _, r := range identityRules {
		if r.provider != c.Provider {
			continue
		}
		if role, ev := r.match(d.Ident); role != "" {
			id := &DiskIdentity{Role: role, Rule: r.id, Source: r.source, Evidence: ev}
			id.Corroboration = corroborate(c, d, role)
			return id
		}
	}
	return nil
}

// corroborate compares instance metadata with an identity. Metadata never
// decides: it is reported, agreeing or not.
func corroborate(c *snapshot.Cloud, d *snapshot.BlockDevice, role string) string {
	switch {
	case c.Azure != nil && role == RoleTempDisk && d.Ident.Transport == "scsi":
		return azureSizeCorroboration(c.Azure.ResourceDiskSizeMB, d.SizeBytes)
	case c.AWS != nil && len(c.AWS.BlockDeviceMapping) > 0 && (role == RoleEBS || role == RoleInstanceStore):
		ebs, eph := 0, 0
		for k := range c.AWS.BlockDeviceMapping {
			switch {
			case k == "ami" || k == "root" || strings.HasPrefix(k, "ebs"):
				ebs++
			case strings.HasPrefix(k, "ephemeral"):
				eph++
			}
		}
		if role == RoleEBS {
			if ebs == 0 {
				return "IMDS block-device-mapping lists no EBS entry (ami, root, ebsN); the NVMe model decides"
			}
			return fmt.Sprintf("IMDS block-device-mapping lists %d EBS entr(ies) (ami, root, ebsN)", ebs)
		}
		if eph == 0 {
			return "IMDS block-device-mapping lists no ephemeralN entry; the NVMe model decides"
		}
		return fmt.Sprintf("IMDS block-device-mapping lists %d ephemeralN entr(ies)", eph)
	case c.GCP != nil && len(c.GCP.Disks) > 0 && (role == RoleLocalSSD || role == RolePersistentDisk):
		pd, local := 0, 0
		for _, g := range c.GCP.Disks {
			if strings.EqualFold(g.Type, "PERSISTENT") {
				pd++
			} else if g.Type != "" {
				local++
			}
		}
		n, what := pd, "PERSISTENT"
		if role == RoleLocalSSD {
			n, what = local, "non-PERSISTENT (local SSD)"
		}
		if n == 0 {
			return fmt.Sprintf("GCE instance/disks lists no %s disk; the model string decides", what)
		}
		return fmt.Sprintf("GCE instance/disks lists %d %s disk(s)", n, what)
	}
	return ""
}

// azureSizeCorroboration compares the disk size with IMDS
// storageProfile.resourceDisk.size. Microsoft documents the field in kB
// (learn.microsoft.com/azure/virtual-machines/instance-metadata-service,
// "Storage profile"); values seen in public outputs (14336, 34816, 63488)
// read as MiB. Both readings are tried; neither decides.
func azureSizeCorroboration(imds int, size uint64) string {
	if imds <= 0 {
		return "IMDS storageProfile.resourceDisk.size not reported (or 0: no temp disk); the VMBus device_id decides"
	}
	n := uint64(imds)
	switch size {
	case n << 20:
		return fmt.Sprintf("IMDS storageProfile.resourceDisk.size %d agrees with the disk's %d bytes read as MiB (documented as kB)", imds, size)
	case n * 1000, n << 10:
		return fmt.Sprintf("IMDS storageProfile.resourceDisk.size %d agrees with the disk's %d bytes read as kB", imds, size)
	}
	return fmt.Sprintf("IMDS storageProfile.resourceDisk.size %d (documented as kB; %d bytes if MiB) disagrees with the disk's %d bytes; the VMBus device_id decides",
		imds, n<<20, size)
}
