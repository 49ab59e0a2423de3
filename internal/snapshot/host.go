package snapshot

// Host is the machine's identity as the kernel reports it.
type Host struct {
	KernelRelease string `json:"kernel_release"` // uname -r
	// BootID is /proc/sys/kernel/random/boot_id (a UUID, new at every boot)
	// of the collecting host. MachineID is not /etc/machine-id itself,
	// which machine-id(5) calls confidential, but the app-specific id
	// derived from it as sd_id128_get_machine_app_specific(3) does (32 hex
	// digits; internal/collect/host/identity.go). fix refuses to change
	// this host from a snapshot whose identity is another's. Empty when
	// unread and in older snapshots.
	BootID    string `json:"boot_id,omitempty"`
	MachineID string `json:"machine_id,omitempty"`
	Arch      string `json:"arch,omitempty"` // uname -m
	NumCPU    int    `json:"num_cpu,omitempty"`
	CPUModel  string `json:"cpu_model,omitempty"`
	// CPUFlags are the flags of the first processor in /proc/cpuinfo, sorted.
	CPUFlags []string `json:"cpu_flags,omitempty"`
	DMI      *DMI     `json:"dmi,omitempty"`
	// Crypto lists the kernel's crypto implementations from /proc/crypto
	// for the algorithms slowpath cares about (aes, xts, ...).
	Crypto []CryptoAlg `json:"crypto,omitempty"`
	// Cipher is what AES-XTS costs on this CPU, measured briefly during
	// collection; nil when nothing on the host encrypts on its CPU (no dm
	// crypt target, no fscrypt), when the roots were not this host's (it
	// is a live-only source) or when the measurement failed (see
	// Manifest.Errors, collector "host.cipher").
	Cipher *CipherLimit `json:"cipher,omitempty"`
}

// CipherLimit is one core's AES-XTS throughput, as
// internal/workload/cipherlimit measures it (`slowpath lab crypto-limit`
// measures the same, longer and on all cores too).
type CipherLimit struct {
	Algorithm  string `json:"algorithm"` // xts(aes)
	KeyBits    int    `json:"key_bits"`
	SectorSize int    `json:"sector_size"`
	// Method is af_alg (the kernel's skcipher, what dm-crypt uses) or
	// user-space (Go's AES: a bound, not the kernel).
	Method string `json:"method"`
	// Driver is the kernel's xts(aes) implementation from /proc/crypto
	// (e.g. xts-aes-aesni); empty when /proc/crypto did not list one.
	Driver             string  `json:"driver,omitempty"`
	BytesPerSecPerCore float64 `json:"bytes_per_sec_per_core"`
	// What says in words what was measured.
	What       string `json:"what"`
	DurationMS int64  `json:"duration_ms"` // how long the measurement ran
	// Why names what made the collector measure: the encrypting device or mount.
	Why string `json:"why"`
}

// DMI is /sys/class/dmi/id: how the firmware names the machine. Clouds
// identify themselves here (Azure chassis_asset_tag, "Amazon EC2", "Google").
type DMI struct {
	SysVendor       string `json:"sys_vendor,omitempty"`
	ProductName     string `json:"product_name,omitempty"`
	ProductVersion  string `json:"product_version,omitempty"`
	BoardVendor     string `json:"board_vendor,omitempty"`
	BIOSVendor      string `json:"bios_vendor,omitempty"`
	ChassisAssetTag string `json:"chassis_asset_tag,omitempty"`
}

// CryptoAlg is one entry of /proc/crypto.
type CryptoAlg struct {
	Name     string `json:"name"`
	Driver   string `json:"driver"`
	Module   string `json:"module,omitempty"`
	Priority int    `json:"priority"`
	Type     string `json:"type,omitempty"`
}
