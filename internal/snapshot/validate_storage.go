package snapshot

import (
	"fmt"
	"math"
	"path"
	"regexp"
	"strings"
)

// Validation of the storage section (storage.go): mounts, block devices,
// queues, device-mapper, identities. Rules and sources: docs/snapshot.md,
// section Validation.

// Block device names are sysfs directory names of /sys/class/block: a
// kobject name never holds '/' (lib/kobject.c kobject_set_name_vargs turns
// it into '!') and is never "." or "..". A disk's name fits disk_name
// [DISK_NAME_LEN 32] (include/linux/blkdev.h); a partition's adds "p" and
// its number (block/partitions/core.c add_partition), up to DISK_MAX_PARTS
// 256: at most 31+4 bytes.
const (
	srcBlockName = "include/linux/blkdev.h DISK_NAME_LEN, block/partitions/core.c add_partition, lib/kobject.c kobject_set_name_vargs"
	maxBlockName = 35
)

func checkBlockName(p, name string) error {
	why := ""
	switch {
	case name == "":
		why = "empty"
	case len(name) > maxBlockName:
		why = fmt.Sprintf("%d bytes, at most %d", len(name), maxBlockName)
	case name == "." || name == "..":
		why = `"." and ".." are not sysfs names`
	case strings.ContainsAny(name, "/\x00"):
		why = "holds '/' or NUL"
	}
	if why != "" {
		return invalidString(p, name, "not a valid block device name", why, srcBlockName)
	}
	return checkText(p, name, maxBlockName, false)
}

// Device numbers: "MAJ:MIN" as the kernel prints them ("%u:%u", block/
// genhd.c dev_show, fs/proc_namespace.c show_mountinfo). A dev_t is 32 bits
// with MINORBITS 20 (include/linux/kdev_t.h): major < 4096, minor < 2^20.
const srcDevT = "include/linux/kdev_t.h MINORBITS 20, MAJOR/MINOR"

func checkMajMin(p, s string) error {
	maj, min, ok := strings.Cut(s, ":")
	if !ok {
		return invalidString(p, s, "not a device number", `want "MAJ:MIN"`, srcDevT)
	}
	if !canonicalUint(maj, 1<<12-1) {
		return invalidString(p, s, "not a device number", "major is not a decimal below 4096", srcDevT)
	}
	if !canonicalUint(min, 1<<20-1) {
		return invalidString(p, s, "not a device number", "minor is not a decimal below 2^20", srcDevT)
	}
	return nil
}

// Device-mapper: drivers/md/dm-ioctl.c check_name() refuses '/' and the
// name "control"; current kernels also "." and ".." (Demi Marie Obenour's
// 2022 patch), which slowpath refuses whatever the kernel;
// validate_params() refuses an empty name at creation. Names fit
// name[DM_NAME_LEN 128], UUIDs uuid[DM_UUID_LEN 129], target types
// target_type[DM_MAX_TYPE_NAME 16] (include/uapi/linux/dm-ioctl.h), each
// with its NUL.
const (
	srcDMName = "drivers/md/dm-ioctl.c check_name, include/uapi/linux/dm-ioctl.h DM_NAME_LEN 128"
	srcDMUUID = "include/uapi/linux/dm-ioctl.h DM_UUID_LEN 129"
	srcDMType = "include/uapi/linux/dm-ioctl.h DM_MAX_TYPE_NAME 16"
)

func checkDMName(p, name string) error {
	why := ""
	switch {
	case name == "":
		why = "empty"
	case len(name) > 127:
		why = fmt.Sprintf("%d bytes, at most 127", len(name))
	case name == "control" || name == "." || name == "..":
		why = `"control", "." and ".." are refused`
	case strings.ContainsAny(name, "/\x00"):
		why = "holds '/' or NUL"
	}
	if why != "" {
		return invalidString(p, name, "not a valid device-mapper name", why, srcDMName)
	}
	return checkText(p, name, 127, false)
}

