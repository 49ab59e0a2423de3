package vm

import (
	"strings"
	"testing"
	"time"
)

// fixProveJob is the workload of TestFixProve: 4 KiB random direct writes
// for half a second of guest time (10 runs of 1 s made most of the
// scenario's 4.5 minutes), so every I/O goes through dm-crypt's write
// path, where the workqueue bypass acts.
const fixProveJob = `[global]
ioengine=psync
direct=1
bs=4k
size=16m
filename=data
time_based
runtime=500ms
[w]
rw=randwrite
`

// TestFixProve is `slowpath fix --apply --prove` on real dm-crypt (over
// brd, ext4 on top) under the instruction-count model (Scenario.Icount),
// where runs repeat closely enough for a 4-against-4 U test to mean
// something:
//
//  1. one prove of two entries: dmcrypt.workqueue, which the workload
//     exercises (the bypass takes the encryption out of kcryptd: the
//     model's IOPS rise by a third, docs/lab.md), is kept with a
//     significant primary-metric improvement; net.backlog-drops (a sysctl
//     no disk workload reads, its finding made to fire by raising the
//     softnet drop counter of the snapshot's second sample) is rolled back
//     with "no significant difference"; the output has both tables; the
//     sysctl is back, the table has the flags, the state file records them.
//  2. SIGINT while the change is live (the table shows the flags):
//     fix exits 2 and the original table is back (`dmsetup table` before
//     and after), with nothing left recorded.
func TestFixProve(t *testing.T) {
	t.Parallel()
	onKernels(t, fullSet, testFixProve)
}

