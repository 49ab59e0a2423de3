package capture

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/capture/capfile"
	"github.com/slowpath/slowpath/internal/testing/loopfs"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// loopExt4 makes an ext4 filesystem on a loop device over a file of the
// root filesystem, mounts it and returns the mount point and the loop
// device's name. Everything is undone when t ends, also on failure.
func loopExt4(t testing.TB, size int64) (string, string) {
	t.Helper()
	return loopfs.LoopExt4(t, size)
}

// layoutJob writes the fio job text (its %s: the directory dir) to a
// file and lays its files out with fio, so a capture records the run only.
func layoutJob(t testing.TB, fio, text, dir string) string {
	t.Helper()
	job := filepath.Join(t.TempDir(), "job.fio")
	if err := os.WriteFile(job, fmt.Appendf(nil, text, dir), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(fio, "--create_only=1", job).CombinedOutput(); err != nil {
		t.Fatalf("fio layout: %v: %s", err, out)
	}
	return job
}

// startCapture runs Run(o, out) in a goroutine and returns once its
// tracer is attached; finish stops the capture and returns what Run
// returned. The capture is stopped when t ends, also on failure, before
// the filesystem under it is unmounted.
func startCapture(t testing.TB, o Options, out string) (finish func() (*Result, error)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		res *Result
		err error
	}
	done := make(chan result, 1)
	ready := make(chan struct{})
	o.Ready = func() { close(ready) }
	go func() {
		res, err := Run(ctx, o, out)
		done <- result{res, err}
	}()
	var r *result
	finish = func() (*Result, error) {
		if r == nil {
			cancel()
			x := <-done
			r = &x
		}
		return r.res, r.err
	}
	t.Cleanup(func() { finish() })
	select {
	case <-ready:
	case x := <-done:
		cancel()
		r = &x
		t.Fatalf("capture ended before it was ready: %v", x.err)
	}
	return finish
}

// zramExt4 hot-adds a zram device (bio-based, as dm and brd are), makes
// ext4 on it and mounts it; the device is reset and removed when t ends.
func zramExt4(t testing.TB, size int64) (string, string) {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "mkfs.ext4", "e2fsprogs")
	id, err := os.ReadFile("/sys/class/zram-control/hot_add")
	if err != nil {
		testenv.Unavailable(t, "no zram (modprobe zram): "+err.Error())
	}
	name := "zram" + strings.TrimSpace(string(id))
	t.Cleanup(func() {
		os.WriteFile("/sys/block/"+name+"/reset", []byte("1"), 0o200)
		if err := os.WriteFile("/sys/class/zram-control/hot_remove", []byte(strings.TrimSpace(string(id))), 0o200); err != nil {
			t.Errorf("remove %s: %v", name, err)
		}
	})
	if err := os.WriteFile("/sys/block/"+name+"/disksize", []byte(fmt.Sprint(size)), 0o200); err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return loopfs.Ext4(t, "/dev/"+name, dir), name
}

// testCgroup makes a cgroup v2 directory and removes it when t ends.
func testCgroup(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	root := ""
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[2] == "cgroup2" {
			root = f[1]
		}
	}
	if root == "" {
		testenv.Unavailable(t, "no cgroup2 hierarchy mounted")
	}
	cg := filepath.Join(root, fmt.Sprintf("slowpath-capture-test-%d", os.Getpid()))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Its processes have exited; a cgroup goes once empty.
		var err error
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			err = os.Remove(cg)
			if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Errorf("remove cgroup: %v", err)
		}
	})
	return cg
}

// inCgroup runs argv as a process of cgroup cg and waits for it.
func inCgroup(t testing.TB, cg string, argv ...string) []byte {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", `echo $$ > "$0"/cgroup.procs && exec "$@"`, cg}, argv...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v: %s", argv, err, out)
	}
	return out
}

// The search incident's shape, small: psync 4 MiB writers and mmap
// random readers.
const fioJob = `[global]
directory=%s
[writer]
rw=write
ioengine=psync
bs=4m
size=32m
nrfiles=2
numjobs=2
end_fsync=1
[reader]
rw=randread
ioengine=mmap
bs=4k
filename=blob
size=16m
io_size=4m
numjobs=2
`

type fioOut struct {
	Jobs []struct {
		Name  string `json:"jobname"`
		Read  fioDir `json:"read"`
		Write fioDir `json:"write"`
	} `json:"jobs"`
}

type fioDir struct {
	IOBytes   uint64 `json:"io_bytes"`
	TotalIOs  uint64 `json:"total_ios"`
	ShortIOs  uint64 `json:"short_ios"`
	DroppedIO uint64 `json:"drop_ios"`
}

