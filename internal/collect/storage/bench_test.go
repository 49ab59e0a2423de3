package storage_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/collect"
	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/collect/host"
	"github.com/slowpath/slowpath/internal/collect/storage"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/dmtest"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// notEncrypted answers every fscrypt question with "not encrypted": the
// synthetic tree has no real mount points to open.
type notEncrypted struct{}

func (notEncrypted) Policy(string, uint64) (*snapshot.Fscrypt, error) { return nil, unix.ENODATA }

var (
	refOnce sync.Once
	refDur  time.Duration
	refErr  error
)

// lsblkAndTableFiles is the by-hand reading of the same synthetic tree:
// `lsblk --sysroot` for the device tree and one read per dm table file.
// It stands in for `dmsetup table` only as far as parsing goes: this
// kernel has no device-mapper, so neither side talks to it here.
func lsblkAndTableFiles(dir string, syn *dmtest.Synthetic) error {
	cmd := exec.Command("lsblk", "-J", "-O", "--sysroot", dir)
	cmd.Stdout = io.Discard
	if err := cmd.Run(); err != nil {
		return err
	}
	for name := range syn.Tables {
		if _, err := os.ReadFile(filepath.Join(dir, "dmtables", name)); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkDoctorSynthetic512 times collection plus analysis of a
// synthetic sysfs tree with 512 dm-crypt devices over NVMe partitions,
// and in the same run lsblk --sysroot on that tree plus reading its 512
// table files. It measures parsing and analysis only: slowpath's DM
// answers come from an in-memory fake (dmtest.Control, no ioctl) and the
// reference reads files instead of running dmsetup, since this kernel has
// no device-mapper. x_vs_lsblk_sysroot_tablefiles is (reference time /
// slowpath time). The real DM ioctl against the real dmsetup is timed in
// the VM lab (TestDMTimingVsDmsetup in test/vm), as functional evidence
// only under TCG.
func BenchmarkDoctorSynthetic512(b *testing.B) {
	testenv.RequireTool(b, "lsblk", "util-linux")
	dir := b.TempDir()
	syn, err := dmtest.WriteSynthetic(dir, 512)
	if err != nil {
		b.Fatal(err)
	}
	fs := hostfs.New(dir)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		ctl := &dmtest.Control{Payloads: syn.Payloads}
		c := &storage.Collector{FS: fs, OpenDM: func() (storage.DMControl, error) { return ctl, nil }, Fscrypt: notEncrypted{}}
		s := &snapshot.Snapshot{Manifest: snapshot.Manifest{FormatVersion: snapshot.FormatVersion}}
		c.Collect(context.Background(), s)
		if _, err := analyze.Run(s, check.Config{}); err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			if len(s.Manifest.Errors) != 0 || len(s.Storage.BlockDevices) != 512+512+4 {
				b.Fatalf("synthetic collection: %d devices, errors %+v", len(s.Storage.BlockDevices), s.Manifest.Errors)
			}
		}
	}
	ours := time.Since(start) / time.Duration(b.N)
	b.StopTimer()
	// The reference takes seconds; run it once per process however many
	// rounds the benchmark framework asks for.
	refOnce.Do(func() {
		t0 := time.Now()
		refErr = lsblkAndTableFiles(dir, syn)
		refDur = time.Since(t0)
	})
	if refErr != nil {
		b.Fatalf("lsblk and table files: %v", refErr)
	}
	b.ReportMetric(float64(refDur.Nanoseconds()), "lsblk_sysroot_tablefiles-ns")
	b.ReportMetric(float64(refDur)/float64(ours), "x_vs_lsblk_sysroot_tablefiles")
}

// BenchmarkCollectStorageLive times host and storage collection on this
// machine's real /proc and /sys.
func BenchmarkCollectStorageLive(b *testing.B) {
	fs := hostfs.Default()
	for i := 0; i < b.N; i++ {
		s := &snapshot.Snapshot{Manifest: snapshot.Manifest{FormatVersion: snapshot.FormatVersion}}
		host.Collect(fs, s)
		storage.Collect(context.Background(), fs, s)
		if s.Storage == nil || len(s.Storage.Mounts) == 0 {
			b.Fatal("no mounts collected")
		}
	}
}

// BenchmarkDoctorLive times a whole doctor run on this machine (every
// collector, then analysis) without the network sampling interval (one
// counter sample) and without instance metadata (tests never contact it).
// Target: 100 ms.
func BenchmarkDoctorLive(b *testing.B) {
	o := collect.Options{FS: hostfs.Default(), Cloud: cloud.Options{Cloud: "none"}}
	for i := 0; i < b.N; i++ {
		s := collect.Run(context.Background(), o)
		if _, err := analyze.Run(s, check.Config{}); err != nil {
			b.Fatal(err)
		}
	}
}
