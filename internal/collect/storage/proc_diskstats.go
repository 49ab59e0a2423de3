package storage

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// ReadDiskstats reads /proc/diskstats: every block device's stat line
// with its major, minor and name before it
// (Documentation/admin-guide/iostats.rst; block/genhd.c diskstats_show,
// which leaves out partitions of size 0). One file for all devices, where
// ReadBlockStat opens one per device: the agent reads it when it follows
// many devices. Only the names in want are parsed; nil want parses all.
func ReadDiskstats(fs hostfs.FS, want map[string]bool) (map[string]*snapshot.BlockStat, error) {
	p := fs.ProcPath("diskstats")
	raw, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	out, err := parseDiskstats(raw, want)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return out, nil
}

func parseDiskstats(raw []byte, want map[string]bool) (map[string]*snapshot.BlockStat, error) {
	out := map[string]*snapshot.BlockStat{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		// "MAJ MIN NAME FIELDS...": the fields are a stat file's line.
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 3 {
			return nil, fmt.Errorf("line %d: %w: %d fields, want major, minor, name and the counters", n, errBlockStat, len(f))
		}
		name := f[2]
		if want != nil && !want[name] {
			continue
		}
		st, err := parseBlockStat(strings.Join(f[3:], " "))
		if err != nil {
			return nil, fmt.Errorf("line %d (%s): %w", n, name, err)
		}
		out[name] = st
	}
	return out, sc.Err()
}