// Paths the kernel prints from d_path()/seq_path_root() (fs/d_path.c) are
// absolute and canonical: no "." or ".." component, no "//", no trailing
// '/'. mountinfo escapes space, tab, newline and backslash as \040 etc.
// (fs/proc_namespace.c show_mountinfo, proc_pid_mountinfo(5)); after
// unescaping, slowpath still refuses control characters (its own rule).
const srcPath = "fs/d_path.c d_path, fs/proc_namespace.c show_mountinfo"

func checkAbsPath(p, s string) error {
	if err := checkText(p, s, pathMax-1, false); err != nil {
		return err
	}
	if !strings.HasPrefix(s, "/") {
		return invalidString(p, s, "not an absolute path", "", srcPath)
	}
	if path.Clean(s) != s {
		return invalidString(p, s, "not a clean path", "the kernel prints no '.', '..' or '//' components", srcPath)
	}
	return nil
}

// checkMountRoot checks mountinfo's field 4. Besides a clean absolute
// path, the kernel prints "//deleted" after the root of a bind mount whose
// source was unlinked (fs/d_path.c dentry_path), and "TYPE:[INODE]" for a
// namespace file bind-mounted (fs/nsfs.c ns_dname: /run/netns/NAME).
func checkMountRoot(p, s string) error {
	if !strings.HasPrefix(s, "/") {
		if err := checkText(p, s, pathMax-1, false); err != nil {
			return err
		}
		if typ, rest, ok := strings.Cut(s, ":["); ok && typ != "" && strings.HasSuffix(rest, "]") && canonicalUint(strings.TrimSuffix(rest, "]"), math.MaxUint64) {
			return nil
		}
		return invalidString(p, s, "not a mount root", `want an absolute path or "TYPE:[INODE]"`, "fs/d_path.c dentry_path, fs/nsfs.c ns_dname")
	}
	if t, ok := strings.CutSuffix(s, "//deleted"); ok && t != "" {
		return checkAbsPath(p, t)
	}
	return checkAbsPath(p, s)
}

func validateStorage(st *Storage) error {
	if st == nil {
		return nil
	}
	for i := range st.Mounts {
		if err := validateMount(fmt.Sprintf("storage.mounts[%d]", i), &st.Mounts[i]); err != nil {
			return err
		}
	}
	// One directory per name in /sys/class/block.
	return eachNamed("storage.block_devices", st.BlockDevices, func(d *BlockDevice) string { return d.Name }, "block devices", "sysfs: one directory per name in /sys/class/block", validateBlockDevice)
}

func validateMount(p string, m *Mount) error {
	// Mount ids are ints printed "%i" (fs/proc_namespace.c show_mountinfo),
	// allocated from an IDA starting at 0 (fs/namespace.c mnt_alloc_id).
	if m.MountID < 0 {
		return invalidNumber(p+".mount_id", m.MountID, "negative", "", "fs/namespace.c mnt_alloc_id")
	}
	if m.ParentID < 0 {
		return invalidNumber(p+".parent_id", m.ParentID, "negative", "", "fs/namespace.c mnt_alloc_id")
	}
	if err := checkMajMin(p+".major_minor", m.MajorMinor); err != nil {
		return err
	}
	if err := checkMountRoot(p+".root", m.Root); err != nil {
		return err
	}
	if err := checkAbsPath(p+".mount_point", m.MountPoint); err != nil {
		return err
	}
	// A type is a registered file_system_type name, with ".subtype" for
	// FUSE (fs/proc_namespace.c show_type).
	if m.FSType == "" {
		return invalidString(p+".fs_type", m.FSType, "is empty", "", "fs/proc_namespace.c show_type")
	}
	if err := checkText(p+".fs_type", m.FSType, 255, false); err != nil {
		return err
	}
	for _, f := range []struct{ p, v string }{{".options", m.Options}, {".source", m.Source}, {".super_options", m.SuperOpts}} {
		if err := checkText(p+f.p, f.v, pathMax, false); err != nil {
			return err
		}
	}
	if err := checkOptEnum(p+".fscrypt_status", m.FscryptStatus, FscryptEncrypted, FscryptNotEncrypted, FscryptUnsupported); err != nil {
		return err
	}
	if f := m.Fscrypt; f != nil {
		if f.Version != 1 && f.Version != 2 {
			return invalidNumber(p+".fscrypt.version", f.Version, "not an fscrypt policy version", "want 1 or 2", "include/uapi/linux/fscrypt.h FSCRYPT_POLICY_V1, _V2")
		}
		if err := checkToken(p+".fscrypt.contents_mode", f.ContentsMode, maxWord, false); err != nil {
			return err
		}
		if err := checkToken(p+".fscrypt.filenames_mode", f.FilenamesMode, maxWord, false); err != nil {
			return err
		}
	}
	return nil
}

