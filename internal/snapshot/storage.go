package snapshot

// Storage is what the storage collectors read: mounts and block devices with
// their stacking relations. It holds facts only; the path model is built
// from it by internal/model/storagemodel.
type Storage struct {
	Mounts       []Mount       `json:"mounts,omitempty"`
	BlockDevices []BlockDevice `json:"block_devices,omitempty"`
	// Windowed marks the agent's snapshot: checks judge the devices'
	// StatWindow, the counts over the last StatWindowMS (the scrape
	// interval; 0 on the first scrape, which has no interval yet), not the
	// since-boot Stat. Saved snapshots leave both unset.
	Windowed     bool  `json:"windowed,omitempty"`
	StatWindowMS int64 `json:"stat_window_ms,omitempty"`
}

// Mount is one line of /proc/self/mountinfo (proc(5)), plus what was learnt
// about the mount root.
type Mount struct {
	MountID    int    `json:"mount_id"`
	ParentID   int    `json:"parent_id"`
	MajorMinor string `json:"major_minor"` // "254:0"; 0:N for virtual filesystems
	Root       string `json:"root"`        // path within the filesystem
	MountPoint string `json:"mount_point"`
	Options    string `json:"options,omitempty"`
	FSType     string `json:"fs_type"`
	Source     string `json:"source,omitempty"`
	SuperOpts  string `json:"super_options,omitempty"`
	// Fscrypt is the fscrypt policy of the mount root, nil when the root is
	// not encrypted or the check could not run (see Manifest.Errors).
	Fscrypt *Fscrypt `json:"fscrypt,omitempty"`
	// FscryptStatus says whether the root was checked: "encrypted" (Fscrypt
	// is set), "not_encrypted", "unsupported" (the filesystem or its
	// feature flags lack fscrypt) or empty when it was not checked (a
	// filesystem type without fscrypt support, or an error in Manifest.Errors).
	FscryptStatus string `json:"fscrypt_status,omitempty"`
}

// Fscrypt status values of Mount.FscryptStatus.
const (
	FscryptEncrypted    = "encrypted"
	FscryptNotEncrypted = "not_encrypted"
	FscryptUnsupported  = "unsupported"
)

// Fscrypt is a file-based encryption policy (FS_IOC_GET_ENCRYPTION_POLICY_EX).
type Fscrypt struct {
	Version       int    `json:"version"`
	ContentsMode  string `json:"contents_mode"` // e.g. AES-256-XTS
	FilenamesMode string `json:"filenames_mode"`
}

// Block device kinds as slowpath names them.
const (
	KindDisk      = "disk"
	KindPartition = "partition"
	KindDM        = "dm"
	KindMD        = "md"
	KindLoop      = "loop"
	KindZram      = "zram"
	KindRAM       = "ram" // brd ramdisk
	KindOther     = "other"
)

// BlockDevice is one entry of /sys/class/block.
type BlockDevice struct {
	Name       string `json:"name"`        // kernel name: sda, sda1, dm-0, loop3
	MajorMinor string `json:"major_minor"` // from dev
	Kind       string `json:"kind"`        // one of the Kind constants
	// Parent is the whole disk of a partition.
	Parent    string `json:"parent,omitempty"`
	SizeBytes uint64 `json:"size_bytes"` // size is in 512-byte sectors in sysfs
	ReadOnly  bool   `json:"read_only,omitempty"`
	Removable bool   `json:"removable,omitempty"`
	// Slaves are the devices this one is built on; Holders those built on it.
	Slaves  []string  `json:"slaves,omitempty"`
	Holders []string  `json:"holders,omitempty"`
	Queue   *Queue    `json:"queue,omitempty"`
	DM      *DM       `json:"dm,omitempty"`
	Loop    *Loop     `json:"loop,omitempty"`
	MD      *MD       `json:"md,omitempty"`
	Ident   *Identity `json:"identity,omitempty"`
	// Stat is the device's cumulative I/O counters since boot; nil when
	// /sys/class/block/NAME/stat was absent or unreadable.
	Stat *BlockStat `json:"stat,omitempty"`
	// StatWindow is Stat minus the same counters StatWindowMS earlier
	// (the agent fills it for devices on encrypted paths); nil otherwise.
	StatWindow *BlockStat `json:"stat_window,omitempty"`
}

