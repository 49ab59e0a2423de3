package snapshot

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrVMBusDeviceID marks a device_id that is not a braced GUID.
var ErrVMBusDeviceID = errors.New("not a VMBus device_id")

// ParseVMBusDeviceID checks a VMBus device_id as drivers/hv/vmbus_drv.c
// device_id_show() prints it ("{%pUl}"): a GUID in braces, 8-4-4-4-12 hex
// digits. It returns the GUID without braces, lower-cased.
func ParseVMBusDeviceID(s string) (string, error) {
	if len(s) != 38 || s[0] != '{' || s[37] != '}' {
		return "", fmt.Errorf("%w: %q is not {xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}", ErrVMBusDeviceID, s)
	}
	g := s[1:37]
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return "", fmt.Errorf("%w: %q: want '-' at position %d of the GUID", ErrVMBusDeviceID, s, i+1)
			}
		default:
			if !isHex(c) {
				return "", fmt.Errorf("%w: %q: %q is not a hex digit", ErrVMBusDeviceID, s, c)
			}
		}
	}
	return strings.ToLower(g), nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// SCSIAddress is a SCSI device's host:channel:target:lun.
type SCSIAddress struct{ Host, Channel, Target, LUN uint64 }

// ErrSCSIAddress marks text that does not name H:C:T:L.
var ErrSCSIAddress = errors.New("not a SCSI address")

// ParseSCSIAddress parses the name of a SCSI device directory, "H:C:T:L"
// (drivers/scsi/scsi_sysfs.c scsi_sysfs_device_initialize: "%d:%d:%d:%llu").
func ParseSCSIAddress(s string) (SCSIAddress, error) {
	f := strings.Split(s, ":")
	if len(f) != 4 {
		return SCSIAddress{}, fmt.Errorf("%w: %q does not have four fields H:C:T:L", ErrSCSIAddress, s)
	}
	var n [4]uint64
	for i, x := range f {
		v, err := strconv.ParseUint(x, 10, 64)
		if err != nil {
			return SCSIAddress{}, fmt.Errorf("%w: %q: field %d %q is not an unsigned number", ErrSCSIAddress, s, i+1, x)
		}
		n[i] = v
	}
	return SCSIAddress{n[0], n[1], n[2], n[3]}, nil
}