func validateBlockDevice(p string, d *BlockDevice) error {
	if err := checkBlockName(p+".name", d.Name); err != nil {
		return err
	}
	if err := checkMajMin(p+".major_minor", d.MajorMinor); err != nil {
		return err
	}
	if err := checkEnum(p+".kind", d.Kind, KindDisk, KindPartition, KindDM, KindMD, KindLoop, KindZram, KindRAM, KindOther); err != nil {
		return err
	}
	if d.Parent != "" {
		if err := checkBlockName(p+".parent", d.Parent); err != nil {
			return err
		}
	}
	// sysfs size counts 512-byte sectors (block/genhd.c part_size_show).
	if d.SizeBytes%512 != 0 {
		return invalidNumber(p+".size_bytes", d.SizeBytes, "not a whole number of sectors", "sysfs size counts 512-byte sectors", "block/genhd.c part_size_show")
	}
	if err := eachString(p+".slaves", d.Slaves, checkBlockName); err != nil {
		return err
	}
	if err := eachString(p+".holders", d.Holders, checkBlockName); err != nil {
		return err
	}
	if q := d.Queue; q != nil {
		if err := validateQueue(p+".queue", q); err != nil {
			return err
		}
	}
	if dm := d.DM; dm != nil {
		if err := validateDM(p+".dm", dm); err != nil {
			return err
		}
		// The header is read from the one device beneath the mapping, and
		// a plan names it (clevis luks pass -d /dev/DEVICE): it must be
		// that device.
		if h := dm.LUKS; h != nil && h.Device != "" {
			if err := checkBlockName(p+".dm.luks.device", h.Device); err != nil {
				return err
			}
			if len(d.Slaves) != 1 || d.Slaves[0] != h.Device {
				return invalidString(p+".dm.luks.device", h.Device, "not the device beneath the mapping", fmt.Sprintf("slaves %v", d.Slaves), srcLUKS)
			}
		}
	}
	if l := d.Loop; l != nil {
		// backing_file is file_path() of the file (drivers/block/loop.c
		// backing_file_show): d_path, absolute, " (deleted)" when unlinked.
		if err := checkAbsPath(p+".loop.backing_file", l.BackingFile); err != nil {
			return err
		}
		if l.BackingDevice != "" {
			if err := checkMajMin(p+".loop.backing_device", l.BackingDevice); err != nil {
				return err
			}
		}
		if l.BackingBlockDevice != "" {
			if err := checkMajMin(p+".loop.backing_block_device", l.BackingBlockDevice); err != nil {
				return err
			}
		}
	}
	if md := d.MD; md != nil {
		if err := checkToken(p+".md.level", md.Level, maxWord, true); err != nil {
			return err
		}
	}
	if id := d.Ident; id != nil {
		if err := validateIdentity(p+".identity", id); err != nil {
			return err
		}
	}
	if s := d.Stat; s != nil {
		// Documentation/block/stat.rst: 11 fields, 15 from 4.18, 17 from
		// 5.5; more from a later kernel are counted, not kept.
		if !(s.Fields == 11 || s.Fields == 15 || s.Fields >= 17 && s.Fields <= maxColumns) {
			return invalidNumber(p+".stat.fields", s.Fields, "not a field count the kernel prints", "want 11, 15 or 17 (or more from a later kernel)", "Documentation/block/stat.rst, block/genhd.c part_stat_show")
		}
	}
	return nil
}