func testFixProve(t *testing.T, k *kernelLab) {
	key := randomHex(t, 64)
	res := boot(t, k, Scenario{Name: "fix-prove", Icount: true, Timeout: 20 * time.Minute,
		Files: map[string][]byte{"/root/job.fio": []byte(fixProveJob)}, Script: prelude + `
# fio is in /usr/bin: the workload needs it on PATH.
spb() { env PATH=/bin:/usr/bin:/usr/sbin /usr/bin/slowpath "$@"; }
stamp() { echo "vm: phase $1 at $(cut -d' ' -f1 /proc/uptime)"; }
# The table without its key.
table() { dmsetup table spprove | awk '{ $5 = "KEY"; print }'; }
modprobe brd rd_nr=1 rd_size=65536
dmsetup create spprove --table "0 $(cat /sys/block/ram0/size) crypt aes-xts-plain64 ` + key + ` 0 /dev/ram0 0"
mke2fs -q -t ext4 /dev/mapper/spprove
mkdir -p /mnt/p /tmp/fix
mount -t ext4 /dev/mapper/spprove /mnt/p
cat /proc/sys/net/core/netdev_max_backlog > /results/backlog-before
table > /results/table-before

# A snapshot of this boot whose second network sample has 5000 more
# backlog drops on cpu0 than the first: net.backlog-drops fires on it.
sp collect --cloud none --net-interval 1s -o /tmp/live.json
last=$(grep -n '"dropped"' /tmp/live.json | tail -1 | cut -d: -f1)
awk -v last=$last 'NR == last { match($0, /[0-9]+/); $0 = substr($0, 1, RSTART-1) (substr($0, RSTART, RLENGTH) + 5000) substr($0, RSTART+RLENGTH) } { print }' /tmp/live.json > /tmp/drops.json
prove() { spb fix --cloud none --net-interval 0 --state /tmp/fix/state.json --apply --from /tmp/drops.json --prove fio:/root/job.fio --dir /mnt/p --runs 4 "$@"; }

stamp "1: prove"
rc=0
prove --only dmcrypt.workqueue,net.backlog-drops --html /results/prove.html > /results/prove.out 2> /results/prove.err || rc=$?
echo $rc > /results/prove.rc
cat /proc/sys/net/core/netdev_max_backlog > /results/backlog-after
table > /results/table-kept
cp /tmp/fix/state.json /results/state-kept.json || true
ls /results/prove-*.html > /results/html-files 2>/dev/null || true
spb fix --rollback --state /tmp/fix/state.json 2> /results/rollback.err
table > /results/table-rolled-back

stamp "2: SIGINT"
waitfor() { i=0; until grep -q "$1" "$2"; do sleep 0.2; i=$((i+1)); [ $i -lt 3000 ] || { echo "timeout waiting for $1 in $2"; cat "$2"; exit 1; }; done; }
env PATH=/bin:/usr/bin:/usr/sbin /usr/bin/slowpath fix --cloud none --net-interval 0 --state /tmp/fix/state.json --apply --from /tmp/drops.json --prove fio:/root/job.fio --dir /mnt/p --runs 4 --only dmcrypt.workqueue > /results/int.out 2> /results/int.err &
pid=$!
# Interrupt while the change is live: the first "on" run's setup has
# loaded the flags.
i=0; until dmsetup table spprove | grep -q no_write_workqueue; do sleep 0.1; i=$((i+1)); [ $i -lt 6000 ] || { echo "the flags never appeared"; cat /results/int.err; exit 1; }; done
table > /results/table-during
kill -INT $pid
rc=0; wait $pid || rc=$?
echo $rc > /results/int.rc
table > /results/table-after-int
[ ! -e /tmp/fix/state.json ] || cp /tmp/fix/state.json /results/state-after-int.json
cat /proc/sys/net/core/netdev_max_backlog > /results/backlog-after-int
ls -A /mnt/p | grep -v -e '^lost+found$' > /results/left.txt || true

stamp end
umount /mnt/p
dmsetup remove spprove
rmmod brd
`})
	file := func(n string) string {
		t.Helper()
		b, ok := res.Files[n]
		if !ok {
			t.Fatalf("guest produced no %s", n)
		}
		return string(b)
	}
	trim := func(n string) string { return strings.TrimSpace(file(n)) }
	for name, b := range res.Files {
		if strings.Contains(strings.ToLower(string(b)), key) {
			t.Errorf("the crypt key appears in %s", name)
		}
	}
	out, errs := file("prove.out"), file("prove.err")
	t.Logf("fix --apply --prove (icount model):\n%s\n%s", out, errs)
	before := file("table-before")
	if strings.Contains(before, "workqueue") {
		t.Fatalf("the table has the flags before the test: %s", before)
	}

	t.Run("kept and rolled back", func(t *testing.T) {
		// One entry rolled back: exit 1.
		if rc := trim("prove.rc"); rc != "1" {
			t.Errorf("fix --apply --prove exited %s, want 1 (one change rolled back)", rc)
		}
		for _, want := range []string{
			"dmcrypt.workqueue on /dev/mapper/spprove: kept, proven by measurement: significantly better: total_iops +",
			"net.backlog-drops on softnet: rolled back: no significant difference: total_iops",
			"run 8/8: off (/mnt/p)",
		} {
			if !strings.Contains(errs, want) {
				t.Errorf("stderr lacks %q", want)
			}
		}
		if strings.Contains(errs, "verified") {
			t.Error("a measured change is called verified")
		}
		// Both comparisons, as compare prints them.
		for _, want := range []string{"== dmcrypt.workqueue on /dev/mapper/spprove: off vs on", "== net.backlog-drops on softnet: off vs on", "total_iops", "total_p999", "cpu_per_io"} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q", want)
			}
		}
		if got := trim("html-files"); got != "/results/prove-1.html\n/results/prove-2.html" {
			t.Errorf("--html for two entries wrote %q", got)
		}
		if !strings.Contains(file("prove-1.html"), "<html") {
			t.Error("prove-1.html is not a page")
		}
		// The kept change holds and is recorded; the other is undone.
		if kept := file("table-kept"); !strings.Contains(kept, "2 no_read_workqueue no_write_workqueue") && !strings.Contains(kept, "2 no_write_workqueue no_read_workqueue") {
			t.Errorf("after the prove the table is %q, want the workqueue flags kept", kept)
		}
		if a, b := trim("backlog-after"), trim("backlog-before"); a != b {
			t.Errorf("netdev_max_backlog is %s after the prove, was %s: the rolled-back sysctl was not restored", a, b)
		}
		st := parseState(t, res.Files["state-kept.json"])
		if len(st.Changes) != 1 || st.Changes[0].Key != "crypt:spprove" || st.Changes[0].Previous != "" {
			t.Errorf("state after the prove: %+v, want the kept crypt change only", st)
		}
		if got := file("table-rolled-back"); got != before {
			t.Errorf("after --rollback the table is %q, want %q", got, before)
		}
	})

	t.Run("SIGINT restores", func(t *testing.T) {
		t.Logf("interrupted prove:\n%s", file("int.err"))
		if !strings.Contains(file("table-during"), "no_write_workqueue") {
			t.Fatalf("the signal did not come while the change was live: %s", file("table-during"))
		}
		if rc := trim("int.rc"); rc != "2" {
			t.Errorf("interrupted fix --apply --prove exited %s, want 2", rc)
		}
		if e := file("int.err"); !strings.Contains(e, "interrupted while proving: dmcrypt.workqueue on /dev/mapper/spprove: ") || !strings.Contains(e, "the change under measurement is undone and nothing was applied") {
			t.Errorf("stderr does not say the change was undone")
		}
		if got := file("table-after-int"); got != before {
			t.Errorf("after SIGINT the table is %q, want the original %q", got, before)
		}
		if _, ok := res.Files["state-after-int.json"]; ok {
			if st := parseState(t, res.Files["state-after-int.json"]); len(st.Changes) != 0 {
				t.Errorf("the state file still records %+v after SIGINT", st.Changes)
			}
		}
		if got := trim("left.txt"); got != "" {
			t.Errorf("the runs left %q in /mnt/p", got)
		}
	})
}
