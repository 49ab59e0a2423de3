package storagemodel

import (
	"strings"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// Where encryption of a layer runs.
const (
	ByKernelCPU    = "kernel-cpu"            // this kernel, on this VM's CPUs (dm-crypt, fscrypt)
	ByHypervisor   = "hypervisor-host"       // the cloud host under the VM (Azure encryption at host)
	ByDrive        = "drive"                 // hardware on the device path (Nitro instance store, local SSD)
	ByCloudStorage = "cloud-storage-service" // the remote storage service (Azure SSE, GCP PD)
)

// CloudDisk says what a cloud disk is and how the platform encrypts it.
type CloudDisk struct {
	Provider string `json:"provider"`
	Role     string `json:"role"` // e.g. instance-store, ebs, temp-disk, managed-disk, local-ssd, persistent-disk
	// Encrypted is nil when encryption cannot be known from inside the VM.
	Encrypted   *bool  `json:"encrypted"`
	EncryptedBy string `json:"encrypted_by,omitempty"`
	Algorithm   string `json:"algorithm,omitempty"`
	// LocalSSD is set when the platform documents the disk as local SSD,
	// whatever queue/rotational says (hypervisors may report SSDs as rotational).
	LocalSSD bool `json:"local_ssd,omitempty"`
	// Fact is the id of the cloudFacts row that decided, Source its documentation.
	Fact   string `json:"fact"`
	Source string `json:"source"`
	Note   string `json:"note,omitempty"`
}

// cloudFact is one documented statement about a cloud disk. Each row names
// its source; none is inferred. Rows are tried in order, first match wins.
type cloudFact struct {
	id       string
	provider string
	// models matches the device's identity model (trimmed, exact).
	models []string
	// tempDisk matches Azure's SCSI temp disk: model "Virtual Disk" whose
	// size equals IMDS storageProfile.resourceDisk.size.
	tempDisk bool
	// eah: nil any, else must equal Azure securityProfile.encryptionAtHost.
	eah *bool
	// minGen, when set, is the least Azure size generation (Standard_E16d_v5 -> 5).
	minGen int
	// below marks the drive's own encryption under the disk's main fact: a
	// disk can carry both (the main row and one below row).
	below     bool
	role      string
	encrypted *bool // nil: not knowable from inside
	by        string
	algorithm string
	localSSD  bool
	source    string
	note      string
}

func ptr(b bool) *bool { return &b }

// cloudFacts is the one table of cloud disk facts. Model strings are what
// the devices report in /sys/block/*/device/model; encryption statements
// are quoted in docs/checks.md with the same links.
var cloudFacts = []cloudFact{
	{
		id: "aws-nitro-instance-store", provider: "aws",
		models: []string{"Amazon EC2 NVMe Instance Storage"},
		role:   "instance-store", encrypted: ptr(true), by: ByDrive, algorithm: "XTS-AES-256", localSSD: true,
		// "The data on NVMe instance storage is encrypted using an XTS-AES-256 block
		// cipher implemented in a hardware module on the instance ... You cannot disable this encryption."
		source: "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ssd-instance-store.html",
		note:   "always on, cannot be disabled; keys destroyed when the instance stops",
	},
	{
		id: "aws-ebs", provider: "aws",
		models: []string{"Amazon Elastic Block Store"},
		role:   "ebs", encrypted: nil, by: ByHypervisor, algorithm: "AES-256-XTS",
		// EBS encryption is per volume, done on the EC2 host; the guest sees the same device either way.
		source: "https://docs.aws.amazon.com/kms/latest/cryptographic-details/ebs-volume-encryption.html",
		note:   "EBS encryption is set per volume and applied on the Nitro host; not visible from inside",
	},
	{
		id: "azure-eah-temp-nvme", provider: "azure",
		models: []string{"Microsoft NVMe Direct Disk", "Microsoft NVMe Direct Disk v2"},
		eah:    ptr(true), role: "temp-disk", encrypted: ptr(true), by: ByHypervisor, algorithm: "AES-256 (platform-managed key)",
		localSSD: true, // "the temporary disk that is created on local SSD" (https://learn.microsoft.com/azure/virtual-machines/enable-nvme-temp-faqs)
		// "Encryption at host enables encryption at rest for your temporary disk and OS/data disk caches."
		source: "https://learn.microsoft.com/azure/virtual-machines/disk-encryption#encryption-at-host---end-to-end-encryption-for-your-vm-data",
	},
	{
		id: "azure-eah-temp-scsi", provider: "azure", tempDisk: true,
		eah: ptr(true), role: "temp-disk", encrypted: ptr(true), by: ByHypervisor, algorithm: "AES-256 (platform-managed key)",
		localSSD: true,
		source:   "https://learn.microsoft.com/azure/virtual-machines/disk-encryption#encryption-at-host---end-to-end-encryption-for-your-vm-data",
	},
	{
		id: "azure-eah-managed", provider: "azure",
		models: []string{"Virtual Disk"},
		eah:    ptr(true), role: "managed-disk", encrypted: ptr(true), by: ByHypervisor, algorithm: "AES-256",
		// "For disks with encryption at host enabled, the server hosting your VM provides
		// the encryption for your data, and that encrypted data flows into Azure Storage."
		source: "https://learn.microsoft.com/azure/virtual-machines/disk-encryption",
	},
	{
		id: "azure-temp-no-eah", provider: "azure", tempDisk: true,
		models: []string{"Microsoft NVMe Direct Disk", "Microsoft NVMe Direct Disk v2"},
		eah:    ptr(false), role: "temp-disk", encrypted: ptr(false), localSSD: true,
		// "Temporary disks are not managed disks and are not encrypted by SSE, unless you enable encryption at host."
		source: "https://learn.microsoft.com/azure/virtual-machines/disk-encryption",
		// No Microsoft document was found that states hardware encryption of
		// local temp disks without encryption at host; none is assumed.
		note: "not encrypted by the platform: Azure SSE does not cover temp disks",
	},
	{
		id: "azure-managed-sse", provider: "azure",
		models: []string{"Virtual Disk"},
		eah:    ptr(false), role: "managed-disk", encrypted: ptr(true), by: ByCloudStorage, algorithm: "AES-256",
		// "SSE automatically encrypts your data stored on Azure managed disks (OS and data disks) at rest by default"
		source: "https://learn.microsoft.com/azure/virtual-machines/disk-encryption",
	},
	{
		id: "gcp-local-ssd", provider: "gcp",
		models: []string{"nvme_card", "EphemeralDisk"},
		role:   "local-ssd", encrypted: ptr(true), by: ByDrive, algorithm: "AES-256", localSSD: true,
		// "Compute Engine offers always-encrypted local solid-state drive (SSD) block storage"
		source: "https://cloud.google.com/compute/docs/disks/local-ssd",
	},
	{
		id: "gcp-persistent-disk", provider: "gcp",
		models: []string{"PersistentDisk", "nvme_card-pd"},
		role:   "persistent-disk", encrypted: ptr(true), by: ByCloudStorage, algorithm: "AES-256",
		// Google encrypts all customer content at rest by default.
		source: "https://cloud.google.com/docs/security/encryption/default-encryption",
	},
	{
		id: "azure-v5-local-hardware", provider: "azure", tempDisk: true, minGen: 5, below: true,
		role: "local-disk-hardware", encrypted: ptr(true), by: ByDrive, algorithm: "hardware (drive)", localSSD: true,
		// Microsoft engineering found that encryption at host on VMs whose local
		// storage already uses hardware-level encryption encrypted it twice: the
		// incident behind slowpath. Azure's product pages do not state it.
		source: azureHardwareSource,
		note:   "reported by Microsoft engineering for v5+ local storage (not in Azure's product docs)",
	},
}

// lookupCloudDisk finds the cloud facts for a whole disk, top (nearest the
// VM) first; none when the disk is not a recognised cloud disk. A disk can
// carry two platform layers: on Azure a v5+ temp disk is encrypted by the
// local hardware and, with encryption at host, again by the host — the
// double encryption this project was started for.
func lookupCloudDisk(c *snapshot.Cloud, d *snapshot.BlockDevice) []*CloudDisk {
	top := lookupCloudFact(c, d, false)
	hw := lookupCloudFact(c, d, true)
	switch {
	case hw == nil && top == nil:
		return nil
	case hw == nil:
		return []*CloudDisk{top}
	case top == nil || top.Encrypted != nil && !*top.Encrypted:
		// "Not encrypted by SSE" is about the platform's software layer; the
		// drive's own encryption still stands.
		return []*CloudDisk{hw}
	default:
		return []*CloudDisk{top, hw}
	}
}

// azureHardwareSource is the public write-up of the incident behind
// slowpath: Microsoft engineering found that encryption at host on VMs whose
// local storage already uses hardware-level encryption encrypted it twice.
const azureHardwareSource = "https://www.algolia.com/blog/engineering/unintended-double-encryption"

// azureGeneration reads the version suffix of an Azure size name:
// Standard_E16d_v5 -> 5; 0 when there is none (v1 sizes have no suffix).
func azureGeneration(size string) int {
	i := strings.LastIndex(size, "_v")
	if i < 0 {
		return 0
	}
	n := 0
	for _, r := range size[i+2:] {
		if r < '0' || r > '9' {
			break
		}
		n = n*10 + int(r-'0')
	}
	return n
}

// lookupCloudFact finds the first cloudFacts row for a whole disk among the
// main rows, or among the below rows when below is set.
// Azure rows that depend on encryption at host are skipped when IMDS did
// not say (nil), and a note explains it instead.
func lookupCloudFact(c *snapshot.Cloud, d *snapshot.BlockDevice, below bool) *CloudDisk {
	if c == nil || d == nil {
		return nil
	}
	model := ""
	if d.Ident != nil {
		model = strings.TrimSpace(d.Ident.Model)
	}
	var eah *bool
	isTemp, gen := false, 0
	if c.Azure != nil {
		eah = c.Azure.EncryptionAtHost
		isTemp = isAzureTempDisk(c.Azure, d, model)
		gen = azureGeneration(c.Azure.VMSize)
	}
	for i := range cloudFacts {
		f := &cloudFacts[i]
		if f.provider != c.Provider || f.below != below || gen < f.minGen {
			continue
		}
		modelOK := false
		for _, m := range f.models {
			if m == model {
				modelOK = true
			}
		}
		if f.tempDisk && isTemp {
			modelOK = true
		} else if !f.tempDisk && f.role == "managed-disk" && isTemp {
			modelOK = false // the SCSI temp disk also reports "Virtual Disk"
		}
		if !modelOK {
			continue
		}
		if f.eah != nil {
			if eah == nil {
				return &CloudDisk{Provider: c.Provider, Role: f.role, LocalSSD: f.localSSD, Fact: "azure-eah-unknown", Source: f.source,
					Note: "Azure instance metadata did not report securityProfile.encryptionAtHost; host encryption unknown"}
			}
			if *f.eah != *eah {
				continue
			}
		}
		return &CloudDisk{Provider: c.Provider, Role: f.role, Encrypted: f.encrypted, EncryptedBy: f.by,
			Algorithm: f.algorithm, LocalSSD: f.localSSD, Fact: f.id, Source: f.source, Note: f.note}
	}
	return nil
}

// isAzureTempDisk recognises the temp (resource) disk: an NVMe direct disk,
// or the SCSI "Virtual Disk" whose size matches IMDS resourceDisk.size (MiB).
// Both the OS disk and the temp disk report "Virtual Disk", so size is the
// distinguishing fact available in a snapshot.
func isAzureTempDisk(a *snapshot.AzureMeta, d *snapshot.BlockDevice, model string) bool {
	if strings.HasPrefix(model, "Microsoft NVMe Direct Disk") {
		return true
	}
	if model != "Virtual Disk" || a.ResourceDiskSizeMB <= 0 {
		return false
	}
	return d.SizeBytes == uint64(a.ResourceDiskSizeMB)<<20
}
