package snapshot

// Host is the machine's identity as the kernel reports it.
type Host struct {
	KernelRelease string `json:"kernel_release"` // uname -r
	Arch          string `json:"arch,omitempty"` // uname -m
	NumCPU        int    `json:"num_cpu,omitempty"`
	CPUModel      string `json:"cpu_model,omitempty"`
	// CPUFlags are the flags of the first processor in /proc/cpuinfo, sorted.
	CPUFlags []string `json:"cpu_flags,omitempty"`
	DMI      *DMI     `json:"dmi,omitempty"`
	// Crypto lists the kernel's crypto implementations from /proc/crypto
	// for the algorithms slowpath cares about (aes, xts, ...).
	Crypto []CryptoAlg `json:"crypto,omitempty"`
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
