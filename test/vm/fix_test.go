package vm

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/fix/apply"
)

// TestFixApplyRollback is `slowpath fix` on a real kernel, in one boot:
//
//  1. plain dm-crypt on a ramdisk without the workqueue flags: `fix
//     --apply --only dmcrypt.workqueue` reloads the table through the DM
//     ioctls (no cryptsetup or dmsetup on slowpath's PATH); slowpath's own
//     DM reader then shows the flags, doctor is silent on the mapping, a
//     second --apply changes nothing, --rollback restores the table;
//  2. a netdevsim RX ring at 512 of 4096: the plan (from a snapshot given the
//     25 Gb/s link speed netdevsim cannot report, so net.ring-undersized
//     fires) sets 4096 and --persist writes the udev rule; --rollback puts
//     512 back and removes the rule;
//  3. both at once after the driver's maximum was lowered to 256 through
//     netdevsim's debugfs: the ring step (second) is refused by the driver,
//     the dm-crypt step (first) is rolled back, fix exits 2.
func TestFixApplyRollback(t *testing.T) {
	t.Parallel()
	onKernels(t, fullSet, testFixApplyRollback)
}

func testFixApplyRollback(t *testing.T, k *kernelLab) {
	key := randomHex(t, 64)
	res := boot(t, k, Scenario{Name: "fix-apply", Script: prelude + `
fix() { sp fix --cloud none --net-interval 0 --watch 2s --state /tmp/fix/state.json "$@"; }
mkdir -p /tmp/fix
modprobe brd rd_nr=1 rd_size=8192
dmsetup create spfix --table "0 $(cat /sys/block/ram0/size) crypt aes-xts-plain64 ` + key + ` 0 /dev/ram0 0"
netdevsim_up
ethtool -G $dev rx 512

# 1. dm-crypt flags
report before-
fix --apply --only dmcrypt.workqueue > /results/apply1.out 2> /results/apply1.err
cp /tmp/fix/state.json /results/state1.json
report after-apply-
fix --apply --only dmcrypt.workqueue > /results/apply2.out 2> /results/apply2.err
cp /tmp/fix/state.json /results/state2.json
report after-second-
fix --rollback 2> /results/rollback1.err
report after-rollback-
[ ! -e /tmp/fix/state.json ] || { echo "state file left after rollback"; exit 1; }

# 2. ring
sp collect --cloud none --net-interval 0 -o /tmp/fix/live.json
sed "s/\"name\": \"$dev\",/\"name\": \"$dev\", \"speed_mbps\": 25000,/" /tmp/fix/live.json > /tmp/fix/fast.json
rule=/etc/udev/rules.d/60-slowpath-ring-$dev.rules
[ ! -e $rule ] || { echo "$rule exists before the test"; exit 1; }
fix --apply --persist --from /tmp/fix/fast.json --only net.ring-undersized > /results/apply3.out 2> /results/apply3.err
ethtool -g $dev > /results/ring-applied
cp /tmp/fix/state.json /results/state3.json
cp $rule /results/udev-rule
fix --rollback 2> /results/rollback3.err
ethtool -g $dev > /results/ring-rolled-back
[ ! -e $rule ] || { echo "$rule left after --rollback"; exit 1; }

# 3. a step the driver refuses rolls back the step before it
mount -t debugfs none /sys/kernel/debug
echo 256 > /sys/kernel/debug/netdevsim/netdevsim1/ports/0/ethtool/ring/rx_max_pending
rc=0
fix --apply --from /tmp/fix/fast.json --only dmcrypt.workqueue,net.ring-undersized > /results/apply4.out 2> /results/apply4.err || rc=$?
echo $rc > /results/apply4.rc
report after-failure-
ethtool -g $dev > /results/ring-after-failure
[ ! -e /tmp/fix/state.json ] || cp /tmp/fix/state.json /results/state4.json
umount /sys/kernel/debug

dmsetup remove spfix
rmmod brd
echo 1 > /sys/bus/netdevsim/del_device
rmmod netdevsim
`})
	dev := strings.TrimSpace(string(res.Files["dev"]))
	for name, b := range res.Files {
		if strings.Contains(strings.ToLower(string(b)), key) {
			t.Errorf("the crypt key appears in %s", name)
		}
	}
	log := func(names ...string) string {
		var b strings.Builder
		for _, n := range names {
			b.WriteString("--- " + n + "\n" + string(res.Files[n]))
		}
		return b.String()
	}

	// 1. dm-crypt.
	before := loadOutputs(t, res, "before-")
	if f := findingOn(before.doctor.Findings, "dmcrypt.workqueue", "/dev/mapper/spfix"); f == nil || f.Status != check.Fail {
		t.Fatalf("dmcrypt.workqueue does not fire before the fix: %+v", f)
	}
	applied := loadOutputs(t, res, "after-apply-")
	params := applied.dmDevice(t, "spfix").DM.Targets[0].Params
	if !strings.HasSuffix(params, " 2 no_read_workqueue no_write_workqueue") {
		t.Errorf("after fix --apply slowpath's DM reader shows %q, want the two workqueue flags\n%s", params, log("apply1.out", "apply1.err"))
	}
	if f := findingOn(applied.doctor.Findings, "dmcrypt.workqueue", "/dev/mapper/spfix"); f != nil {
		t.Errorf("doctor still reports after the fix: %+v", f)
	}
	// No counter measures a dm-crypt flag: without --prove the change is
	// kept and said to be unproven, never "verified".
	if e := string(res.Files["apply1.err"]); !strings.Contains(e, "dmcrypt.workqueue on /dev/mapper/spfix: applied, not proven") ||
		!strings.Contains(e, "--prove PROFILE --dir DIR") || strings.Contains(e, "verified") {
		t.Errorf("fix --apply did not report the change as applied, not proven, with how to prove it:\n%s", log("apply1.err"))
	}
	st := parseState(t, res.Files["state1.json"])
	if len(st.Changes) != 1 || st.Changes[0].Key != "crypt:spfix" || st.Changes[0].Previous != "" ||
		st.Changes[0].Applied != "no_read_workqueue no_write_workqueue" {
		t.Errorf("state after apply: %+v", st)
	}
	// Applying twice changes nothing: state file and table.
	if string(res.Files["state2.json"]) != string(res.Files["state1.json"]) {
		t.Errorf("second --apply changed the state:\n%s\nwas\n%s", res.Files["state2.json"], res.Files["state1.json"])
	}
	if p := loadOutputs(t, res, "after-second-").dmDevice(t, "spfix").DM.Targets[0].Params; p != params {
		t.Errorf("second --apply changed the table: %q, was %q", p, params)
	}
	if !strings.Contains(string(res.Files["apply2.err"]), "nothing") {
		t.Errorf("second --apply:\n%s", log("apply2.out", "apply2.err"))
	}
	rolled := loadOutputs(t, res, "after-rollback-")
	if p := rolled.dmDevice(t, "spfix").DM.Targets[0].Params; p != before.dmDevice(t, "spfix").DM.Targets[0].Params {
		t.Errorf("after --rollback the table is %q, want the original %q", p, before.dmDevice(t, "spfix").DM.Targets[0].Params)
	}

	// 2. ring.
	r, err := parseEthtoolG(string(res.Files["ring-applied"]))
	if err != nil {
		t.Fatal(err)
	}
	if r.RX != r.RXMax || r.RXMax != 4096 {
		t.Errorf("%s ring after fix --apply: %+v, want rx at its maximum 4096\n%s", dev, r, log("apply3.out", "apply3.err"))
	}
	st3 := parseState(t, res.Files["state3.json"])
	if len(st3.Changes) != 1 || st3.Changes[0].Key != "ring:"+dev+":rx" || st3.Changes[0].Previous != "512" {
		t.Errorf("state after the ring fix: %+v", st3)
	}
	// --persist wrote the udev rule, listed it and recorded it; --rollback
	// removed it (the script checks).
	rule := "/etc/udev/rules.d/60-slowpath-ring-" + dev + ".rules"
	if !strings.Contains(string(res.Files["apply3.err"]), "wrote "+rule) || len(st3.Files) != 1 || st3.Files[0].Path != rule || st3.Files[0].Existed {
		t.Errorf("--persist did not list and record %s: %+v\n%s", rule, st3.Files, log("apply3.err"))
	}
	if !strings.Contains(string(res.Files["udev-rule"]), "ethtool -G $name rx 4096") {
		t.Errorf("udev rule:\n%s", res.Files["udev-rule"])
	}
	if r, err := parseEthtoolG(string(res.Files["ring-rolled-back"])); err != nil || r.RX != 512 {
		t.Errorf("%s ring after --rollback: %+v (%v), want 512\n%s", dev, r, err, log("rollback3.err"))
	}

	// 3. failure midway.
	if rc := strings.TrimSpace(string(res.Files["apply4.rc"])); rc != "2" {
		t.Errorf("fix with a refused ring size exited %s, want 2\n%s", rc, log("apply4.out", "apply4.err"))
	}
	e4 := string(res.Files["apply4.err"])
	if !strings.Contains(e4, "crypt:spfix -> ") && !strings.Contains(e4, "dmcrypt.workqueue: crypt:spfix") {
		t.Errorf("the dm-crypt step did not run first:\n%s", e4)
	}
	if !strings.Contains(e4, "refused") || !strings.Contains(e4, "rolled back") {
		t.Errorf("no refusal and rollback reported:\n%s", e4)
	}
	failed := loadOutputs(t, res, "after-failure-")
	if p := failed.dmDevice(t, "spfix").DM.Targets[0].Params; p != before.dmDevice(t, "spfix").DM.Targets[0].Params {
		t.Errorf("after the failed step the table is %q, want the original (step 1 rolled back)\n%s", p, e4)
	}
	if r, err := parseEthtoolG(string(res.Files["ring-after-failure"])); err != nil || r.RX != 512 || r.RXMax != 256 {
		t.Errorf("%s ring after the refused step: %+v (%v), want 512 with maximum 256", dev, r, err)
	}
	if b, ok := res.Files["state4.json"]; ok {
		t.Errorf("state file left after a rolled-back apply:\n%s", b)
	}
	t.Logf("failure midway:\n%s", e4)
}

