// Package capfiletest writes small captures for tests of what reads them
// (bench replay, lab crypt's replay profile, the VM lab), in the format of
// internal/capture/capfile, without running a capture.
package capfiletest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/capture/capfile"
)

// Service writes a capture directory named cap in a temporary directory of
// t and returns its path: a writer appending 64 KiB with an fdatasync every
// 8 (to a file it created), and a reader of a 4 MiB file, 40 operations
// each 2 ms apart, with a block read per pair.
func Service(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cap")
	w, err := capfile.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range uint64(40) {
		at := i * uint64(2*time.Millisecond)
		ops := []capfile.Op{
			{Kind: capfile.OpWrite, Thread: 1, File: 1, Flags: capfile.FlagPositional, Offset: i << 16, Length: 1 << 16, Result: 1 << 16, Start: at, End: at + 50e3},
			{Kind: capfile.OpRead, Thread: 2, File: 2, Flags: capfile.FlagPositional, Offset: (i * 7919 % 1024) << 12, Length: 4096, Result: 4096, Start: at, End: at + 30e3},
		}
		if i%8 == 7 {
			ops = append(ops, capfile.Op{Kind: capfile.OpFdatasync, Thread: 1, File: 1, Start: at + 60e3, End: at + 900e3})
		}
		for _, o := range ops {
			if err := w.Ops.Write(o); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Block.Write(capfile.Block{Device: 1, Op: capfile.BlockRead, Bytes: 4096, Issue: at, Latency: 25e3}); err != nil {
			t.Fatal(err)
		}
	}
	m := &capfile.Manifest{Status: capfile.StatusComplete, Started: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC), DurationNS: 1e9,
		Kernel:  capfile.Kernel{Release: "6.1.0-test", FaultSource: capfile.FaultSourceFilemap},
		Filters: capfile.Filters{MountDevice: "254:0", FSType: "ext4"}, Limits: capfile.Limits{DurationNS: 1e9, MaxRecords: 1 << 20},
		Devices: []capfile.Device{{ID: 1, Name: "vda", MajorMinor: "254:0", Kind: "disk", Source: capfile.BlockSourceRq}},
		Files:   []capfile.File{{ID: 1, Name: "f0001", ResidencyUnknown: true}, {ID: 2, Name: "f0002", SizeBytes: 4 << 20, SizeStartBytes: 4 << 20}},
		Threads: []capfile.Thread{{ID: 1, Process: 1}, {ID: 2, Process: 1}},
		System:  capfile.System{PageSize: 4096, Sysctls: map[string]string{}}}
	if err := w.Finish(m); err != nil {
		t.Fatal(err)
	}
	return dir
}
