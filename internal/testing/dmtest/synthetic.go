package dmtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Synthetic describes a generated host tree.
type Synthetic struct {
	// Payloads are the DM_TABLE_STATUS answers of every dm device.
	Payloads map[string][]byte
	// Tables maps dm name to its table as `dmsetup table NAME` prints it
	// (key included), also written to <dir>/dmtables/NAME.
	Tables map[string]string
	// Keys are the hex keys in the tables, for leak checks.
	Keys []string
}

// KeyFor returns the deterministic 512-bit hex key of dm device i.
func KeyFor(i int) string {
	a := sha256.Sum256([]byte(fmt.Sprintf("slowpath synthetic key %d a", i)))
	b := sha256.Sum256([]byte(fmt.Sprintf("slowpath synthetic key %d b", i)))
	return hex.EncodeToString(a[:]) + hex.EncodeToString(b[:])
}

// WriteSynthetic writes under dir a sysfs and procfs tree of a host with n
// LUKS2 dm-crypt devices, each over its own partition of NVMe disks that
// hold at most 128 partitions each, and one ext4 mount per crypt device.
// The layout follows a real kernel: devices under sys/devices, symlinks in
// sys/class/block, sys/block and sys/dev/block, so util-linux lsblk
// --sysroot reads it too.
func WriteSynthetic(dir string, n int) (*Synthetic, error) {
	w := &treeWriter{root: dir}
	syn := &Synthetic{Payloads: map[string][]byte{}, Tables: map[string]string{}}
	var mounts strings.Builder
	fmt.Fprintf(&mounts, "1 0 259:1 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p1 rw\n")
	const perDisk = 128
	partMinor := 0
	for d := 0; d*perDisk < n || d == 0; d++ {
		disk := fmt.Sprintf("nvme%dn1", d)
		ddir := fmt.Sprintf("devices/pci0000:00/0000:00:%02x.0/nvme/nvme%d/%s", 4+d, d, disk)
		ctrl := filepath.Dir(ddir)
		w.file("sys/"+ctrl+"/model", "Amazon EC2 NVMe Instance Storage")
		w.file("sys/"+ctrl+"/firmware_rev", "0")
		w.link("sys/"+ddir+"/device", "../../nvme"+fmt.Sprint(d))
		w.blockDev(ddir, disk, fmt.Sprintf("259:%d", partMinor), 7500000000/512*512, "disk")
		w.queue(ddir, "[none] mq-deadline", 512, 512, false, 1023)
		partMinor++
		for p := 1; p <= perDisk && d*perDisk+p-1 < n; p++ {
			i := d*perDisk + p - 1
			part := fmt.Sprintf("%sp%d", disk, p)
			pdir := ddir + "/" + part
			pmm := fmt.Sprintf("259:%d", partMinor)
			partMinor++
			w.blockDev(pdir, part, pmm, 7500000000/perDisk/512*512, "partition")
			w.file("sys/"+pdir+"/partition", fmt.Sprint(p))
			dm := fmt.Sprintf("dm-%d", i)
			w.link("sys/"+pdir+"/holders/"+dm, relTo(pdir+"/holders", "devices/virtual/block/"+dm))

			name := fmt.Sprintf("luks-%04d", i)
			dmdir := "devices/virtual/block/" + dm
			mm := fmt.Sprintf("253:%d", i)
			sectors := uint64(7500000000/perDisk/512 - 32768)
			w.blockDev(dmdir, dm, mm, sectors*512, "disk")
			w.queue(dmdir, "none", 4096, 4096, false, 0)
			w.file("sys/"+dmdir+"/dm/name", name)
			w.file("sys/"+dmdir+"/dm/uuid", fmt.Sprintf("CRYPT-LUKS2-%032x-%s", i, name))
			w.file("sys/"+dmdir+"/dm/suspended", "0")
			w.link("sys/"+dmdir+"/slaves/"+part, relTo(dmdir+"/slaves", pdir))
			key := KeyFor(i)
			syn.Keys = append(syn.Keys, key)
			params := fmt.Sprintf("aes-xts-plain64 %s 0 %s 32768 1 sector_size:4096", key, pmm)
			syn.Payloads[mm] = EncodeTableStatus([]Target{T(0, sectors, "crypt", params)})
			table := fmt.Sprintf("0 %d crypt %s\n", sectors, params)
			syn.Tables[name] = table
			w.file("dmtables/"+name, table)
			fmt.Fprintf(&mounts, "%d 1 %s / /srv/vol%04d rw,noatime shared:%d - ext4 /dev/mapper/%s rw\n", 100+i, mm, i, 100+i, name)
		}
	}
	w.file("proc/self/mountinfo", mounts.String())
	return syn, w.err
}