func findingOn(fs []check.Finding, id, subject string) *check.Finding {
	for i := range fs {
		if fs[i].ID == id && fs[i].Subject == subject && fs[i].Status == check.Fail {
			return &fs[i]
		}
	}
	return nil
}

func parseState(t *testing.T, b []byte) apply.State {
	t.Helper()
	var s apply.State
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("state file: %v\n%s", err, b)
	}
	return s
}

// TestFixLUKS2Keyring is the LUKS2 case: cryptsetup opens it with the
// volume key in the kernel keyring, so the table names a keyring key.
// The plan marks the runtime reload not applicable and prints the
// `cryptsetup refresh ... --persistent` to run by hand; the test shows why
// (reloading the same table is refused: the key is no longer in a keyring
// the kernel can reach) and that the printed command, run with the key
// file, silences doctor.
func TestFixLUKS2Keyring(t *testing.T) {
	t.Parallel()
	onKernels(t, fullSet, testFixLUKS2Keyring)
}

func testFixLUKS2Keyring(t *testing.T, k *kernelLab) {
	pass := randomHex(t, 16)
	res := boot(t, k, Scenario{Name: "fix-luks2", Files: map[string][]byte{"/root/pass": []byte(pass)}, Script: prelude + `
dd if=/dev/zero of=/tmp/luks.img bs=1M count=32 2>/dev/null
L=$(losetup -f --show /tmp/luks.img)
cryptsetup luksFormat --type luks2 --batch-mode --pbkdf pbkdf2 --pbkdf-force-iterations 1000 --key-file /root/pass $L
cryptsetup open --key-file /root/pass $L l2
sp fix --cloud none --net-interval 0 --format json --only dmcrypt.workqueue > /results/plan.json
rc=0
dmsetup table --showkeys l2 > /tmp/l2.table
dmsetup reload l2 /tmp/l2.table 2> /results/reload.err || rc=$?
echo $rc > /results/reload.rc
dmsetup clear l2
cryptsetup refresh --key-file /root/pass --perf-no_read_workqueue --perf-no_write_workqueue --persistent l2
report after-
cryptsetup close l2
losetup -d $L
`})
	var plan struct {
		Entries []struct {
			ID, Subject   string
			NotApplicable string `json:"not_applicable"`
			Steps         []any
			Manual        []string
		}
	}
	if err := json.Unmarshal(res.Files["plan.json"], &plan); err != nil {
		t.Fatalf("plan: %v\n%s", err, res.Files["plan.json"])
	}
	if len(plan.Entries) != 1 {
		t.Fatalf("plan entries: %s", res.Files["plan.json"])
	}
	e := plan.Entries[0]
	if !strings.Contains(e.NotApplicable, "kernel keyring") || len(e.Steps) != 0 {
		t.Errorf("LUKS2 entry: not_applicable %q, %d steps; want the keyring reason and no step", e.NotApplicable, len(e.Steps))
	}
	// The name after "--": the plan quotes it as an operand (da5e6fa).
	want := "cryptsetup refresh --perf-no_read_workqueue --perf-no_write_workqueue --persistent -- l2"
	if len(e.Manual) != 1 || e.Manual[0] != want {
		t.Errorf("manual %q, want %q", e.Manual, want)
	}
	if rc := strings.TrimSpace(string(res.Files["reload.rc"])); rc == "0" {
		t.Errorf("reloading the keyring table was accepted: the not-applicable reason is wrong")
	}
	t.Logf("reload of the same table: rc %s: %s", strings.TrimSpace(string(res.Files["reload.rc"])), res.Files["reload.err"])
	after := loadOutputs(t, res, "after-")
	for _, f := range after.doctor.Findings {
		if f.ID == "dmcrypt.workqueue" && f.Status == check.Fail {
			t.Errorf("doctor still reports after the printed refresh: %s %s", f.Subject, f.Summary)
		}
	}
}
