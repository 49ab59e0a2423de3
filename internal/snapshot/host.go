package snapshot

import "time"

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
	// OS is the distribution, from os-release(5); nil when neither
	// /etc/os-release nor /usr/lib/os-release could be read.
	OS *OS `json:"os,omitempty"`
	// Tuners are other programs that change kernel settings on their own
	// (bpftune, tuned, slowpath's node-tuning DaemonSet), as seen in the
	// process table and their files; empty when none was seen.
	Tuners []Tuner `json:"tuners,omitempty"`
	// Fixes are the runtime settings `slowpath fix --apply` changed on
	// this host that still hold (its state file, this boot's changes):
	// which node runs which change, for the agent's slowpath_fix_applied
	// and a fleet's canaries. Empty when slowpath changed nothing.
	Fixes []AppliedFix `json:"fixes,omitempty"`
}

// AppliedFix is one runtime setting slowpath's fix changed.
type AppliedFix struct {
	ID      string `json:"id"`      // the finding's check id: net.backlog-drops
	Subject string `json:"subject"` // what it fired on: a device, an interface, the host
	Key     string `json:"key"`     // the setting: sysctl net.core.netdev_max_backlog
	Value   string `json:"value"`   // the value slowpath set
	// AppliedAt is when slowpath set it; zero when its state file did not
	// record it (written before slowpath recorded times).
	AppliedAt time.Time `json:"applied_at,omitzero"`
}

// OS is what os-release(5) says the distribution is. Platforms that
// build dm-crypt volumes themselves (Bottlerocket, Talos, Flatcar, Fedora
// CoreOS) each have their own setting for its flags; the findings name it.
type OS struct {
	ID         string `json:"id"`                   // bottlerocket, talos, flatcar, fedora, debian
	VersionID  string `json:"version_id,omitempty"` // 1.36.0
	VariantID  string `json:"variant_id,omitempty"` // aws-k8s-1.31 (Bottlerocket), coreos (FCOS)
	PrettyName string `json:"pretty_name,omitempty"`
}

// CipherLimit is one core's AES-XTS throughput, as
// internal/collect/cipherlimit measures it (`slowpath lab crypto-limit`
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

// Tuner is another program that sets kernel knobs on its own. An A/B of a
// knob it drives measures the tuner, not the change, and a value slowpath
// persists may be set back by it: fix refuses such knobs and
// net.tuner-conflict names them.
type Tuner struct {
	// Name is bpftune, tuned or slowpath-node-tuning (the DaemonSet that
	// `slowpath fix --format kubernetes` writes, by the marker it leaves).
	Name string `json:"name"`
	// PID is a running process of it (0: none seen, e.g. tuned stopped
	// with an active profile left behind).
	PID int `json:"pid,omitempty"`
	// Seen are the files that showed it: /proc/812/comm,
	// /etc/tuned/active_profile, /run/slowpath/node-tuning.
	Seen []string `json:"seen"`
	// Profile is tuned's active profile line (one name or several).
	Profile string `json:"profile,omitempty"`
	// Sysctls are the sysctls its configuration sets (tuned's merged
	// [sysctl] units, the DaemonSet's marker). bpftune's come from what
	// each of its tuners drives, which analysis knows, not from files.
	Sysctls []TunerSysctl `json:"sysctls,omitempty"`
	// Rings are the NIC ring settings its configuration makes.
	Rings []TunerRing `json:"rings,omitempty"`
	// Plugins are bpftune's tuners found in its library directory
	// (net_buffer_tuner, tcp_buffer_tuner, ...); empty when not read.
	Plugins []string `json:"plugins,omitempty"`
}

// TunerSysctl is one sysctl a tuner sets, as its configuration spells it.
type TunerSysctl struct {
	Key   string `json:"key"` // dotted: net.core.netdev_max_backlog
	Value string `json:"value,omitempty"`
}

// TunerRing is one ring setting: tuned's [net] ring= option for the
// devices its unit matches ("" or "*": every interface).
type TunerRing struct {
	Devices string `json:"devices,omitempty"`
	Value   string `json:"value"` // rx 4096 tx 4096
}