func validateQueue(p string, q *Queue) error {
	// blk_validate_block_size (include/linux/blkdev.h): a power of two from
	// 512 to BLK_MAX_BLOCK_SIZE (64 KiB; PAGE_SIZE before 6.15).
	if b := q.LogicalBlockSize; b != 0 && (b < 512 || b > 65536 || b&(b-1) != 0) {
		return invalidNumber(p+".logical_block_size", b, "not a block size", "want a power of two from 512 to 65536", "include/linux/blkdev.h blk_validate_block_size")
	}
	// block/blk-settings.c blk_validate_limits: a power of two, at least the logical size.
	if b := q.PhysicalBlockSize; b != 0 && (b < 512 || b&(b-1) != 0 || b < q.LogicalBlockSize) {
		return invalidNumber(p+".physical_block_size", b, "not a block size", "want a power of two, at least 512 and the logical block size", "block/blk-settings.c blk_validate_limits")
	}
	// Elevator names fit elevator_name[ELV_NAME_MAX 16] (block/elevator.h);
	// queue/scheduler is a space-separated list of them.
	const srcElv = "block/elevator.h ELV_NAME_MAX 16"
	if len(q.Scheduler) > 15 {
		return invalidString(p+".scheduler", q.Scheduler, "not a scheduler name", "at most 15 bytes", srcElv)
	}
	if err := checkToken(p+".scheduler", q.Scheduler, 15, true); err != nil {
		return err
	}
	for i, s := range q.Schedulers {
		sp := fmt.Sprintf("%s.schedulers[%d]", p, i)
		if len(s) > 15 {
			return invalidString(sp, s, "not a scheduler name", "at most 15 bytes", srcElv)
		}
		if err := checkToken(sp, s, 15, false); err != nil {
			return err
		}
	}
	if q.NrRequests < 0 {
		return invalidNumber(p+".nr_requests", q.NrRequests, "negative", "", "block/blk-sysfs.c queue_requests_show")
	}
	if q.ReadAheadKB < 0 {
		return invalidNumber(p+".read_ahead_kb", q.ReadAheadKB, "negative", "", "block/blk-sysfs.c queue_ra_show")
	}
	return nil
}

func validateDM(p string, dm *DM) error {
	if err := checkDMName(p+".name", dm.Name); err != nil {
		return err
	}
	if len(dm.UUID) > 128 {
		return invalidString(p+".uuid", dm.UUID, "not a device-mapper uuid", fmt.Sprintf("%d bytes, at most 128", len(dm.UUID)), srcDMUUID)
	}
	if err := checkText(p+".uuid", dm.UUID, 128, false); err != nil {
		return err
	}
	if err := checkText(p+".table_not_read", dm.TableNotRead, maxMessage, false); err != nil {
		return err
	}
	if h := dm.LUKS; h != nil {
		if err := validateLUKS(p+".luks", h); err != nil {
			return err
		}
	}
	for i, t := range dm.Targets {
		tp := fmt.Sprintf("%s.targets[%d]", p, i)
		if t.Type == "" || len(t.Type) > 15 {
			return invalidString(tp+".type", t.Type, "not a target type", "1 to 15 bytes", srcDMType)
		}
		if err := checkToken(tp+".type", t.Type, 15, false); err != nil {
			return err
		}
		// The kernel returns params as a C string (no NUL); slowpath bounds
		// it and refuses newlines and other control characters.
		if err := checkText(tp+".params", t.Params, maxParams, false); err != nil {
			return err
		}
	}
	return nil
}

