// Package taxtree writes, for tests, a host tree with one dm-crypt mount
// (/data on dm-0, a LUKS2 mapping over nvme0n1) whose block counters the
// test advances, and answers the device-mapper ioctl for it: a node whose
// encryption tax the agent reads, on a test host without dm-crypt.
package taxtree

import (
	_ "embed"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/slowpath/slowpath/internal/collect/storage"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/stdfile"
	"github.com/slowpath/slowpath/internal/testing/dmtest"
	"github.com/slowpath/slowpath/internal/testing/hostfstest"
)

// Top and Bottom are the kernel names of the crypt mapping and the disk
// beneath it; MountPoint is the filesystem on the mapping.
const (
	Top        = "dm-0"
	Bottom     = "nvme0n1"
	MountPoint = "/data"
)

const (
	topDir    = "sys/devices/virtual/block/dm-0"
	bottomDir = "sys/devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1"
)

// staticTree is the part of the tree that does not move.
//
//go:embed tree.txtar
var staticTree []byte

// Tree is the host tree. Advance is safe to call while an agent reads it.
type Tree struct {
	Root string
	FS   hostfs.FS // not live: the tree is not this host's

	mu          sync.Mutex
	top, bottom counters
}

// counters are the fields of the stat file the tree moves: reads, their
// sectors and ticks, io_ticks and time_in_queue.
type counters struct{ ios, sectors, ticksMS, ioTicksMS, inQueueMS uint64 }

func (c counters) line() string {
	// Documentation/block/stat.rst: 17 fields on 5.5+; writes, discards
	// and flushes stay 0.
	return fmt.Sprintf("%d 0 %d %d 0 0 0 0 0 %d %d 0 0 0 0 0 0\n", c.ios, c.sectors, c.ticksMS, c.ioTicksMS, c.inQueueMS)
}

// Write makes the tree in a temporary directory with cpus processors.
func Write(t testing.TB, cpus int) *Tree {
	t.Helper()
	root := t.TempDir()
	hostfstest.Extract(t, root, txtar.Parse(staticTree))
	var ci strings.Builder
	for i := range cpus {
		fmt.Fprintf(&ci, "processor\t: %d\nmodel name\t: Test CPU\nflags\t\t: fpu sse2 aes avx2\n\n", i)
	}
	hostfstest.WriteFile(t, root, "proc/cpuinfo", ci.String())
	tr := &Tree{Root: root, FS: hostfs.New(root)}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if err := tr.write(); err != nil {
		t.Fatal(err)
	}
	return tr
}

// OpenDM answers DM_TABLE_STATUS for dm-0: aes-xts-plain64 with a 512-bit
// key over 259:0, no optional flags (the kcryptd workqueues in use).
func (tr *Tree) OpenDM() (storage.DMControl, error) {
	key := strings.Repeat("00", 64)
	return &dmtest.Control{Payloads: map[string][]byte{
		"253:0": dmtest.EncodeTableStatus([]dmtest.Target{dmtest.T(0, 1953492400, "crypt", "aes-xts-plain64 "+key+" 0 259:0 32768")}),
	}}, nil
}

// Advance adds ios reads of bytesPerIO each at both devices, waiting
// topAwaitUS at dm-0 and bottomAwaitUS at nvme0n1 on average, with one I/O
// in flight. The kernel counts ticks in whole milliseconds, so ios times
// each await must be a multiple of 1000 µs: then the await over any run of
// Advance calls is exact, however a scrape falls between them.
func (tr *Tree) Advance(ios, bytesPerIO, topAwaitUS, bottomAwaitUS uint64) error {
	if ios*topAwaitUS%1000 != 0 || ios*bottomAwaitUS%1000 != 0 || bytesPerIO%512 != 0 {
		return fmt.Errorf("taxtree: %d I/Os at %d and %d µs of %d bytes are not whole ms and sectors", ios, topAwaitUS, bottomAwaitUS, bytesPerIO)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, d := range []struct {
		c       *counters
		awaitUS uint64
	}{{&tr.top, topAwaitUS}, {&tr.bottom, bottomAwaitUS}} {
		ms := ios * d.awaitUS / 1000
		d.c.ios += ios
		d.c.sectors += ios * bytesPerIO / 512
		d.c.ticksMS += ms
		d.c.ioTicksMS += ms
		d.c.inQueueMS += ms
	}
	return tr.write()
}

// write replaces both stat files, each whole (stdfile.WriteFile), so a
// reader sees the old or the new line, never half of one.
func (tr *Tree) write() error {
	for _, f := range []struct {
		dir string
		c   counters
	}{{topDir, tr.top}, {bottomDir, tr.bottom}} {
		if err := stdfile.WriteFile(filepath.Join(tr.Root, f.dir, "stat"), func(w io.Writer) error {
			_, err := io.WriteString(w, f.c.line())
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// Keep advances the tree by Advance(ios, bytesPerIO, topAwaitUS,
// bottomAwaitUS) every 50 ms until the test ends: a workload that never
// changes its awaits, so any window Prometheus takes sees them exactly.
func (tr *Tree) Keep(t testing.TB, ios, bytesPerIO, topAwaitUS, bottomAwaitUS uint64) {
	t.Helper()
	if err := tr.Advance(ios, bytesPerIO, topAwaitUS, bottomAwaitUS); err != nil {
		t.Fatal(err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				// Checked above: the same arguments cannot fail but on a
				// write error, which the agent's next scrape reports.
				_ = tr.Advance(ios, bytesPerIO, topAwaitUS, bottomAwaitUS)
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
}
