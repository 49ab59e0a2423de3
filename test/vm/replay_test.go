package vm

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// replayJob is the search incident's writers and random reader, small,
// for the guest, as fast as they go and direct, so that every I/O goes
// through dm-crypt while the job runs (buffered writes would reach it in
// writeback, after the run; mmap readers replay as preads, another
// engine), which is where no_workqueue acts. The search shape with mmap
// readers is TestFidelity's, on this host. One reader for the guest's one
// CPU: under no_workqueue a ramdisk read never sleeps, and two readers
// were time-sliced, which put 0.8% of reads in a millisecond mode and the
// p99 on the edge between modes (docs/replay.md). 64 KiB writes: 64 of
// them against about 13,000 reads, so that they lie between the p99 and
// the p99.9 of all I/Os rather than on either. Small enough (4 MiB
// written, 8 MiB read) for bench's free-space margin on a 128 MiB ramdisk,
// and short: the capture and 16 runs under the instruction-count model
// are the VM lab's longest scenario. Half a second of reading and 2 MiB
// per writer (half of the first shape: 7.8 minutes of a contended CPU in
// a run from empty caches) keep the writes' share of the I/Os.
const replayJob = `[global]
direct=1
ioengine=psync
[writer]
rw=write
bs=64k
size=2m
numjobs=2
fallocate=none
[reader]
rw=randread
bs=4k
filename=blob
size=8m
runtime=500ms
time_based
`

// TestCaptureReplay is issue 20's and 27's lab acceptance: the search job
// captured on ext4 over dm-crypt over brd, then replayed as fast as
// possible for as long as each thread was busy (replay-span:DIR: the
// job's reader is bound by time, its writers by size, and so are the
// replay's) on two dm-crypt variants, default and no_workqueue
// (no_read_workqueue and no_write_workqueue), each ext4 over its own
// ramdisk, through compare's engine; the verdict on every primary metric
// and guard must be the same as the same comparison's with the original
// fio job. Under the instruction-count model: with the host's load in the
// figures, the two comparisons once came out differently.
func TestCaptureReplay(t *testing.T) {
	t.Parallel()
	onKernels(t, fullSet, testCaptureReplay)
}

