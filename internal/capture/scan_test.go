package capture

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/capture/capfile"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// writeTree writes files (path relative to dir -> content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUnitReadSystem: meminfo (through procfs) and the vm sysctls of a
// fixture tree; a missing meminfo leaves the sizes at 0.
func TestUnitReadSystem(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"proc/meminfo": "MemTotal:       16318480 kB\nMemFree:         1000000 kB\nMemAvailable:   12000000 kB\n" +
			"Buffers:          100000 kB\nCached:          8000000 kB\nDirty:               512 kB\nHugePages_Total:       0\n",
		"proc/sys/vm/dirty_ratio":  "20\n",
		"proc/sys/vm/page-cluster": "3\n",
	})
	got := readSystem(hostfs.New(dir))
	want := capfile.System{PageSize: uint64(os.Getpagesize()), MemTotalBytes: 16318480 << 10, MemAvailableBytes: 12000000 << 10,
		CachedBytes: 8000000 << 10, DirtyBytes: 512 << 10, Sysctls: map[string]string{"vm.dirty_ratio": "20", "vm.page-cluster": "3"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("readSystem (-want +got):\n%s", d)
	}
	empty := t.TempDir()
	writeTree(t, empty, map[string]string{"proc/sys/vm/dirty_ratio": "10\n"})
	if got := readSystem(hostfs.New(empty)); got.MemTotalBytes != 0 || got.Sysctls["vm.dirty_ratio"] != "10" {
		t.Errorf("without meminfo: %+v", got)
	}
}

// TestUnitCgroupFilter: the filter's directory is made relative to the
// cgroup2 mount holding it (the longest, on a hybrid host), and a process
// is in it when its cgroup v2 line names it or a directory below it.
func TestUnitCgroupFilter(t *testing.T) {
	mounts := []snapshot.Mount{
		{MountPoint: "/sys/fs/cgroup", FSType: "tmpfs"},
		{MountPoint: "/sys/fs/cgroup/memory", FSType: "cgroup"},
		{MountPoint: "/sys/fs/cgroup/unified", FSType: "cgroup2"},
	}
	rel, err := cgroupRel(mounts, "/sys/fs/cgroup/unified/app.slice/db")
	if err != nil || rel != "/app.slice/db" {
		t.Fatalf("cgroupRel = %q, %v; want /app.slice/db", rel, err)
	}
	if _, err := cgroupRel(mounts, "/sys/fs/cgroup/memory/db"); err == nil || !strings.Contains(err.Error(), "not in a cgroup v2 hierarchy") {
		t.Errorf("cgroupRel of a v1 directory: %v, want not in a cgroup v2 hierarchy", err)
	}

	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"proc/10/cgroup": "12:memory:/app.slice/db\n0::/app.slice/db/worker\n",
		"proc/11/cgroup": "0::/app.slice/dbx\n",
		"proc/12/cgroup": "12:memory:/app.slice/db\n", // v1 only
		"proc/13/cgroup": "0::/app.slice/db\n",
	})
	r, err := newRun(Options{FS: hostfs.New(dir), Cgroup: "/sys/fs/cgroup/unified/app.slice/db"}, &target{manifest: &capfile.Manifest{}, mounts: mounts})
	if err != nil {
		t.Fatal(err)
	}
	pfs, err := procfs.NewFS(filepath.Join(dir, "proc"))
	if err != nil {
		t.Fatal(err)
	}
	procs, err := pfs.AllProcs()
	if err != nil {
		t.Fatal(err)
	}
	sort.Sort(procs)
	var in []uint32
	for _, p := range procs {
		if r.inCgroup(p) {
			in = append(in, uint32(p.PID))
		}
	}
	if d := cmp.Diff([]uint32{10, 13}, in); d != "" {
		t.Errorf("processes in the cgroup (-want +got):\n%s", d)
	}
}

// TestUnitMajFlt reads a thread's major faults from its stat, whose name
// may hold spaces and parentheses.
func TestUnitMajFlt(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"proc/10/task/11/stat": "11 (a (b) c) S 1 10 10 0 -1 4194560 500 0 42 0 1 2 0 0 20 0 2 0 100 1000000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
	})
	r := &run{fs: hostfs.New(dir)}
	if n, ok := r.majFlt(10, 11); !ok || n != 42 {
		t.Errorf("majFlt = %d, %v; want 42", n, ok)
	}
	if _, ok := r.majFlt(10, 12); ok {
		t.Error("majFlt of a thread that is not there: ok")
	}
}

// TestUnitScanMaps registers the mappings of files on the mount's device
// (8:16) from a fixture maps file, and opens a mapped file through
// map_files under the kernel's name for it: without the zero padding maps
// prints for an address below 2^32.
func TestUnitScanMaps(t *testing.T) {
	dir := t.TempDir()
	mapped := filepath.Join(dir, "data")
	if err := os.WriteFile(mapped, make([]byte, 3*4096), 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(mapped, &st); err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{
		"proc/10/maps": fmt.Sprintf("00400000-00402000 r--s 00001000 08:10 %d                      /data/file\n", st.Ino) +
			"7f0000000000-7f0000001000 r--p 00000000 08:01 99                         /usr/lib/libc.so\n" +
			"7f0000002000-7f0000003000 rw-p 00000000 00:00 0 \n" +
			"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n",
	})
	if err := os.MkdirAll(filepath.Join(dir, "proc", "10", "map_files"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(mapped, filepath.Join(dir, "proc", "10", "map_files", "400000-402000")); err != nil {
		t.Fatal(err)
	}
	r, err := newRun(Options{FS: hostfs.New(dir)}, &target{manifest: &capfile.Manifest{System: capfile.System{PageSize: 4096}}, major: 8, minor: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer r.closeHandles()
	if got := r.scanProcesses(8, 16); !cmp.Equal(got, []uint32{10}) {
		t.Errorf("mappers = %v, want [10]", got)
	}
	want := []mapping{{start: 0x400000, end: 0x402000, pgoff: 0x1000, file: fileKey{8<<20 | 16, st.Ino}}}
	if d := cmp.Diff(want, r.maps[10], cmp.AllowUnexported(mapping{}, fileKey{})); d != "" {
		t.Errorf("mappings (-want +got):\n%s", d)
	}
	f := r.candidates[fileKey{8<<20 | 16, st.Ino}]
	if f == nil || f.handle == nil || f.f.SizeStartBytes != 3*4096 || f.f.ResidencyUnknown {
		t.Errorf("candidate = %+v, want the file opened through map_files/400000-402000", f)
	}
}
