package storage

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// errBlockStat marks a stat file slowpath cannot read as the kernel
// documents it.
var errBlockStat = errors.New("not a block stat line")

// readBlockStat reads /sys/class/block/NAME/stat (Documentation/block/stat.rst
// for fields 1-15, Documentation/admin-guide/iostats.rst for the flush
// fields 16-17). An absent file is quiet (nil): a device without I/O
// accounting is not an error. procfs's SysBlockDeviceStat reads only
// <sys>/block/NAME by name and takes a short line as a valid one (it
// returns the count and no error), so the fields are parsed here.
func readBlockStat(a *attrReader) *snapshot.BlockStat {
	v, ok := a.read("stat", false)
	if !ok {
		return nil
	}
	st, err := parseBlockStat(v)
	if err != nil {
		p := filepath.Join(a.dir, "stat")
		a.errs = append(a.errs, pathError{p, fmt.Errorf("%s: %w", p, err)})
		return nil
	}
	return st
}

// ReadBlockStat reads the stat file of the block device name under fs's
// /sys/class/block: what the agent reads on every scrape for the devices
// on encrypted paths (the rest of the device is read with the topology).
func ReadBlockStat(fs hostfs.FS, name string) (*snapshot.BlockStat, error) {
	p := fs.SysPath("class", "block", name, "stat")
	v, err := hostfs.ReadValue(p)
	if err != nil {
		return nil, err
	}
	st, err := parseBlockStat(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return st, nil
}

// parseBlockStat parses the one line of a block device's stat file:
// 11 decimal fields on every kernel (read I/Os, merges, sectors, ticks;
// the same four for writes; in_flight, io_ticks, time_in_queue), 15 with
// the discard fields (Linux 4.18), 17 with the flush fields (Linux 5.5).
// Fields after the 17th (a later kernel's additions) are checked and
// counted in Fields, not kept. Fewer than 11, or a field that is not an unsigned
// decimal, is an error: a misread counter would be a wrong await, which is
// worse than none.
func parseBlockStat(line string) (*snapshot.BlockStat, error) {
	f := strings.Fields(line)
	if len(f) < 11 {
		return nil, fmt.Errorf("%w: %d fields, want at least 11 (Documentation/block/stat.rst)", errBlockStat, len(f))
	}
	v := make([]uint64, 17)
	for i, s := range f {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: field %d %q is not an unsigned number", errBlockStat, i+1, s)
		}
		if i < len(v) {
			v[i] = n
		}
	}
	return &snapshot.BlockStat{
		Fields:  len(f),
		ReadIOs: v[0], ReadMerges: v[1], ReadSectors: v[2], ReadTicksMS: v[3],
		WriteIOs: v[4], WriteMerges: v[5], WriteSectors: v[6], WriteTicksMS: v[7],
		InFlight: v[8], IOTicksMS: v[9], TimeInQueueMS: v[10],
		DiscardIOs: v[11], DiscardMerges: v[12], DiscardSectors: v[13], DiscardTicksMS: v[14],
		FlushIOs: v[15], FlushTicksMS: v[16],
	}, nil
}
