package storage

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/hostfstest"
)

// TestCollectCloudIdentity reads the attributes the clouds' udev rules
// read (VMBus device_id, SCSI address, NVMe nsid, model) from a tree laid
// out like public captures, and names each malformed one.
func TestCollectCloudIdentity(t *testing.T) {
	fs := materialise(t, "cloud.txtar")
	var s snapshot.Snapshot
	(&Collector{FS: fs, Fscrypt: fakeFscrypt{}}).Collect(context.Background(), &s)

	got := map[string]snapshot.Identity{}
	for _, d := range s.Storage.BlockDevices {
		if d.Ident != nil {
			id := *d.Ident
			id.Firmware = ""
			got[d.Name] = id
		}
	}
	azure := func(devid, addr string) snapshot.Identity {
		return snapshot.Identity{Transport: "scsi", Vendor: "Msft", Model: "Virtual Disk", VMBusDeviceID: devid, SCSIAddress: addr}
	}
	nvme := func(model string, nsid int) snapshot.Identity {
		return snapshot.Identity{Transport: "nvme", Model: model, NVMeNSID: nsid}
	}
	want := map[string]snapshot.Identity{
		"sda":     azure("{00000000-0000-8899-0000-000000000000}", "0:0:0:0"),
		"sdb":     azure("{00000000-0001-8899-0000-000000000000}", "1:0:1:0"),
		"sdc":     azure("{f8b3781b-1e82-4818-a1c3-63d806ec15bb}", "3:0:0:0"),
		"sdd":     azure("{f8b3781a-1e82-4818-a1c3-63d806ec15bb}", "0:0:0:0"),
		"sde":     azure("{f8b3781a-1e82-4818-a1c3-63d806ec15bb}", "0:0:0:1"),
		"sdz":     azure("", "5:0:0:0"), // device_id is no GUID
		"sdy":     {Transport: "scsi"},  // device link is no H:C:T:L, so no vendor or model either
		"nvme0n1": nvme("Microsoft NVMe Direct Disk v2", 1),
		"nvme1n1": {Transport: "nvme", Model: "Amazon Elastic Block Store", NVMeNSID: 1, NVMeTransport: "pcie"},
		"nvme2n1": nvme("Amazon EC2 NVMe Instance Storage", 1),
		"nvme3n2": nvme("nvme_card-pd", 2),
		"nvme9n1": nvme("nvme_card", 0), // nsid 0 is not a namespace id
		// NVMe over Fabrics: a controller's transport; a multipath head's
		// from the subsystem's first controller.
		"nvme4n1": {Transport: "nvme", Model: "SPDK bdev Controller", NVMeNSID: 1, NVMeTransport: "tcp"},
		"nvme5n1": {Transport: "nvme", Model: "Mayastor NVMe controller", NVMeNSID: 1, NVMeTransport: "tcp"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("identities (-want +got):\n%s", diff)
	}
	wantErrs := []string{
		"storage.block error sys/class/block/nvme9n1/nsid",
		"storage.block error sys/class/block/sdy/device",
		"storage.block error sys/devices/LNXSYSTM:00/LNXSYBUS:00/ACPI0004:00/VMBUS:00/00000000-0002-8899-0000-000000000000/device_id",
	}
	if diff := cmp.Diff(wantErrs, hostfstest.ErrorLines(&s, fs.Root)); diff != "" {
		t.Errorf("errors (-want +got):\n%s\n%+v", diff, s.Manifest.Errors)
	}
}

func TestDeviceDir(t *testing.T) {
	for _, tt := range []struct{ entry, link, want string }{
		{"/r/sys/class/block/sdb", "../../devices/vmbus/x/block/sdb", "/r/sys/devices/vmbus/x/block/sdb"},
		{"/r/sys/block/sdb", "../devices/vmbus/x/block/sdb", "/r/sys/devices/vmbus/x/block/sdb"},
		{"/r/sys/class/block/sdb", "/sys/devices/vmbus/x/block/sdb", "/r/sys/devices/vmbus/x/block/sdb"},
		{"/r/sys/block/sdb", "/sys/devices/vmbus/x/block/sdb", "/r/sys/devices/vmbus/x/block/sdb"},
		{"/sys/class/block/sdb", "/sys/devices/x/block/sdb", "/sys/devices/x/block/sdb"},
	} {
		if got := deviceDir(tt.entry, tt.link); got != tt.want {
			t.Errorf("deviceDir(%q, %q) = %q, want %q", tt.entry, tt.link, got, tt.want)
		}
	}
}
