package storagemodel

import (
	"slices"
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
	// Identity is how the disk was recognised: the cloud's own rule.
	Identity *DiskIdentity `json:"identity,omitempty"`
}

// cloudFact is one documented statement about a cloud disk. Each row names
// its source; none is inferred. Rows are tried in order, first match wins.
// Which disk a row is about is decided by the identity rules (cloudid.go),
// never by size.
type cloudFact struct {
	id       string
	provider string
	// roles matches the disk's identity role (DiskIdentity.Role).
	roles []string
	// transport, when set, must equal the disk's identity transport.
	transport string
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

// cloudFacts is the one table of cloud disk facts, keyed by the identity
// role the cloud's own rules give a disk; encryption statements are quoted
// in docs/checks.md with the same links.
var cloudFacts = []cloudFact{
	{
		id: "aws-nitro-instance-store", provider: "aws",
		roles: []string{RoleInstanceStore},
		role:  "instance-store", encrypted: ptr(true), by: ByDrive, algorithm: "XTS-AES-256", localSSD: true,
		// "The data on NVMe instance storage is encrypted using an XTS-AES-256 block
		// cipher implemented in a hardware module on the instance ... You cannot disable this encryption."
		source: "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ssd-instance-store.html",
		note:   "always on, cannot be disabled; keys destroyed when the instance stops",
	},
	{
		id: "aws-ebs", provider: "aws",
		roles: []string{RoleEBS},
		role:  "ebs", encrypted: nil, by: ByHypervisor, algorithm: "AES-256-XTS",
		// EBS encryption is per volume, done on the EC2 host; the guest sees the same device either way.
		source: "https://docs.aws.amazon.com/kms/latest/cryptographic-details/ebs-volume-encryption.html",
		note:   "EBS encryption is set per volume and applied on the Nitro host; not visible from inside",
	},
	{
		id: "azure-eah-temp-nvme", provider: "azure",
		roles: []string{RoleTempDisk}, transport: "nvme",
		eah: ptr(true), role: "temp-disk", encrypted: ptr(true), by: ByHypervisor, algorithm: "AES-256 (platform-managed key)",
		localSSD: true, // "the temporary disk that is created on local SSD" (https://learn.microsoft.com/azure/virtual-machines/enable-nvme-temp-faqs)
		// "Encryption at host enables encryption at rest for your temporary disk and OS/data disk caches."
		source: "https://learn.microsoft.com/azure/virtual-machines/disk-encryption#encryption-at-host---end-to-end-encryption-for-your-vm-data",
	},
	{
		id: "azure-eah-temp-scsi", provider: "azure",
		roles: []string{RoleTempDisk}, transport: "scsi",
		eah: ptr(true), role: "temp-disk", encrypted: ptr(true), by: ByHypervisor, algorithm: "AES-256 (platform-managed key)",
		localSSD: true,
		source:   "https://learn.microsoft.com/azure/virtual-machines/disk-encryption#encryption-at-host---end-to-end-encryption-for-your-vm-data",
	},
	{
		id: "azure-eah-managed", provider: "azure",
		roles: []string{RoleOSDisk, RoleDataDisk, RoleManagedDisk},
		eah:   ptr(true), role: "managed-disk", encrypted: ptr(true), by: ByHypervisor, algorithm: "AES-256",
		// "For disks with encryption at host enabled, the server hosting your VM provides
		// the encryption for your data, and that encrypted data flows into Azure Storage."
		source: "https://learn.microsoft.com/azure/virtual-machines/disk-encryption",
	},
	{
		id: "azure-temp-no-eah", provider: "azure",
		roles: []string{RoleTempDisk},
		eah:   ptr(false), role: "temp-disk", encrypted: ptr(false), localSSD: true,
		// "Temporary disks are not managed disks and are not encrypted by SSE, unless you enable encryption at host."
		source: "https://learn.microsoft.com/azure/virtual-machines/disk-encryption",
		// No Microsoft document was found that states hardware encryption of
		// local temp disks without encryption at host; none is assumed.
		note: "not encrypted by the platform: Azure SSE does not cover temp disks",
	},
	{
		id: "azure-managed-sse", provider: "azure",
		roles: []string{RoleOSDisk, RoleDataDisk, RoleManagedDisk},
		eah:   ptr(false), role: "managed-disk", encrypted: ptr(true), by: ByCloudStorage, algorithm: "AES-256",
		// "SSE automatically encrypts your data stored on Azure managed disks (OS and data disks) at rest by default"
		source: "https://learn.microsoft.com/azure/virtual-machines/disk-encryption",
	},
	{
		id: "gcp-local-ssd", provider: "gcp",
		roles: []string{RoleLocalSSD},
		role:  "local-ssd", encrypted: ptr(true), by: ByDrive, algorithm: "AES-256", localSSD: true,
		// "Compute Engine offers always-encrypted local solid-state drive (SSD) block storage"
		source: "https://cloud.google.com/compute/docs/disks/local-ssd",
	},
	{
		id: "gcp-persistent-disk", provider: "gcp",
		roles: []string{RolePersistentDisk},
		role:  "persistent-disk", encrypted: ptr(true), by: ByCloudStorage, algorithm: "AES-256",
		// Google encrypts all customer content at rest by default.
		source: "https://cloud.google.com/docs/security/encryption/default-encryption",
	},
	{
		id: "azure-v5-local-hardware", provider: "azure", roles: []string{RoleTempDisk}, minGen: 5, below: true,
		role: "local-disk-hardware", encrypted: ptr(true), by: ByDrive, algorithm: "hardware (drive)", localSSD: true,
		// Microsoft engineering found that encryption at host on VMs whose local
		// storage already uses hardware-level encryption encrypted it twice: the
		// incident behind slowpath. Azure's product pages do not state it.
		source: azureHardwareSource,
		note:   "reported by Microsoft engineering for v5+ local storage (not in Azure's product docs)",
	},
}

// lookupCloudDisk finds the cloud facts for a whole disk, top (nearest the
// VM) first; none when no identity rule of the snapshot's cloud names the
// disk. A disk can carry two platform layers: on Azure a v5+ temp disk is
// encrypted by the local hardware and, with encryption at host, again by
// the host — the double encryption this project was started for.
func lookupCloudDisk(c *snapshot.Cloud, d *snapshot.BlockDevice) []*CloudDisk {
	id := identifyDisk(c, d)
	if id == nil {
		return nil
	}
	if id.Role == RoleUnidentified {
		return unidentifiedAzureDisk(c, d, id)
	}
	return cloudFactsFor(c, d, id)
}

// cloudFactsFor returns the fact layers of an identified disk.
func cloudFactsFor(c *snapshot.Cloud, d *snapshot.BlockDevice, id *DiskIdentity) []*CloudDisk {
	top := lookupCloudFact(c, d, id, false)
	hw := lookupCloudFact(c, d, id, true)
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

// unidentifiedAzureDisk is an Msft Virtual Disk no Azure rule names (no
// VMBus device_id collected, e.g. an older snapshot): it is the temp disk
// or a managed disk, and which is not guessed, from size or otherwise.
// The layers of whichever reading has more encrypting layers are returned
// with their encryption unknown, so a possible double encryption is
// reported as unknown rather than passed.
func unidentifiedAzureDisk(c *snapshot.Cloud, d *snapshot.BlockDevice, id *DiskIdentity) []*CloudDisk {
	asTemp := cloudFactsFor(c, d, &DiskIdentity{Role: RoleTempDisk})
	asManaged := cloudFactsFor(c, d, &DiskIdentity{Role: RoleManagedDisk})
	layers := asManaged
	if encrypting(asTemp) >= encrypting(asManaged) {
		layers = asTemp
	}
	var out []*CloudDisk
	for _, l := range layers {
		u := *l
		if u.Encrypted == nil || *u.Encrypted {
			u.Encrypted = nil
		}
		u.Role = "disk (temp or managed?)"
		u.Fact = "azure-unidentified/" + l.Fact
		u.Identity = id
		u.Note = "not identified by Azure's rules (" + id.Evidence + "): temp disk or managed disk cannot be told apart; " +
			"if it is the " + l.Role + ": " + factSummary(l) + ". Re-collect with this slowpath version to read the VMBus device_id"
		out = append(out, &u)
	}
	return out
}

func encrypting(ls []*CloudDisk) int {
	n := 0
	for _, l := range ls {
		if l.Encrypted == nil || *l.Encrypted {
			n++
		}
	}
	return n
}

func factSummary(l *CloudDisk) string {
	switch {
	case l.Encrypted == nil:
		return "encryption not visible from inside"
	case *l.Encrypted:
		return "encrypted on " + l.EncryptedBy
	}
	return "not encrypted by the platform"
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

// lookupCloudFact finds the first cloudFacts row for an identified whole
// disk among the main rows, or among the below rows when below is set.
// Azure rows that depend on encryption at host are skipped when IMDS did
// not say (nil), and a note explains it instead.
func lookupCloudFact(c *snapshot.Cloud, d *snapshot.BlockDevice, id *DiskIdentity, below bool) *CloudDisk {
	var eah *bool
	gen := 0
	if c.Azure != nil {
		eah = c.Azure.EncryptionAtHost
		gen = azureGeneration(c.Azure.VMSize)
	}
	transport := ""
	if d.Ident != nil {
		transport = d.Ident.Transport
	}
	for i := range cloudFacts {
		f := &cloudFacts[i]
		if f.provider != c.Provider || f.below != below || gen < f.minGen {
			continue
		}
		if !slices.Contains(f.roles, id.Role) || f.transport != "" && f.transport != transport {
			continue
		}
		if f.eah != nil {
			if eah == nil {
				return &CloudDisk{Provider: c.Provider, Role: f.role, LocalSSD: f.localSSD, Fact: "azure-eah-unknown", Source: f.source,
					Note: "Azure instance metadata did not report securityProfile.encryptionAtHost; host encryption unknown", Identity: id}
			}
			if *f.eah != *eah {
				continue
			}
		}
		return &CloudDisk{Provider: c.Provider, Role: f.role, Encrypted: f.encrypted, EncryptedBy: f.by,
			Algorithm: f.algorithm, LocalSSD: f.localSSD, Fact: f.id, Source: f.source, Note: f.note, Identity: id}
	}
	return nil
}