// TestCaptureFio captures a known fio job in a cgroup on ext4 over a loop
// device and checks the capture against fio's own account, and that no
// name, path or content reached the capture; with the faults of this
// kernel (mm_filemap_fault from 6.17) and with those of older ones
// (exceptions:page_fault_user).
func TestCaptureFio(t *testing.T) {
	for _, src := range []string{"native", capfile.FaultSourcePageFault} {
		t.Run(src, func(t *testing.T) { captureFio(t, src == capfile.FaultSourcePageFault) })
	}
}

func captureFio(t *testing.T, pageFaultUser bool) {
	testenv.RequireRoot(t)
	fio := testenv.RequireTool(t, "fio", "fio")
	mnt, loop := loopExt4(t, 256<<20)
	cg := testCgroup(t)
	job := layoutJob(t, fio, fioJob, mnt)
	// Written back and dropped from the cache: fio's invalidate cannot drop
	// the dirty pages the layout left.
	loopfs.DropCache(t, filepath.Join(mnt, "blob"))
	// A file whose name and content are markers, read during the capture.
	nameMark, contentMark := "name-"+loopfs.RandomHex(t), "content-"+loopfs.RandomHex(t)
	secret := filepath.Join(mnt, nameMark)
	if err := os.WriteFile(secret, bytes.Repeat([]byte(contentMark), 1000), 0o644); err != nil {
		t.Fatal(err)
	}

	// A file held open before the capture, its first 16 pages cached.
	heldPath := filepath.Join(mnt, "held")
	if err := os.WriteFile(heldPath, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	hf, err := os.Open(heldPath)
	if err != nil {
		t.Fatal(err)
	}
	loopfs.DropCache(t, heldPath)
	if err := unix.Fadvise(int(hf.Fd()), 0, 16*4096, unix.FADV_WILLNEED); err != nil {
		t.Fatal(err)
	}
	hf.Close()
	fifo := filepath.Join(t.TempDir(), "go")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	holder := exec.Command("sh", "-c", `echo $$ > "$0"/cgroup.procs && exec 3<"$1" && read x < "$2" && dd bs=4096 count=1 <&3 of=/dev/null 2>/dev/null`, cg, heldPath, fifo)
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Process.Kill()
	// Wait until it holds the file.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/3", holder.Process.Pid)); l == heldPath {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("holder did not open its file")
		}
	}

	out := filepath.Join(t.TempDir(), "cap")
	finish := startCapture(t, Options{Mount: mnt, Cgroup: cg, pageFaultUser: pageFaultUser}, out)
	fioJSON := filepath.Join(t.TempDir(), "fio.json")
	inCgroup(t, cg, fio, "--output-format=json", "--output="+fioJSON, job)
	inCgroup(t, cg, "cat", secret)
	if err := os.WriteFile(fifo, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := holder.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	// cat's exit reached the ring buffer before cat was reaped.
	res, err := finish()
	if err != nil {
		t.Fatal(err)
	}
	var fo fioOut
	raw, err := os.ReadFile(fioJSON)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &fo); err != nil {
		t.Fatalf("fio json: %v", err)
	}
	var fioWrites, fioWriteBytes, fioReads uint64
	for _, j := range fo.Jobs {
		fioWrites += j.Write.TotalIOs
		fioWriteBytes += j.Write.IOBytes
		fioReads += j.Read.TotalIOs
	}

	c, err := capfile.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	m := c.Manifest
	if pageFaultUser && m.Kernel.FaultSource != capfile.FaultSourcePageFault {
		t.Errorf("fault source %s, want %s", m.Kernel.FaultSource, capfile.FaultSourcePageFault)
	}
	if m.Events.Dropped != 0 || m.Status != capfile.StatusComplete || m.Filters.CgroupID == 0 {
		t.Errorf("manifest: events %+v, status %s, filters %+v", m.Events, m.Status, m.Filters)
	}
	var loopDev uint32
	for _, d := range m.Devices {
		if d.Name == loop {
			loopDev = d.ID
			if d.Source != capfile.BlockSourceRq {
				t.Errorf("%s: source %s, want rq (loop is blk-mq)", loop, d.Source)
			}
		}
	}
	if loopDev == 0 {
		t.Fatalf("%s not among the devices %+v", loop, m.Devices)
	}
	count := map[capfile.OpKind]uint64{}
	var writes, writeBytes, majors, reads, readBytes uint64
	faultPages := map[[2]uint64]bool{}
	err = c.EachOp(func(o capfile.Op) error {
		count[o.Kind]++
		switch o.Kind {
		case capfile.OpWrite:
			if o.Flags&capfile.FlagPositional == 0 || o.Length != 4<<20 || o.Result != 4<<20 {
				t.Errorf("writer record %+v: want a 4 MiB pwrite64", o)
			}
			writes++
			writeBytes += uint64(o.Result)
		case capfile.OpRead:
			reads++
			readBytes += uint64(max(o.Result, 0))
		case capfile.OpFault:
			if o.Flags&capfile.FlagMajor != 0 {
				majors++
			}
			faultPages[[2]uint64{uint64(o.File), o.Offset}] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var blkRead, blkWrite uint64
	err = c.EachBlock(func(b capfile.Block) error {
		if b.Device != loopDev {
			return nil
		}
		switch b.Op {
		case capfile.BlockRead:
			blkRead += uint64(b.Bytes)
		case capfile.BlockWrite:
			blkWrite += uint64(b.Bytes)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fio: %d writes (%d bytes), %d reads; capture: %v, %d major faults on %d pages, block on %s: %d read, %d written; %d events, user CPU %v",
		fioWrites, fioWriteBytes, fioReads, count, majors, len(faultPages), loop, blkRead, blkWrite, res.Events, res.UserCPU)
	// Every pwrite64 of the writers, exactly.
	if writes != fioWrites || writeBytes != fioWriteBytes {
		t.Errorf("capture: %d writes of %d bytes; fio: %d of %d", writes, writeBytes, fioWrites, fioWriteBytes)
	}
	// fio's mmap readers read through page faults: each fio read touches
	// one page, so no more pages fault than fio read. The blob's cache was
	// dropped before the run and fio asks for no readahead (MADV_RANDOM),
	// so the first fault is a miss, read from the device.
	if len(faultPages) == 0 || uint64(len(faultPages)) > fioReads || majors == 0 || majors > count[capfile.OpFault] || blkRead == 0 {
		t.Errorf("faults: %d records on %d pages, %d major, for %d fio reads; %d bytes read from %s",
			count[capfile.OpFault], len(faultPages), majors, fioReads, blkRead, loop)
	}
	// end_fsync: the data reached the device before fio ended.
	if blkWrite < fioWriteBytes {
		t.Errorf("block writes %d bytes, below fio's %d", blkWrite, fioWriteBytes)
	}
	if count[capfile.OpFsync] == 0 || count[capfile.OpMmap] == 0 || count[capfile.OpOpen] == 0 || count[capfile.OpFadvise] == 0 {
		t.Errorf("missing fsync, mmap, open or fadvise records: %v", count)
	}
	// cat read the marker file (24000 bytes), dd a page of the held one.
	if readBytes != 24000+4096 {
		t.Errorf("read records: %d reads of %d bytes, want cat's 24000 and dd's 4096", reads, readBytes)
	}
	// 2 writer jobs × 2 files, the blob, the marker file, the held file.
	if len(m.Files) != 7 {
		t.Errorf("%d files, want 7: %+v", len(m.Files), m.Files)
	}
	// The held file was open at the start with its first 16 pages cached.
	// The others were first used during the capture: their residency,
	// when known, is from their first sight.
	held := 0
	for _, f := range m.Files {
		if !f.ResidencyUnknown && f.ResidencyAtNS != 0 && f.ResidentPages > (f.SizeStartBytes+m.System.PageSize-1)/m.System.PageSize {
			t.Errorf("file %+v: more resident pages than its size at first sight", f)
		}
		if !f.ResidencyUnknown && f.ResidencyAtNS == 0 {
			held++
			if f.SizeBytes != 1<<20 || f.SizeStartBytes != 1<<20 || f.ResidentPages != 16 || len(f.Resident) != 1 || f.Resident[0] != [2]uint64{0, 16} {
				t.Errorf("held file %+v: want 1 MiB with pages 0-15 resident", f)
			}
		}
	}
	if held != 1 {
		t.Errorf("%d files with a residency at the start, want the held one", held)
	}
	for _, f := range m.Files {
		if f.SizeBytes == 0 {
			t.Errorf("file %s without a size", f.Name)
		}
	}

	// Privacy: no marker, no real path, anywhere in the directory.
	ents, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(out, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{nameMark, contentMark, mnt, filepath.Base(mnt), cg, heldPath, filepath.Base(cg), "writer.0.0", "blob", job} {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s holds %q", e.Name(), s)
			}
		}
	}
}

func TestMountOf(t *testing.T) {
	mnt, _ := loopExt4(t, 32<<20)
	sub := filepath.Join(mnt, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{mnt, sub} {
		if got, err := MountOf(dir); err != nil || got != mnt {
			t.Errorf("MountOf(%s) = %q, %v; want %s", dir, got, err, mnt)
		}
	}
	if got, err := MountOf("/"); err != nil || got != "/" {
		t.Errorf("MountOf(/) = %q, %v", got, err)
	}
}

// TestBlockOnly captures block requests of a dd on a filesystem on a
// request-based device (loop: block_rq_*) and on a bio-based one (zram:
// block_bio_*, as dm and brd), with no file-level records.
func TestBlockOnly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		make   func(testing.TB, int64) (string, string)
		source string
	}{{"loop", loopExt4, capfile.BlockSourceRq}, {"zram", zramExt4, capfile.BlockSourceBio}} {
		t.Run(tc.name, func(t *testing.T) {
			mnt, dev := tc.make(t, 64<<20)
			blockOnly(t, mnt, dev, tc.source)
		})
	}
}

func blockOnly(t *testing.T, mnt, loop, source string) {
	out := filepath.Join(t.TempDir(), "cap")
	finish := startCapture(t, Options{Mount: mnt, BlockOnly: true}, out)
	if out, err := exec.Command("dd", "if=/dev/zero", "of="+filepath.Join(mnt, "f"), "bs=1M", "count=8", "oflag=direct").CombinedOutput(); err != nil {
		t.Fatalf("dd: %v: %s", err, out)
	}
	if _, err := finish(); err != nil {
		t.Fatal(err)
	}
	c, err := capfile.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	if c.Manifest.Events.Ops != 0 || !c.Manifest.Filters.BlockOnly {
		t.Errorf("block-only capture: %d ops, filters %+v", c.Manifest.Events.Ops, c.Manifest.Filters)
	}
	var written uint64
	var latency bool
	err = c.EachBlock(func(b capfile.Block) error {
		if c.Manifest.Devices[b.Device-1].Name == loop && b.Op == capfile.BlockWrite {
			written += uint64(b.Bytes)
			latency = latency || b.Latency > 0
		}
		return nil
	})
	for _, d := range c.Manifest.Devices {
		if d.Name == loop && d.Source != source {
			t.Errorf("%s: source %s, want %s", d.Name, d.Source, source)
		}
	}
	if !latency {
		t.Errorf("no write on %s with a latency", loop)
	}
	if err != nil {
		t.Fatal(err)
	}
	// O_DIRECT: the 8 MiB reached the device during dd.
	if written < 8<<20 {
		t.Errorf("%d bytes written on %s, want at least 8 MiB", written, loop)
	}
}

// TestDrops fills a one-page ring buffer while the reader is held in
// Ready: the capture must count what it lost, say so in the manifest, and
// fail unless asked to keep it.
func TestDrops(t *testing.T) {
	mnt, _ := loopExt4(t, 64<<20)
	p := filepath.Join(mnt, "f")
	if err := os.WriteFile(p, make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Sync()
	f.Close()
	for _, accept := range []bool{false, true} {
		t.Run(fmt.Sprintf("accept=%v", accept), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "cap")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// 1000 reads of a cached page: 1001 events (the open too), far
			// more than a page of ring holds, with nobody reading.
			burst := func() {
				if out, err := exec.Command("dd", "if="+p, "of=/dev/null", "bs=4096", "count=1000").CombinedOutput(); err != nil {
					t.Errorf("dd: %v: %s", err, out)
				}
				cancel()
			}
			res, err := Run(ctx, Options{Mount: mnt, RingBytes: uint32(os.Getpagesize()), AcceptDrops: accept, Ready: burst}, out)
			if accept && err != nil {
				t.Fatalf("with AcceptDrops: %v", err)
			}
			if !accept && !errors.Is(err, ErrDropped) {
				t.Fatalf("err = %v, want ErrDropped", err)
			}
			m := res.Manifest
			if m.Events.Dropped == 0 || m.Events.Ops > 1001 || m.Events.Ops+m.Events.Dropped < 1001 {
				t.Errorf("%d ops recorded, %d events dropped, for dd's 1001", m.Events.Ops, m.Events.Dropped)
			}
			c, err := capfile.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Verify(); err != nil {
				t.Fatal(err)
			}
			if c.Manifest.Events.Dropped != m.Events.Dropped {
				t.Errorf("manifest on disk says %d dropped, Run %d", c.Manifest.Events.Dropped, m.Events.Dropped)
			}
		})
	}
}