func validateIdentity(p string, id *Identity) error {
	if err := checkOptEnum(p+".transport", id.Transport, "nvme", "virtio", "scsi", "ata", "mmc", "usb", "xen"); err != nil {
		return err
	}
	for _, f := range []struct{ p, v string }{{".vendor", id.Vendor}, {".model", id.Model}, {".firmware", id.Firmware}} {
		if err := checkText(p+f.p, f.v, maxLine, false); err != nil {
			return err
		}
	}
	if id.VMBusDeviceID != "" {
		if _, err := ParseVMBusDeviceID(id.VMBusDeviceID); err != nil {
			return invalidString(p+".vmbus_device_id", id.VMBusDeviceID, "not a VMBus device_id", `want "{xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}"`, "drivers/hv/vmbus_drv.c device_id_show")
		}
	}
	if id.SCSIAddress != "" {
		if _, err := ParseSCSIAddress(id.SCSIAddress); err != nil {
			return invalidString(p+".scsi_address", id.SCSIAddress, "not a SCSI address", `want "H:C:T:L"`, "drivers/scsi/scsi_sysfs.c scsi_sysfs_device_initialize")
		}
	}
	// NVMe namespace ids are 1 to 0xFFFFFFFE (NVMe base specification).
	if id.NVMeNSID < 0 || id.NVMeNSID >= maxUint32 {
		return invalidNumber(p+".nvme_nsid", id.NVMeNSID, "not a namespace id", "want 0 (unknown) or 1 to 4294967294", "NVMe base specification, namespace identifiers")
	}
	// nvmf_transport_ops.name is a short word (tcp, rdma, fc, loop); pcie
	// and apple-nvme are the local controllers' (nvme_ctrl_ops.name).
	return checkToken(p+".nvme_transport", id.NVMeTransport, maxWord, true)
}

// LUKS2 allows 32 key slots and 32 tokens (LUKS2_KEYSLOTS_MAX,
// LUKS2_TOKENS_MAX); LUKS1 has 8 key slots.
const (
	luksMaxSlots = 32
	luksMaxWord  = 64
	srcLUKS      = "the LUKS header beneath the mapping (cryptsetup luksDump)"
)

var luksWord = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`)

// ValidLUKSWord reports whether s can be a LUKS2 token type or flag as
// slowpath keeps them: one plain word of at most 64 bytes (what cryptsetup
// and systemd write: systemd-tpm2, luks2-keyring, no-read-workqueue).
// Nothing else is carried into a snapshot, and so into a plan's comments.
func ValidLUKSWord(s string) bool { return len(s) <= luksMaxWord && luksWord.MatchString(s) }

func validateLUKS(p string, h *LUKSHeader) error {
	if h.Version < 0 || h.Version > 2 {
		return invalidString(p+".version", fmt.Sprint(h.Version), "not a LUKS version", "1 or 2, 0 when not read", srcLUKS)
	}
	if err := checkText(p+".not_read", h.NotRead, maxMessage, false); err != nil {
		return err
	}
	slots := func(q string, ks []int) error {
		for i, k := range ks {
			if k < 0 || k >= luksMaxSlots {
				return invalidString(fmt.Sprintf("%s[%d]", q, i), fmt.Sprint(k), "not a key slot", "0 to 31", srcLUKS)
			}
		}
		return nil
	}
	if err := slots(p+".keyslots", h.Keyslots); err != nil {
		return err
	}
	if len(h.Tokens) > luksMaxSlots {
		return invalidString(p+".tokens", fmt.Sprint(len(h.Tokens)), "too many tokens", "at most 32", srcLUKS)
	}
	for i, t := range h.Tokens {
		tp := fmt.Sprintf("%s.tokens[%d]", p, i)
		if !ValidLUKSWord(t.Type) {
			return invalidString(tp+".type", t.Type, "not a token type", "one word of letters, digits and . _ : -, at most 64 bytes", srcLUKS)
		}
		if err := slots(tp+".keyslots", t.Keyslots); err != nil {
			return err
		}
	}
	for i, f := range h.Flags {
		if !ValidLUKSWord(f) {
			return invalidString(fmt.Sprintf("%s.flags[%d]", p, i), f, "not a LUKS2 flag", "one word, at most 64 bytes", srcLUKS)
		}
	}
	return nil
}
