package snapshot

// Cloud is what slowpath learnt about the cloud the host runs in: from DMI
// and, when DMI names a cloud or --cloud says so, its instance metadata
// service. Nil means no cloud was detected.
type Cloud struct {
	Provider string `json:"provider"` // azure, aws, gcp
	// DetectedBy is "dmi" or "flag".
	DetectedBy   string `json:"detected_by"`
	InstanceType string `json:"instance_type,omitempty"` // vmSize, instance-type, machine-type
	Region       string `json:"region,omitempty"`
	// MetadataError says why instance metadata could not be read, when it could not.
	MetadataError string     `json:"metadata_error,omitempty"`
	Azure         *AzureMeta `json:"azure,omitempty"`
	AWS           *AWSMeta   `json:"aws,omitempty"`
	GCP           *GCPMeta   `json:"gcp,omitempty"`
}

// AzureMeta is the part of Azure IMDS /metadata/instance that matters.
type AzureMeta struct {
	VMSize string `json:"vm_size"`
	// EncryptionAtHost is securityProfile.encryptionAtHost; nil when IMDS
	// did not say (older api-version).
	EncryptionAtHost *bool `json:"encryption_at_host,omitempty"`
	// ResourceDiskSizeMB is storageProfile.resourceDisk.size as IMDS sends
	// it. Microsoft documents it in kB; public outputs read as MiB. It only
	// corroborates the temp disk's identity (the VMBus device_id decides);
	// the name is kept so older snapshots load.
	ResourceDiskSizeMB int `json:"resource_disk_size_mb,omitempty"`
	// EphemeralOSDisk is true when storageProfile.osDisk.diffDiskSettings.option is "Local".
	EphemeralOSDisk bool `json:"ephemeral_os_disk,omitempty"`
}

// AWSMeta is the part of EC2 IMDS that matters.
type AWSMeta struct {
	InstanceType string `json:"instance_type"`
	// BlockDeviceMapping is meta-data/block-device-mapping: name → device.
	BlockDeviceMapping map[string]string `json:"block_device_mapping,omitempty"`
}

// GCPMeta is the part of the GCE metadata server that matters.
type GCPMeta struct {
	MachineType string    `json:"machine_type"`
	Disks       []GCPDisk `json:"disks,omitempty"`
}

// GCPDisk is one instance/disks/N entry.
type GCPDisk struct {
	DeviceName string `json:"device_name"`
	Type       string `json:"type"`      // PERSISTENT or LOCAL-SSD
	Interface  string `json:"interface"` // SCSI or NVME
	Mode       string `json:"mode,omitempty"`
}
