package vm

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// replayJob is the search incident's writers and random readers, small,
// for the guest, as fast as they go and direct, so that every I/O goes
// through dm-crypt while the job runs (buffered writes would reach it in
// writeback, after the run; mmap readers replay as preads, another
// engine), which is where no_workqueue acts: with an mmap reader, the
// replay came out "mixed" (IOPS better, p99 worse) where the job was
// "better". The search shape with mmap readers is TestFidelity's, on this
// host. Small enough (8 MiB written, 8 MiB read) for bench's free-space
// margin on a 128 MiB ramdisk, and short: the capture and 16 runs under
// the instruction-count model are the VM lab's longest scenario (8 minutes
// of a CPU with 8 MiB writers and 2 s readers, 6 with 4 MiB and 1 s).
const replayJob = `[global]
direct=1
ioengine=psync
[writer]
rw=write
bs=256k
size=4m
numjobs=2
fallocate=none
[reader]
rw=randread
bs=4k
filename=blob
size=8m
numjobs=2
runtime=1s
time_based
`

// TestCaptureReplay is issue 20's lab acceptance: the search job captured
// on ext4 over dm-crypt over brd, then replayed as fast as possible
// (replay-afap:DIR, as the original job runs) on two dm-crypt variants,
// default and no_workqueue (no_read_workqueue and no_write_workqueue),
// each ext4 over its own ramdisk, through compare's engine; the verdict on
// the first primary metric must agree with the same comparison run with
// the original fio job (see below for the second). Under
// the instruction-count model: with the host's load in the figures, the
// two comparisons once came out differently (a timed replay, judged on
// p99, against a rate-limited job, judged on IOPS, disagreed either way).
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
rc=0; spb compare --profile replay-afap:/tmp/cap --target default=/mnt/vdefault --target no_workqueue=/mnt/vnowq --runs 4 --format json > /results/replay.json 2> /results/replay.err || rc=$?; echo $rc > /results/replay.rc
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
	// The first primary metric (total IOPS for both: the job and the afap
	// replay run as fast as they go) must come out the same way and be
	// significant in both. The whole verdicts are logged, not compared:
	// the replay's p99 went the other way (160 µs to 1.6 ms, against the
	// job's 91 to 44 µs; docs/replay.md), a fidelity gap still open.
	first := func(name string) (metric, change string) {
		t.Helper()
		var r struct {
			Rows []struct {
				Metric, Role string
				Sides        []struct {
					Median          float64
					Verdict, Change string
				}
			}
		}
		if err := json.Unmarshal(res.Files[name+".json"], &r); err != nil {
			t.Fatalf("compare %s: %v", name, err)
		}
		for _, row := range r.Rows {
			if row.Role != "primary" && row.Role != "guard" {
				continue
			}
			var med []float64
			for _, sd := range row.Sides {
				med = append(med, sd.Median)
			}
			t.Logf("%s: %s (%s): medians default, no_workqueue %v", name, row.Metric, row.Role, med)
		}
		for _, row := range r.Rows {
			if row.Role == "primary" && len(row.Sides) == 2 {
				return row.Metric, row.Sides[1].Verdict + " " + row.Sides[1].Change
			}
		}
		t.Fatalf("compare %s: no primary row for two sides", name)
		return "", ""
	}
	rm, rc := first("replay")
	fm, fc := first("fio")
	t.Logf("no_workqueue against default: replay %s (%s %s), fio job %s (%s %s)", rv, rm, rc, fv, fm, fc)
	if rm != fm || rc != fc || rc != "significant better" {
		t.Errorf("first primary metric: replay %s %q, fio job %s %q: want both significant and better", rm, rc, fm, fc)
	}
}
