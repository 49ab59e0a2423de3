package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// The attributes below are the ones the clouds' own udev rules read to
// tell a disk's role; the model (internal/model/storagemodel/cloudid.go)
// applies the rules. Collected here:
//
//   - device_id of the VMBus device above a SCSI disk: Azure's
//     ATTRS{device_id}=="?00000000-0001-*" (resource disk) and
//     "?00000000-0000-*" (root) in Azure/WALinuxAgent
//     config/66-azure-storage.rules and Azure/azure-vm-utils
//     udev/80-azure-disk.rules. device_id is printed by
//     drivers/hv/vmbus_drv.c device_id_show() as "{%pUl}".
//   - the SCSI address: the same rules read the LUN with
//     `readlink /sys/class/block/%k/device | cut -d: -f4` (Gen2 VMs: LUN 0
//     the OS disk, LUN 1 the resource disk on controller
//     {f8b3781a-1e82-4818-a1c3-63d806ec15bb}).
//   - nsid of an NVMe namespace: azure-vm-utils src/identify_disks.c
//     (MSFT NVMe Accelerator v1.0: nsid 1 is the OS disk, 2+ data disks).
//
// Model and vendor (device/model, device/vendor) are read by readIdentity.

// maxSysfsDepth bounds the walk up a device path; real paths are about a
// dozen directories deep.
const maxSysfsDepth = 32

// readCloudIdentity adds the identity attributes cloud udev rules read.
// link is the class/block entry's symlink target, relative to a.dir's
// directory.
func readCloudIdentity(a *attrReader, link string, id *snapshot.Identity) {
	switch id.Transport {
	case "scsi":
		if link != "" {
			id.VMBusDeviceID = readVMBusDeviceID(a, deviceDir(a.dir, link))
		}
		if target, err := os.Readlink(filepath.Join(a.dir, "device")); err == nil {
			addr := filepath.Base(target)
			if _, err := snapshot.ParseSCSIAddress(addr); err != nil {
				p := filepath.Join(a.dir, "device")
				a.errs = append(a.errs, pathError{p, fmt.Errorf("%s: %w", p, err)})
			} else {
				id.SCSIAddress = addr
			}
		} else if hostfs.Classify(err) != hostfs.KindMissing {
			p := filepath.Join(a.dir, "device")
			a.errs = append(a.errs, pathError{p, fmt.Errorf("read link %s: %w", p, err)})
		}
	case "nvme":
		if n, ok := a.uint("nsid", false); ok {
			if n == 0 || n > 0xFFFFFFFE {
				// NVMe base spec: 0 and FFFFFFFFh are not valid namespace ids.
				p := filepath.Join(a.dir, "nsid")
				a.errs = append(a.errs, pathError{p, fmt.Errorf("%s: %d is not a valid NVMe namespace id", p, n)})
			} else {
				id.NVMeNSID = int(n)
			}
		}
		id.NVMeTransport = readNVMeTransport(a)
	}
}

// readNVMeTransport reads the transport of the controller behind an NVMe
// namespace (drivers/nvme/host/core.c nvme_sysfs_show_transport: pcie,
// tcp, rdma, fc, loop, apple-nvme). A namespace's device/ is its
// controller; a multipath head's is the subsystem, whose controllers are
// its nvmeN entries, all of one fabric in practice: the first is read.
func readNVMeTransport(a *attrReader) string {
	if v, ok := a.read("device/transport", false); ok {
		return v
	}
	ctrls, _ := filepath.Glob(filepath.Join(a.dir, "device", "nvme[0-9]*", "transport"))
	for _, c := range ctrls {
		rel, err := filepath.Rel(a.dir, c)
		if err != nil {
			continue
		}
		if v, ok := a.read(rel, false); ok {
			return v
		}
	}
	return ""
}

// deviceDir resolves a block device's symlink target to its device
// directory under the same sysfs root. entry is the link itself,
// <sys>/class/block/NAME or <sys>/block/NAME. A relative target is taken
// from the link's directory; an absolute one (/sys/devices/...) is mapped
// under <sys>, never read from this host's /sys.
func deviceDir(entry, link string) string {
	if !filepath.IsAbs(link) {
		return filepath.Join(filepath.Dir(entry), link)
	}
	sys := filepath.Dir(filepath.Dir(entry)) // <sys>/block/NAME
	if filepath.Base(sys) == "class" {
		sys = filepath.Dir(sys) // <sys>/class/block/NAME
	}
	return filepath.Join(sys, strings.TrimPrefix(link, "/sys"))
}

// readVMBusDeviceID walks up from a disk's device directory and returns
// the first device_id attribute found, as udev's ATTRS{device_id} does.
// The walk stops below the devices/ directory. A value that is not a
// braced GUID is recorded as an error and not returned.
func readVMBusDeviceID(a *attrReader, dir string) string {
	for i := 0; i < maxSysfsDepth; i++ {
		parent := filepath.Dir(dir)
		if parent == dir || filepath.Base(dir) == "devices" {
			return ""
		}
		p := filepath.Join(dir, "device_id")
		v, err := hostfs.ReadValue(p)
		switch {
		case err == nil:
			if _, perr := snapshot.ParseVMBusDeviceID(v); perr != nil {
				a.errs = append(a.errs, pathError{p, fmt.Errorf("%s: %w", p, perr)})
				return ""
			}
			return v
		case hostfs.Classify(err) != hostfs.KindMissing && !errors.Is(err, os.ErrInvalid):
			a.errs = append(a.errs, pathError{p, err})
			return ""
		}
		dir = parent
	}
	return ""
}