// BlockStat is /sys/class/block/NAME/stat: counters since boot (or since
// the device appeared), in the order and units of the kernel's
// Documentation/block/stat.rst. Fields says how many the kernel printed:
// 11 on every kernel, 15 with the discard fields (4.18+), 17 with the
// flush fields (5.5+); the later ones are zero when absent.
type BlockStat struct {
	Fields         int    `json:"fields"`
	ReadIOs        uint64 `json:"read_ios"`
	ReadMerges     uint64 `json:"read_merges"`
	ReadSectors    uint64 `json:"read_sectors"` // 512-byte units, whatever the block size
	ReadTicksMS    uint64 `json:"read_ticks_ms"`
	WriteIOs       uint64 `json:"write_ios"`
	WriteMerges    uint64 `json:"write_merges"`
	WriteSectors   uint64 `json:"write_sectors"`
	WriteTicksMS   uint64 `json:"write_ticks_ms"`
	InFlight       uint64 `json:"in_flight"`
	IOTicksMS      uint64 `json:"io_ticks_ms"`      // time the device had I/O in flight
	TimeInQueueMS  uint64 `json:"time_in_queue_ms"` // sum over I/Os of their wait
	DiscardIOs     uint64 `json:"discard_ios,omitempty"`
	DiscardMerges  uint64 `json:"discard_merges,omitempty"`
	DiscardSectors uint64 `json:"discard_sectors,omitempty"`
	DiscardTicksMS uint64 `json:"discard_ticks_ms,omitempty"`
	FlushIOs       uint64 `json:"flush_ios,omitempty"`
	FlushTicksMS   uint64 `json:"flush_ticks_ms,omitempty"`
}

// Queue is /sys/block/NAME/queue. Pointers are nil when the file is absent.
type Queue struct {
	Rotational        *bool    `json:"rotational,omitempty"`
	LogicalBlockSize  int      `json:"logical_block_size,omitempty"`
	PhysicalBlockSize int      `json:"physical_block_size,omitempty"`
	Scheduler         string   `json:"scheduler,omitempty"` // the active one, e.g. "none"
	Schedulers        []string `json:"schedulers,omitempty"`
	NrRequests        int      `json:"nr_requests,omitempty"`
	ReadAheadKB       int      `json:"read_ahead_kb,omitempty"`
}

// DM is a device-mapper device: /sys/block/dm-N/dm plus its table as the
// DM_TABLE_STATUS ioctl (or dmsetup table) reports it.
type DM struct {
	Name    string     `json:"name"`
	UUID    string     `json:"uuid,omitempty"` // e.g. CRYPT-LUKS2-<uuid>-NAME
	Targets []DMTarget `json:"targets,omitempty"`
	// TableNotRead says why Targets is unknown (the DM ioctl was not run
	// or failed); empty when the table was read, so no targets then means
	// a device without a table.
	TableNotRead string `json:"table_not_read,omitempty"`
	// LUKS is the LUKS header of a cryptsetup LUKS mapping, read from the
	// device beneath it: what can open the volume, never a key, a salt or
	// a token's contents. nil for other mappings.
	LUKS *LUKSHeader `json:"luks,omitempty"`
}

