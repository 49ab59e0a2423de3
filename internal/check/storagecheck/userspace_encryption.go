package storagecheck

import (
	"fmt"
	"strings"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// storage.userspace-encryption: a volume served by a process (NVMe over
// Fabrics, ublk) may be encrypted where no device-mapper table shows it.
// OpenEBS Mayastor encrypts a DiskPool in SPDK (a crypto vbdev in its
// io-engine, OpenEBS 4.3+); Longhorn's v2 engine serves volumes from SPDK
// over NVMe/TCP or ublk and encrypts them with dm-crypt on the node
// (/dev/mapper/<volume>-encrypted, Longhorn 1.8). Either way the kernel
// here cannot tell, so the path's encryption is unknown, never "0 layers",
// and the finding says where the answer is: the StorageClass, the
// volume and the engine's own objects.
func init() {
	check.Register(check.Check{
		ID:       "storage.userspace-encryption",
		Title:    "Storage served by a user-space target whose encryption the kernel cannot see",
		Severity: check.Info,
		Run:      runUserspaceEncryption,
	})
}

const (
	refLonghornV2Encryption = "https://github.com/longhorn/longhorn/blob/master/enhancements/20250107-v2-volume-encryption.md"
	refMayastorEncryption   = "https://openebs.io/docs/user-guides/replicated-storage-user-guide/replicated-pv-mayastor/advanced-operations/encryption"
)

func runUserspaceEncryption(in *check.Input) []check.Finding {
	if in.Storage == nil {
		return nil
	}
	var out []check.Finding
	for _, p := range in.Storage.Paths {
		var target *storagemodel.Layer
		var disk *storagemodel.Layer
		crypt := false
		for i := range p.Layers {
			l := &p.Layers[i]
			switch {
			case l.Kind == storagemodel.LayerUserspace:
				target = l
			case l.Kind == storagemodel.LayerDisk:
				disk = l
			case l.Encrypted && l.EncryptedBy == storagemodel.ByKernelCPU:
				crypt = true
			}
		}
		if target == nil {
			continue
		}
		out = append(out, userspaceFinding(p, target, disk, crypt))
	}
	if len(out) == 0 {
		return []check.Finding{{Status: check.Pass, Subject: "storage", Summary: "no path is served by a user-space target (NVMe over Fabrics, ublk)"}}
	}
	return out
}

func userspaceFinding(p storagemodel.Path, target, disk *storagemodel.Layer, crypt bool) check.Finding {
	dev := "the device"
	ev := []check.Evidence{{Source: "storage model", Key: target.Kind, Observed: target.Name + ": " + target.Note, Expected: "encryption known"}}
	if disk != nil {
		dev = "/dev/" + disk.Device
		if id := disk.Ident; id != nil {
			ev = append(ev, check.Evidence{Source: "/sys/class/block/" + disk.Device + "/device", Key: "model, transport",
				Observed: fmt.Sprintf("%q, %s", strings.TrimSpace(id.Model), id.NVMeTransport)})
		}
	}
	f := check.Finding{
		Status:   check.Unknown,
		Severity: check.Info,
		Subject:  p.Subject(),
		Evidence: ev,
	}
	var id *snapshot.Identity
	if disk != nil {
		id = disk.Ident
	}
	switch storagemodel.TargetEngine(id) {
	case storagemodel.EngineMayastor:
		f.Summary = fmt.Sprintf("%s is an OpenEBS Mayastor volume (%s, NVMe model \"Mayastor NVMe controller\"): Mayastor encrypts a DiskPool "+
			"in user space (an SPDK crypto vbdev in its io-engine), which no device-mapper table here shows; whether this volume's "+
			"pool encrypts, and what it costs, cannot be seen from this node.", p.Subject(), dev)
		f.Remediation = "Confirm from the cluster:\n" +
			"  kubectl get pv PV -o jsonpath='{.spec.csi.driver} {.spec.storageClassName}{\"\\n\"}'\n" +
			"  # \"true\": encrypted pools only\n" +
			"  kubectl get sc SC -o jsonpath='{.parameters.encrypted}{\"\\n\"}'\n" +
			"  kubectl get diskpool -n NS POOL -o jsonpath='{.spec.encryptionConfig}'\n" +
			"The cost of SPDK's crypto is in the io-engine's CPU on the pool's node (accel_sw: AES-XTS-128 only)."
		f.References = []string{refMayastorEncryption}
	case storagemodel.EngineLonghorn:
		here := "and this path has none, so Longhorn does not encrypt this volume here"
		if crypt {
			here = "and this path has a kernel encryption layer"
		}
		f.Summary = fmt.Sprintf("%s is served by an SPDK target (%s, model \"SPDK bdev Controller\", as Longhorn's v2 engine reports): "+
			"Longhorn v2 encrypts with dm-crypt on the node (/dev/mapper/VOLUME-encrypted), %s; an SPDK target could also encrypt "+
			"in user space, which the kernel cannot see.", p.Subject(), dev, here)
		f.Remediation = "Confirm from the cluster (driver driver.longhorn.io):\n" +
			"  # the volume's dataEngine and encrypted:\n" +
			"  kubectl get pv PV -o jsonpath='{.spec.csi.volumeAttributes}{\"\\n\"}'\n" +
			"  kubectl -n longhorn-system get volumes.longhorn.io PV -o jsonpath='{.spec.dataEngine} {.spec.encrypted} {.spec.frontend}{\"\\n\"}'\n" +
			"  kubectl get sc SC -o jsonpath='{.parameters.dataEngine} {.parameters.encrypted}{\"\\n\"}'\n" +
			"Longhorn formats its LUKS2 volumes with no performance flags: see dmcrypt.workqueue for the mapping."
		f.References = []string{refLonghornV2Encryption}
	default:
		f.Summary = fmt.Sprintf("%s is served by a user-space target (%s: %s): its server may encrypt (SPDK's crypto vbdev) with no "+
			"device-mapper table to show it, so this path's encryption is unknown from here.", p.Subject(), dev, target.Name)
		f.Remediation = "Ask the target's owner, or read it from the storage system's objects (the PV's CSI driver and volumeAttributes,\n" +
			"the StorageClass parameters): kubectl get pv PV -o yaml; kubectl get sc SC -o yaml"
	}
	return f
}
