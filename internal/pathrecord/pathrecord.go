// Package pathrecord is a storage path's facts as the files slowpath writes
// keep them: a bench result's target (benchresult.TargetPath.Storage) and a
// capture's manifest (capfile.Manifest.Path). It is plain data, the same
// JSON as doctor's model of the path (internal/model/storagemodel), which
// builds it; a field the model gains is not written to these files until it
// is added here, as a change of their schema (storagemodel's record test
// fails until then).
package pathrecord

import "github.com/slowpath/slowpath/internal/snapshot"

// Path is one storage path: a mount point or an unmounted device, its
// layers top first.
type Path struct {
	MountPoint       string   `json:"mountpoint,omitempty"`
	Device           string   `json:"device,omitempty"`
	AlsoMountedAt    []string `json:"also_mounted_at,omitempty"`
	EncryptionLayers int      `json:"encryption_layers"`
	// UnknownEncryptionLayers counts layers whose encryption cannot be
	// known from inside.
	UnknownEncryptionLayers int      `json:"unknown_encryption_layers,omitempty"`
	Layers                  []Layer  `json:"layers"`
	Incomplete              []string `json:"incomplete,omitempty"`
	Empty                   bool     `json:"empty,omitempty"`
}

// Layer is one layer of a path. Kind is filesystem, fscrypt, dm-crypt,
// loop, md, partition, disk, zram, ram, cloud-disk, missing, userspace,
// engine or dm-<target>.
type Layer struct {
	Kind              string `json:"kind"`
	Name              string `json:"name"`
	Encrypted         bool   `json:"encrypted"`
	EncryptedBy       string `json:"encrypted_by,omitempty"`
	EncryptionUnknown bool   `json:"encryption_unknown,omitempty"`
	Depth             int    `json:"depth"`
	Device            string `json:"device,omitempty"`
	MajorMinor        string `json:"major_minor,omitempty"`
	SizeBytes         uint64 `json:"size_bytes,omitempty"`

	FSType        string               `json:"fstype,omitempty"`
	Fscrypt       *snapshot.Fscrypt    `json:"fscrypt,omitempty"`
	DMUUID        string               `json:"dm_uuid,omitempty"`
	DMTargets     []string             `json:"dm_targets,omitempty"`
	Crypt         *Crypt               `json:"crypt,omitempty"`
	LUKS          *snapshot.LUKSHeader `json:"luks,omitempty"`
	InferredCrypt *InferredCrypt       `json:"inferred_crypt,omitempty"`
	BackingFile   string               `json:"backing_file,omitempty"`
	DirectIO      bool                 `json:"direct_io,omitempty"`
	MDLevel       string               `json:"md_level,omitempty"`
	Queue         *snapshot.Queue      `json:"queue,omitempty"`
	Ident         *snapshot.Identity   `json:"identity,omitempty"`
	Cloud         *CloudDisk           `json:"cloud,omitempty"`
	Engines       []EngineProcess      `json:"engines,omitempty"`
	Note          string               `json:"note,omitempty"`
}

// EngineProcess is a database process encrypting its own files on the
// path (an engine layer's).
type EngineProcess struct {
	Engine    string                      `json:"engine"`
	Product   string                      `json:"product,omitempty"`
	PID       int                         `json:"pid"`
	Comm      string                      `json:"comm"`
	Container string                      `json:"container,omitempty"`
	DataDir   string                      `json:"data_dir,omitempty"`
	Path      string                      `json:"path,omitempty"`
	Settings  []snapshot.EngineEncryption `json:"settings"`
}

// Crypt is a dm-crypt table line with the key reduced to its size.
type Crypt struct {
	CipherSpec          string   `json:"cipher_spec"`
	Cipher              string   `json:"cipher"`
	ChainMode           string   `json:"chain_mode,omitempty"`
	IVMode              string   `json:"iv_mode,omitempty"`
	IVOpts              string   `json:"iv_opts,omitempty"`
	KeyCount            int      `json:"key_count,omitempty"`
	Capi                bool     `json:"capi,omitempty"`
	AuthMode            string   `json:"auth_mode,omitempty"`
	KeyBits             int      `json:"key_bits"`
	KeySource           string   `json:"key_source"`
	KeyringType         string   `json:"keyring_type,omitempty"`
	IVOffset            uint64   `json:"iv_offset"`
	Device              string   `json:"device"`
	Offset              uint64   `json:"offset"`
	SectorSize          int      `json:"sector_size"`
	AllowDiscards       bool     `json:"allow_discards,omitempty"`
	SameCPUCrypt        bool     `json:"same_cpu_crypt,omitempty"`
	SubmitFromCryptCPUs bool     `json:"submit_from_crypt_cpus,omitempty"`
	NoReadWorkqueue     bool     `json:"no_read_workqueue,omitempty"`
	NoWriteWorkqueue    bool     `json:"no_write_workqueue,omitempty"`
	HighPriority        bool     `json:"high_priority,omitempty"`
	IVLargeSectors      bool     `json:"iv_large_sectors,omitempty"`
	Integrity           string   `json:"integrity,omitempty"`
	IntegrityKeySize    int      `json:"integrity_key_size,omitempty"`
	Unknown             []string `json:"unknown_params,omitempty"`
}

// InferredCrypt is dm-crypt known from a mapping's uuid, its table unread.
type InferredCrypt struct {
	Type          string `json:"type"`
	AssumedCipher string `json:"assumed_cipher,omitempty"`
	AssumedFrom   string `json:"assumed_from,omitempty"`
	TableNotRead  string `json:"table_not_read"`
}

// CloudDisk is what a cloud disk is and how the platform encrypts it.
type CloudDisk struct {
	Provider    string        `json:"provider"`
	Role        string        `json:"role"`
	Encrypted   *bool         `json:"encrypted"`
	EncryptedBy string        `json:"encrypted_by,omitempty"`
	Algorithm   string        `json:"algorithm,omitempty"`
	LocalSSD    bool          `json:"local_ssd,omitempty"`
	Fact        string        `json:"fact"`
	Source      string        `json:"source"`
	Note        string        `json:"note,omitempty"`
	Identity    *DiskIdentity `json:"identity,omitempty"`
}

// DiskIdentity is what a cloud's own tooling calls a disk, by which rule.
type DiskIdentity struct {
	Role          string `json:"role"`
	Rule          string `json:"rule"`
	Source        string `json:"source"`
	Evidence      string `json:"evidence"`
	Corroboration string `json:"corroboration,omitempty"`
}