func testCaptureReplay(t *testing.T, k *kernelLab) {
	key, key2, key3 := randomHex(t, 64), randomHex(t, 64), randomHex(t, 64)
	res := boot(t, k, Scenario{Name: "capture-replay", Timeout: 15 * time.Minute, Icount: true, Script: prelude + `
spb() { env PATH=/bin:/usr/bin:/usr/sbin /usr/bin/slowpath "$@"; }
# The syscall tracepoints are found through tracefs (TestCaptureOnCrypt).
mount -t tracefs nodev /sys/kernel/tracing
modprobe brd rd_nr=3 rd_size=131072
sz=$(cat /sys/block/ram0/size)
dmsetup create cap --table "0 $sz crypt aes-xts-plain64 ` + key + ` 0 /dev/ram0 0"
dmsetup create vdefault --table "0 $sz crypt aes-xts-plain64 ` + key2 + ` 0 /dev/ram1 0"
dmsetup create vnowq --table "0 $sz crypt aes-xts-plain64 ` + key3 + ` 0 /dev/ram2 0 2 no_read_workqueue no_write_workqueue"
for d in cap vdefault vnowq; do mke2fs -q -t ext4 /dev/mapper/$d; mkdir -p /mnt/$d; mount -t ext4 /dev/mapper/$d /mnt/$d; done
cat > /tmp/search.fio <<'JOB'
` + replayJob + `JOB
mkdir -p /mnt/cap/job
# The blob exists before the capture, out of the cache, as an index would.
dd if=/dev/urandom of=/mnt/cap/job/blob bs=1M count=16 status=none conv=fsync
echo 3 > /proc/sys/vm/drop_caches
# Until stopped (SIGINT after the job); the job starts once it is attached.
# Not through spb: $! must be slowpath itself (env execs it), since an
# asynchronous list of a non-interactive shell ignores SIGINT.
env PATH=/bin:/usr/bin:/usr/sbin /usr/bin/slowpath capture --duration 0 --mount /mnt/cap --comm fio --ready-file /tmp/cap.ready -o /tmp/cap > /results/capture.txt 2>&1 &
cap=$!
i=0; until [ -e /tmp/cap.ready ]; do i=$((i+1)); [ $i -lt 600 ] || { echo "capture never attached"; exit 1; }; sleep 0.1; done
echo "replay scenario: capturing the job"
(cd /mnt/cap/job && fio --output-format=terse /tmp/search.fio > /results/fio-orig.txt)
kill -INT $cap
rc=0; wait $cap || rc=$?; echo $rc > /results/capture.rc
cp /tmp/cap/manifest.json /results/
echo "replay scenario: compare replay:/tmp/cap"
rc=0; spb compare --profile replay-span:/tmp/cap --target default=/mnt/vdefault --target no_workqueue=/mnt/vnowq --runs 4 --format json > /results/replay.json 2> /results/replay.err || rc=$?; echo $rc > /results/replay.rc
echo "replay scenario: compare fio:/tmp/search.fio"
rc=0; spb compare --profile fio:/tmp/search.fio --target default=/mnt/vdefault --target no_workqueue=/mnt/vnowq --runs 4 --format json > /results/fio.json 2> /results/fio.err || rc=$?; echo $rc > /results/fio.rc
for d in cap vdefault vnowq; do umount /mnt/$d; dmsetup remove $d; done
rmmod brd
umount /sys/kernel/tracing
`})
	t.Logf("capture: %s", res.Files["capture.txt"])
	if rc := strings.TrimSpace(string(res.Files["capture.rc"])); rc != "0" {
		t.Fatalf("capture exited %s: %s", rc, res.Files["capture.txt"])
	}
	verdict := func(name string) string {
		t.Helper()
		if rc := strings.TrimSpace(string(res.Files[name+".rc"])); rc != "0" && rc != "1" {
			t.Fatalf("compare %s exited %s: %s", name, rc, res.Files[name+".err"])
		}
		var r struct {
			Verdicts []struct {
				Side, Versus, Outcome string
			} `json:"verdicts"`
		}
		if err := json.Unmarshal(res.Files[name+".json"], &r); err != nil {
			t.Fatalf("compare %s: %v\n%s", name, err, res.Files[name+".json"])
		}
		for _, v := range r.Verdicts {
			if v.Side == "no_workqueue" && v.Versus == "default" {
				return v.Outcome
			}
		}
		t.Fatalf("compare %s: no verdict of no_workqueue against default: %s", name, res.Files[name+".json"])
		return ""
	}
	rv, fv := verdict("replay"), verdict("fio")
	// Every primary metric and guard (total IOPS and p99, then p99.9 and
	// CPU per I/O) must come out the same way for the replay as for the
	// job, and the first, IOPS, must be significant and better in both.
	type cell struct{ Verdict, Change string }
	rows := func(name string) (order []string, out map[string]cell) {
		t.Helper()
		var r struct {
			Rows []struct {
				Metric, Role string
				Sides        []struct {
					Values          []float64
					Median          float64
					Verdict, Change string
				}
			}
		}
		if err := json.Unmarshal(res.Files[name+".json"], &r); err != nil {
			t.Fatalf("compare %s: %v", name, err)
		}
		out = map[string]cell{}
		for _, row := range r.Rows {
			if (row.Role != "primary" && row.Role != "guard") || len(row.Sides) != 2 {
				continue
			}
			// The runs too: how far apart the sides are says how close a
			// verdict came to changing.
			t.Logf("%s: %s (%s): medians default %.4g, no_workqueue %.4g: %s %s; runs %.4g, %.4g", name, row.Metric, row.Role,
				row.Sides[0].Median, row.Sides[1].Median, row.Sides[1].Verdict, row.Sides[1].Change, row.Sides[0].Values, row.Sides[1].Values)
			order = append(order, row.Metric)
			out[row.Metric] = cell{row.Sides[1].Verdict, row.Sides[1].Change}
		}
		return order, out
	}
	rorder, rr := rows("replay")
	forder, fr := rows("fio")
	t.Logf("no_workqueue against default: replay %s, fio job %s", rv, fv)
	if !slices.Equal(rorder, forder) || len(rorder) == 0 {
		t.Fatalf("primary and guard rows: replay %v, fio job %v", rorder, forder)
	}
	for _, m := range rorder {
		if rr[m] != fr[m] {
			t.Errorf("%s: replay %q, fio job %q: want the same", m, rr[m], fr[m])
		}
	}
	if first := rr[rorder[0]]; first != (cell{"significant", "better"}) {
		t.Errorf("%s: %q, want significant and better", rorder[0], first)
	}
}
