package storagemodel

import (
	"strings"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// EncryptedByUserspace is where a user-space target's encryption would
// run: in a storage process (SPDK's crypto bdev), on some node's CPU.
const EncryptedByUserspace = "user-space-target"

// userspaceLayer adds, below a disk that a process serves, a layer whose
// encryption cannot be seen: Longhorn's v2 data engine and OpenEBS
// Mayastor encrypt in SPDK (a crypto bdev) inside their target process,
// and the kernel sees only an NVMe over Fabrics namespace (tcp, rdma, fc,
// loop) or a ublk device, with no crypt table. It reports whether it
// added one.
func (b *builder) userspaceLayer(p *Path, d *snapshot.BlockDevice, depth int) bool {
	what := userspaceTarget(d)
	if what == "" {
		return false
	}
	p.Layers = append(p.Layers, Layer{
		Kind: LayerUserspace, Name: what, Depth: depth,
		EncryptionUnknown: true, EncryptedBy: EncryptedByUserspace,
		Note: "encryption: unknown (user-space SPDK crypto possible): the target may encrypt in its own process " +
			"(SPDK's crypto vbdev, as OpenEBS Mayastor's encrypted pools do) with no device-mapper table to show it",
	})
	return true
}

// userspaceTarget names the process-served target behind d, "" for a
// local drive.
func userspaceTarget(d *snapshot.BlockDevice) string {
	if strings.HasPrefix(d.Name, "ublkb") {
		// drivers/block/ublk_drv.c names its disks ublkb<id>.
		return "ublk server (user-space block device)"
	}
	id := d.Ident
	if id == nil || id.Transport != "nvme" {
		return ""
	}
	switch id.NVMeTransport {
	case "tcp", "rdma", "fc", "loop":
	default:
		return ""
	}
	switch m := strings.TrimSpace(id.Model); {
	case TargetEngine(id) == EngineMayastor:
		return "Mayastor NVMe-oF " + id.NVMeTransport + " target (SPDK)"
	case strings.Contains(m, "SPDK"):
		return "SPDK NVMe-oF " + id.NVMeTransport + " target"
	}
	return "NVMe-oF " + id.NVMeTransport + " target"
}

// Storage engines a user-space target's NVMe model names.
const (
	EngineMayastor = "mayastor" // OpenEBS Mayastor sets its own model
	// EngineLonghorn: SPDK's default model, which Longhorn's v2 engine
	// does not override.
	EngineLonghorn = "longhorn"
)

// TargetEngine names the storage engine behind a disk from its NVMe
// model, "" when the model names none.
func TargetEngine(id *snapshot.Identity) string {
	if id == nil {
		return ""
	}
	switch m := strings.TrimSpace(id.Model); {
	case strings.HasPrefix(m, "Mayastor"):
		return EngineMayastor
	case m == "SPDK bdev Controller":
		return EngineLonghorn
	}
	return ""
}
