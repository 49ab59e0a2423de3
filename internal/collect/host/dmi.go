package host

import (
	"os"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// collectDMI reads the world-readable identity attributes under
// /sys/class/dmi/id (drivers/firmware/dmi-id.c). Clouds name themselves
// here, which decides whether instance metadata is worth asking.
// Serial numbers and UUIDs are root-only and deliberately not read.
//
// A machine without SMBIOS (many VMs, most ARM boards) has no directory:
// that is recorded once. A single absent attribute is normal and quiet.
func collectDMI(fs hostfs.FS, h *snapshot.Host, s *snapshot.Snapshot) {
	dir := fs.SysPath("class", "dmi", "id")
	if _, err := os.Stat(dir); err != nil {
		s.AddError("host.dmi", dir, err)
		return
	}
	d := &snapshot.DMI{}
	for _, a := range []struct {
		file string
		dst  *string
	}{
		{"sys_vendor", &d.SysVendor},
		{"product_name", &d.ProductName},
		{"product_version", &d.ProductVersion},
		{"board_vendor", &d.BoardVendor},
		{"bios_vendor", &d.BIOSVendor},
		{"chassis_asset_tag", &d.ChassisAssetTag},
	} {
		p := fs.SysPath("class", "dmi", "id", a.file)
		v, err := hostfs.ReadValue(p)
		if err != nil {
			if hostfs.Classify(err) != hostfs.KindMissing {
				s.AddError("host.dmi", p, err)
			}
			continue
		}
		*a.dst = v
	}
	h.DMI = d
}