// LUKSHeader is what a LUKS header says about opening its volume
// (cryptsetup's on-disk format: LUKS1 key slots; LUKS2 JSON metadata).
type LUKSHeader struct {
	// Device is the kernel name of the device the header was read from.
	Device string `json:"device"`
	// Version is 1 or 2; 0 when the header was not read.
	Version int `json:"version,omitempty"`
	// Keyslots are the key slots that can open the volume, by number:
	// active (LUKS1), of type luks2 and not priority ignore (LUKS2; not
	// the slot a reencryption keeps).
	Keyslots []int `json:"keyslots,omitempty"`
	// Tokens are LUKS2 tokens: how a key slot is opened without typing a
	// passphrase (systemd-tpm2, systemd-fido2, systemd-pkcs11, clevis,
	// luks2-keyring, ...). Only the type and the slots are kept.
	Tokens []LUKSToken `json:"tokens,omitempty"`
	// Flags are LUKS2's persistent activation flags (config.flags, as
	// cryptsetup refresh --persistent stores them: no-read-workqueue, ...).
	Flags []string `json:"flags,omitempty"`
	// NotRead says why the header is unknown: not readable (privilege),
	// no LUKS magic (a detached header), a foreign root.
	NotRead string `json:"not_read,omitempty"`
}

// LUKSToken is one LUKS2 token: its type and the key slots it opens.
type LUKSToken struct {
	Type     string `json:"type"`
	Keyslots []int  `json:"keyslots,omitempty"`
}

// DMTarget is one line of a dm table.
//
// Params is the target's parameter string exactly as the kernel prints it,
// except that for crypt targets the key field is replaced at collection time:
// a hex key becomes "redacted:<bits>" (its length in bits); a keyring
// reference (":32:logon:desc") names a key rather than containing it and is
// kept. Key material never enters a snapshot.
type DMTarget struct {
	Start  uint64 `json:"start"`  // sectors
	Length uint64 `json:"length"` // sectors
	Type   string `json:"type"`   // crypt, linear, striped, integrity, ...
	Params string `json:"params"`
}

// Loop is /sys/block/loopN/loop.
type Loop struct {
	BackingFile string `json:"backing_file"`
	Offset      uint64 `json:"offset,omitempty"`
	DirectIO    bool   `json:"dio,omitempty"`
	// BackingDevice is major:minor of the filesystem holding BackingFile,
	// when it could be determined (stat of the backing file).
	BackingDevice string `json:"backing_device,omitempty"`
	// BackingBlockDevice is major:minor of BackingFile itself when it is
	// a block device node (losetup /dev/sdb) rather than a regular file.
	BackingBlockDevice string `json:"backing_block_device,omitempty"`
}

// MD is /sys/block/mdN/md.
type MD struct {
	Level string `json:"level"` // raid0, raid1, ...
}

// Identity is what the device says it is.
type Identity struct {
	Transport string `json:"transport,omitempty"` // nvme, scsi, virtio, ata, mmc, ...
	Vendor    string `json:"vendor,omitempty"`
	Model     string `json:"model,omitempty"`
	Firmware  string `json:"firmware,omitempty"`
	// VMBusDeviceID is the device_id attribute of the Hyper-V VMBus device
	// the disk hangs off (the first ancestor in its sysfs device path that
	// has one, as udev's ATTRS{device_id} matches), e.g.
	// "{00000000-0001-8899-0000-000000000000}". Azure's own udev rules name
	// the OS and temp (resource) disks by it; empty off Hyper-V.
	VMBusDeviceID string `json:"vmbus_device_id,omitempty"`
	// SCSIAddress is the SCSI host:channel:target:lun of a SCSI disk, the
	// name of its device/ link target (e.g. "0:0:0:1"); Azure Gen2 VMs tell
	// the OS disk (LUN 0) from the temp disk (LUN 1) by it.
	SCSIAddress string `json:"scsi_address,omitempty"`
	// NVMeNSID is the namespace id of an NVMe disk (nsid); 0 when unknown.
	// Azure's remote NVMe controller puts the OS disk at 1, data disks at 2+.
	NVMeNSID int `json:"nvme_nsid,omitempty"`
	// NVMeTransport is the transport of an NVMe disk's controller: pcie
	// for a local drive; tcp, rdma or fc for NVMe over Fabrics, where the
	// target (often SPDK: Longhorn v2, OpenEBS Mayastor) may encrypt in
	// user space, out of the kernel's sight. Empty when unknown.
	NVMeTransport string `json:"nvme_transport,omitempty"`
	// Serial is deliberately not collected: it identifies hardware and no
	// cloud's identity rule needs it to tell a disk's role.
}