// relTo returns the relative path from directory from to target, both
// relative to sys/.
func relTo(from, target string) string {
	r, err := filepath.Rel(from, target)
	if err != nil {
		panic(err) // both are relative paths built here
	}
	return r
}

type treeWriter struct {
	root string
	err  error
}

func (w *treeWriter) file(rel, content string) {
	if w.err != nil {
		return
	}
	p := filepath.Join(w.root, rel)
	if w.err = os.MkdirAll(filepath.Dir(p), 0o755); w.err == nil {
		w.err = os.WriteFile(p, []byte(content+"\n"), 0o644)
	}
}

func (w *treeWriter) link(rel, target string) {
	if w.err != nil {
		return
	}
	p := filepath.Join(w.root, rel)
	if w.err = os.MkdirAll(filepath.Dir(p), 0o755); w.err == nil {
		w.err = os.Symlink(target, p)
	}
}

// blockDev writes the common attributes of a block device at sys/<dir>
// and its class/block, block (whole devices) and dev/block links.
func (w *treeWriter) blockDev(dir, name, mm string, sizeBytes uint64, devtype string) {
	w.file("sys/"+dir+"/dev", mm)
	w.file("sys/"+dir+"/size", fmt.Sprint(sizeBytes/512))
	w.file("sys/"+dir+"/ro", "0")
	w.file("sys/"+dir+"/removable", "0")
	maj, min, _ := strings.Cut(mm, ":")
	w.file("sys/"+dir+"/uevent", fmt.Sprintf("MAJOR=%s\nMINOR=%s\nDEVNAME=%s\nDEVTYPE=%s", maj, min, name, devtype))
	for _, sub := range []string{"slaves", "holders"} {
		if w.err == nil {
			w.err = os.MkdirAll(filepath.Join(w.root, "sys", dir, sub), 0o755)
		}
	}
	w.link("sys/class/block/"+name, "../../"+dir)
	w.link("sys/dev/block/"+mm, "../../"+dir)
	if devtype == "disk" {
		w.link("sys/block/"+name, "../"+dir)
	}
}

func (w *treeWriter) queue(dir, sched string, lbs, pbs int, rot bool, nr int) {
	q := "sys/" + dir + "/queue/"
	w.file(q+"scheduler", sched)
	w.file(q+"logical_block_size", fmt.Sprint(lbs))
	w.file(q+"physical_block_size", fmt.Sprint(pbs))
	w.file(q+"hw_sector_size", fmt.Sprint(lbs))
	w.file(q+"minimum_io_size", fmt.Sprint(pbs))
	w.file(q+"optimal_io_size", "0")
	w.file(q+"read_ahead_kb", "128")
	w.file(q+"discard_granularity", "0")
	w.file(q+"discard_max_bytes", "0")
	w.file(q+"write_same_max_bytes", "0")
	w.file(q+"zoned", "none")
	r := "0"
	if rot {
		r = "1"
	}
	w.file(q+"rotational", r)
	if nr > 0 {
		w.file(q+"nr_requests", fmt.Sprint(nr))
	}
}
