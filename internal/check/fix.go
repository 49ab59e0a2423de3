package check

// Fix is the structured form of a finding's remediation: what `slowpath fix`
// plans, applies and persists. Checks fill it from the same facts they put in
// the evidence, so the plan never parses the prose of Remediation. A finding
// whose fix is not a host setting (a reformat, an application change) has no
// Fix, or only Cloud or Manual steps.
type Fix struct {
	// Sysctls are runtime sysctl settings (persisted as an /etc/sysctl.d drop-in).
	Sysctls []SysctlChange `json:"sysctls,omitempty"`
	// Rings are NIC ring sizes (persisted as a udev rule / systemd .link file).
	Rings []RingChange `json:"rings,omitempty"`
	// Crypt adds dm-crypt performance flags to a mapping (a table reload now;
	// the LUKS2 header or /etc/crypttab to keep it).
	Crypt *CryptChange `json:"crypt,omitempty"`
	// Cloud are changes made at the cloud provider: printed, never run.
	Cloud []CloudChange `json:"cloud,omitempty"`
	// Schedulers set the I/O scheduler of block devices (persisted as a
	// udev rule).
	Schedulers []SchedulerChange `json:"schedulers,omitempty"`
}

// SchedulerChange sets the I/O scheduler of one block device's queue
// (/sys/block/DEVICE/queue/scheduler).
type SchedulerChange struct {
	Device string `json:"device"` // kernel name, e.g. nvme0n1
	From   string `json:"from"`
	To     string `json:"to"`
	// Available are the schedulers the queue offers (the file's words).
	Available []string `json:"available,omitempty"`
}

// SysctlChange sets one integer sysctl.
type SysctlChange struct {
	Key string `json:"key"` // dotted name, e.g. net.core.netdev_max_backlog
	// From is the value observed in the snapshot, nil when it was not read.
	From *int64 `json:"from,omitempty"`
	To   int64  `json:"to"`
}

// RingChange sets the RX (and optionally TX) ring of one interface.
type RingChange struct {
	Interface string `json:"interface"`
	Driver    string `json:"driver,omitempty"`
	// BusInfo names the device independently of the interface name (udev
	// and .link files can match on it).
	BusInfo string `json:"bus_info,omitempty"`
	RXFrom  uint32 `json:"rx_from"`
	RX      uint32 `json:"rx"`
	RXMax   uint32 `json:"rx_max"` // the driver's maximum as reported
}

// CryptChange adds flags to a dm-crypt mapping's optional parameters.
type CryptChange struct {
	Name string `json:"name"` // dm name (/dev/mapper/NAME)
	// Format is luks2, luks1 or plain (from the dm uuid cryptsetup sets).
	Format string `json:"format"`
	// Add are the flags to add in the kernel's table spelling
	// (no_read_workqueue); Keep are the flags already set that a
	// `cryptsetup refresh` must repeat so they are not dropped.
	Add  []string `json:"add"`
	Keep []string `json:"keep,omitempty"`
	// KeyInKeyring is true when the table names a kernel keyring key
	// instead of holding the key: a reload then needs the key loaded again,
	// which only cryptsetup with the passphrase can do.
	KeyInKeyring bool `json:"key_in_keyring,omitempty"`
	// Opens says what opens the volume, from its LUKS header: what a
	// cryptsetup refresh asks for. Empty when the header was not read.
	Opens []Opener `json:"opens,omitempty"`
	// Device is the device that holds the LUKS header (/dev/NAME), when
	// read: clevis luks pass reads it.
	Device string `json:"device,omitempty"`
	// Butane is the Butane config fragment that opens the volume with the
	// flags on nodes provisioned from now on (Flatcar, Fedora CoreOS,
	// RHCOS: Ignition creates and opens their LUKS volumes); "" elsewhere.
	Butane string `json:"butane,omitempty"`
}

// Opener is one way into a LUKS volume: OpenerPassphrase (key slots no
// token opens: a passphrase or a key file) or a LUKS2 token type
// (systemd-tpm2, systemd-fido2, systemd-pkcs11, clevis, luks2-keyring, or
// one slowpath does not know), with the key slots it opens.
type Opener struct {
	Kind     string `json:"kind"`
	Keyslots []int  `json:"keyslots,omitempty"`
}

// OpenerPassphrase is the Opener of key slots no token opens.
const OpenerPassphrase = "passphrase"

// CloudChange is one change at the cloud provider, with the exact CLI.
type CloudChange struct {
	Provider string   `json:"provider"`
	What     string   `json:"what"`
	Commands []string `json:"commands"`
	// Setting names what the change sets in the snapshot's terms, so the
	// plan can be checked on paper (CloudAzureEAHOff); "" when it sets
	// nothing the snapshot records.
	Setting string `json:"setting,omitempty"`
}

// CloudAzureEAHOff is the CloudChange.Setting that turns Azure encryption
// at host off: cloud.azure.encryption_at_host becomes false.
const CloudAzureEAHOff = "azure.encryption_at_host=false"
