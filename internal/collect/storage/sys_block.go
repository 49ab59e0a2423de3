package storage

import (
	"os"
	"path/filepath"
)

// blockEntry is one block device directory to read: dir is its sysfs
// directory, parent the disk a partition sits in when the listing says so.
type blockEntry struct {
	name, dir, parent string
}

// listClassBlock lists <sys>/class/block: every disk and partition, each a
// symlink into /sys/devices (Documentation/ABI/stable/sysfs-block).
func listClassBlock(dir string) ([]blockEntry, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make([]blockEntry, 0, len(ents))
	for _, e := range ents {
		out = append(out, blockEntry{name: e.Name(), dir: filepath.Join(dir, e.Name())})
	}
	return out, nil
}

// listSysBlock lists <sys>/block, read when class/block is absent: saved
// and captured trees often have only this older layout (node_exporter's
// and prometheus/procfs's sysfs fixtures do). /sys/block holds whole
// devices; a partition is a subdirectory of its disk that has a
// "partition" attribute (block/partitions/core.c, add_partition: the
// partition's kobject is a child of the disk's).
func listSysBlock(dir string) ([]blockEntry, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []blockEntry
	for _, e := range ents {
		disk := filepath.Join(dir, e.Name())
		out = append(out, blockEntry{name: e.Name(), dir: disk})
		subs, err := os.ReadDir(disk)
		if err != nil {
			continue // the disk's own reader reports what is wrong with it
		}
		for _, p := range subs {
			pd := filepath.Join(disk, p.Name())
			if _, err := os.Stat(filepath.Join(pd, "partition")); err == nil {
				out = append(out, blockEntry{name: p.Name(), dir: pd, parent: e.Name()})
			}
		}
	}
	return out, nil
}
