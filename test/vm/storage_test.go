package vm

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/workload/fio"
)

// prelude is sourced by every scenario. sp runs slowpath with only busybox
// on PATH: no dmsetup or cryptsetup, so every dm table in its output came
// through slowpath's own DM_TABLE_STATUS ioctl. report PREFIX saves a
// snapshot, the JSON report and the text report under /results.
const prelude = `set -e
sp() { env PATH=/bin /usr/bin/slowpath "$@"; }
report() {
	sp collect --cloud none --net-interval 0 -o - > /results/${1}snapshot.json
	rc=0; sp doctor --cloud none --net-interval 0 --format json > /results/${1}doctor.json || rc=$?
	[ $rc -le 1 ] || { echo "doctor --format json exited $rc"; exit 1; }
	rc=0; sp doctor --cloud none --net-interval 0 > /results/${1}doctor.txt || rc=$?
	[ $rc -le 1 ] || { echo "doctor exited $rc"; exit 1; }
}
# netdevsim_up makes netdevsim1 with one port and leaves its netdev's
# name in $dev and /results/dev (the netdev appears after the write).
netdevsim_up() {
	modprobe netdevsim
	echo "1 1" > /sys/bus/netdevsim/new_device
	i=0
	until [ -n "$(ls /sys/bus/netdevsim/devices/netdevsim1/net/ 2>/dev/null)" ]; do
		i=$((i+1)); [ $i -lt 100 ] || { echo "netdevsim created no netdev"; exit 1; }
		sleep 0.1
	done
	dev=$(ls /sys/bus/netdevsim/devices/netdevsim1/net/)
	echo $dev > /results/dev
}
`

func randomHex(t *testing.T, bytes int) string {
	t.Helper()
	b := make([]byte, bytes)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// outputs are the three renderings of one report PREFIX.
type outputs struct {
	snap   *snapshot.Snapshot
	doctor *analyze.Report
	raw    map[string][]byte
}

func loadOutputs(t *testing.T, res *Result, prefix string) outputs {
	t.Helper()
	o := outputs{snap: &snapshot.Snapshot{}, doctor: &analyze.Report{}, raw: map[string][]byte{}}
	for _, n := range []string{"snapshot.json", "doctor.json", "doctor.txt"} {
		b, ok := res.Files[prefix+n]
		if !ok || len(b) == 0 {
			t.Fatalf("guest produced no %s%s", prefix, n)
		}
		o.raw[n] = b
	}
	if err := json.Unmarshal(o.raw["snapshot.json"], o.snap); err != nil {
		t.Fatalf("%ssnapshot.json: %v", prefix, err)
	}
	if err := json.Unmarshal(o.raw["doctor.json"], o.doctor); err != nil {
		t.Fatalf("%sdoctor.json: %v", prefix, err)
	}
	if o.snap.Storage == nil {
		t.Fatalf("%ssnapshot.json has no storage section; collect errors: %+v", prefix, o.snap.Manifest.Errors)
	}
	return o
}

// device returns the snapshot's block device with dm name dmName.
func (o outputs) dmDevice(t *testing.T, dmName string) *snapshot.BlockDevice {
	t.Helper()
	for i, d := range o.snap.Storage.BlockDevices {
		if d.DM != nil && d.DM.Name == dmName {
			return &o.snap.Storage.BlockDevices[i]
		}
	}
	t.Fatalf("snapshot has no dm device named %s (collect errors: %+v)", dmName, o.snap.Manifest.Errors)
	return nil
}

func (o outputs) device(t *testing.T, name string) *snapshot.BlockDevice {
	t.Helper()
	for i, d := range o.snap.Storage.BlockDevices {
		if d.Name == name {
			return &o.snap.Storage.BlockDevices[i]
		}
	}
	t.Fatalf("snapshot has no block device %s", name)
	return nil
}

// path returns the report's storage path whose top device is dev.
func (o outputs) path(t *testing.T, dev string) *storagemodel.Path {
	t.Helper()
	for i, p := range o.doctor.Storage {
		if p.Device == dev && p.MountPoint == "" {
			return &o.doctor.Storage[i]
		}
	}
	t.Fatalf("doctor report has no storage path for /dev/%s", dev)
	return nil
}

// findings returns the report's findings of check id about any of
// subjects (a device may be named /dev/dm-0 or /dev/mapper/NAME); all of
// them when subjects is empty.
func (o outputs) findings(id string, subjects ...string) []check.Finding {
	var out []check.Finding
	for _, f := range o.doctor.Findings {
		match := len(subjects) == 0
		for _, s := range subjects {
			match = match || f.Subject == s
		}
		if f.ID == id && match {
			out = append(out, f)
		}
	}
	return out
}

// noKey fails t when any output contains key (hex, either case).
func (o outputs) noKey(t *testing.T, key string) {
	t.Helper()
	for n, b := range o.raw {
		for _, k := range []string{strings.ToLower(key), strings.ToUpper(key)} {
			if bytes.Contains(b, []byte(k)) {
				t.Errorf("%s contains the dm-crypt key %s", n, key)
			}
		}
	}
}

func cryptLayer(t *testing.T, p *storagemodel.Path, dev string) *storagemodel.Layer {
	t.Helper()
	for i, l := range p.Layers {
		if l.Device == dev && l.Crypt != nil {
			return &p.Layers[i]
		}
	}
	t.Fatalf("path %s has no crypt layer on %s: %+v", p.Subject(), dev, p.Layers)
	return nil
}

// TestPlainCryptFlags is scenario a: plain dm-crypt on brd ramdisks in each
// flag set, read back through slowpath's DM ioctl path into the snapshot and
// the model, with the keys absent from every output.
func TestPlainCryptFlags(t *testing.T) {
	t.Parallel()
	onKernels(t, everyKernel, testPlainCryptFlags)
}

func testPlainCryptFlags(t *testing.T, k *kernelLab) {
	type variant struct {
		name     string
		keyBytes int
		flags    string // optional params as the kernel prints them
		want     storagemodel.Crypt
	}
	variants := []variant{
		{"a0", 64, "", storagemodel.Crypt{KeyBits: 512, SectorSize: 512}},
		{"a1", 64, "1 same_cpu_crypt", storagemodel.Crypt{KeyBits: 512, SectorSize: 512, SameCPUCrypt: true}},
		{"a2", 32, "1 submit_from_crypt_cpus", storagemodel.Crypt{KeyBits: 256, SectorSize: 512, SubmitFromCryptCPUs: true}},
		{"a3", 64, "2 no_read_workqueue no_write_workqueue", storagemodel.Crypt{KeyBits: 512, SectorSize: 512, NoReadWorkqueue: true, NoWriteWorkqueue: true}},
		{"a4", 64, "1 sector_size:4096", storagemodel.Crypt{KeyBits: 512, SectorSize: 4096}},
	}
	// high_priority (crypt target 1.26.0) where the kernel's expectations
	// allow it.
	if slices.Contains(k.Expect.CryptVariants, "high_priority") {
		variants = append(variants, variant{"a5", 64, "1 high_priority", storagemodel.Crypt{KeyBits: 512, SectorSize: 512, HighPriority: true}})
	}
	keys := map[string]string{}
	var sc strings.Builder
	sc.WriteString(prelude)
	fmt.Fprintf(&sc, "modprobe brd rd_nr=%d rd_size=8192\n", len(variants))
	for i, v := range variants {
		keys[v.name] = randomHex(t, v.keyBytes)
		fmt.Fprintf(&sc, "dmsetup create %s --table \"0 $(cat /sys/block/ram%d/size) crypt aes-xts-plain64 %s 0 /dev/ram%d 0 %s\"\n",
			v.name, i, keys[v.name], i, v.flags)
		// Some I/O through each mapping, so a broken table shows.
		fmt.Fprintf(&sc, "[ -b /dev/mapper/%[1]s ] && dd if=/dev/zero of=/dev/mapper/%[1]s bs=64k count=16 2>/dev/null\n", v.name)
	}
	sc.WriteString("report\n")
	for _, v := range variants {
		fmt.Fprintf(&sc, "dmsetup remove %s\n", v.name)
	}
	sc.WriteString("rmmod brd\n")

	res := boot(t, k, Scenario{Name: "plain-crypt-flags", Script: sc.String()})
	o := loadOutputs(t, res, "")
	for i, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			d := o.dmDevice(t, v.name)
			ram := o.device(t, fmt.Sprintf("ram%d", i))
			if ram.Kind != snapshot.KindRAM {
				t.Errorf("ram%d kind = %q, want %q", i, ram.Kind, snapshot.KindRAM)
			}
			wantParams := fmt.Sprintf("aes-xts-plain64 redacted:%d 0 %s 0", v.keyBytes*8, ram.MajorMinor)
			if v.flags != "" {
				wantParams += " " + v.flags
			}
			want := []snapshot.DMTarget{{Start: 0, Length: ram.SizeBytes / 512, Type: "crypt", Params: wantParams}}
			if diff := cmp.Diff(want, d.DM.Targets); diff != "" {
				t.Errorf("snapshot dm table of %s (-want +got):\n%s", v.name, diff)
			}
			l := cryptLayer(t, o.path(t, d.Name), d.Name)
			got := *l.Crypt
			w := v.want
			w.CipherSpec, w.Cipher, w.ChainMode, w.IVMode = "aes-xts-plain64", "aes", "xts", "plain64"
			w.Device, w.KeySource = ram.MajorMinor, got.KeySource
			w.KeyCount = got.KeyCount
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("doctor model of %s (-want +got):\n%s", v.name, diff)
			}
			if got.KeySource == "" {
				t.Errorf("model of %s has no key source", v.name)
			}
			o.noKey(t, keys[v.name])
			// The since-boot counters: the 1 MiB dd wrote through the
			// mapping is counted at the dm device (6.1 prints 17
			// fields); brd does no I/O accounting, so ram stays 0.
			if d.Stat == nil || d.Stat.Fields < 17 || d.Stat.WriteSectors < 2048 || d.Stat.WriteIOs == 0 {
				t.Errorf("%s stat = %+v, want 17 fields and the 2048 sectors dd wrote", d.Name, d.Stat)
			}
			if ram.Stat == nil || ram.Stat.Fields < 17 || ram.Stat.ReadIOs+ram.Stat.WriteIOs != 0 {
				t.Errorf("ram%d stat = %+v, want 17 fields and no I/O counted (brd does no accounting)", i, ram.Stat)
			}
		})
	}
	// The cipher figure: measured in the guest because it has crypt
	// targets, through AF_ALG (the guest loads algif_skcipher), naming the
	// kernel's driver. Under TCG the figure is functional evidence only.
	c := o.snap.Host.Cipher
	if c == nil || c.Method != "af_alg" || c.Driver == "" || !(c.BytesPerSecPerCore > 0) || !strings.HasPrefix(c.Why, "dm crypt target a") {
		t.Errorf("host.cipher = %+v, want an AF_ALG figure with the driver, measured for a crypt target; errors %+v", c, o.snap.Manifest.Errors)
	} else {
		t.Logf("host.cipher in the guest (TCG: functional, not performance): %s %s %.0f MB/s per core in %d ms, for %s", c.Method, c.Driver, c.BytesPerSecPerCore/1e6, c.DurationMS, c.Why)
	}
	// brd beneath counts nothing, so dmcrypt.tax says it cannot judge.
	fs := o.findings("dmcrypt.tax", "/dev/mapper/a0")
	if len(fs) != 1 || fs[0].Status != check.Unknown || !strings.Contains(fs[0].Summary, "counts no I/O") {
		t.Errorf("dmcrypt.tax on a0 over brd: %+v, want unknown: the ramdisk counts no I/O", fs)
	}
}

// TestLUKS2WorkqueueRefresh is scenario b: LUKS2 on a loop file opened with
// persistent no_read/no_write_workqueue flags keeps dmcrypt.workqueue quiet;
// once a refresh drops the flags the check fires on the live table.
func TestLUKS2WorkqueueRefresh(t *testing.T) {
	t.Parallel()
	onKernels(t, fullSet, testLUKS2WorkqueueRefresh)
}

func testLUKS2WorkqueueRefresh(t *testing.T, k *kernelLab) {
	pass := randomHex(t, 16)
	res := boot(t, k, Scenario{Name: "luks2-workqueue", Files: map[string][]byte{"/root/pass": []byte(pass)}, Script: prelude + `
dd if=/dev/zero of=/tmp/luks.img bs=1M count=32 2>/dev/null
L=$(losetup -f --show /tmp/luks.img)
cryptsetup luksFormat --type luks2 --batch-mode --pbkdf pbkdf2 --pbkdf-force-iterations 1000 --key-file /root/pass $L
cryptsetup open --key-file /root/pass --perf-no_read_workqueue --perf-no_write_workqueue --persistent $L b0
report before-
# Without --persistent the flags stored in the header would be applied again.
cryptsetup refresh --key-file /root/pass --persistent b0
report after-
cryptsetup close b0
losetup -d $L
`})
	before := loadOutputs(t, res, "before-")
	after := loadOutputs(t, res, "after-")
	d := before.dmDevice(t, "b0")
	subject := before.path(t, d.Name).Subject()
	if l := cryptLayer(t, before.path(t, d.Name), d.Name); !l.Crypt.NoReadWorkqueue || !l.Crypt.NoWriteWorkqueue {
		t.Errorf("before refresh: model crypt flags %+v, want no_read_workqueue and no_write_workqueue", *l.Crypt)
	}
	if !strings.HasPrefix(d.DM.UUID, "CRYPT-LUKS2-") {
		t.Errorf("dm uuid %q, want CRYPT-LUKS2-...", d.DM.UUID)
	}
	for _, f := range before.findings("dmcrypt.workqueue") {
		if f.Status != check.Pass {
			t.Errorf("before refresh: dmcrypt.workqueue not silent with the flags set: %s %s: %s", f.Status, f.Subject, f.Summary)
		}
	}
	if l := cryptLayer(t, after.path(t, d.Name), d.Name); l.Crypt.NoReadWorkqueue || l.Crypt.NoWriteWorkqueue {
		t.Errorf("after refresh: model crypt flags %+v, want neither workqueue flag", *l.Crypt)
	}
	var fired bool
	for _, f := range after.findings("dmcrypt.workqueue", subject, "/dev/mapper/b0") {
		fired = fired || f.Status == check.Fail
	}
	if !fired {
		t.Errorf("after refresh: dmcrypt.workqueue did not fire on %s; findings: %+v", subject, after.doctor.Findings)
	}
	if !bytes.Contains(after.raw["doctor.txt"], []byte("dmcrypt.workqueue")) {
		t.Errorf("after refresh: text report does not name dmcrypt.workqueue:\n%s", after.raw["doctor.txt"])
	}
}

// stackedFired returns the failing storage.stacked-encryption finding about
// subject.
func stackedFired(t *testing.T, o outputs, subject, dmName string) {
	t.Helper()
	for _, f := range o.findings("storage.stacked-encryption", subject, "/dev/mapper/"+dmName) {
		if f.Status == check.Fail {
			return
		}
	}
	t.Errorf("storage.stacked-encryption did not fire on %s; findings: %+v", subject, o.doctor.Findings)
}

// TestCryptOnCrypt is scenario c: dm-crypt on dm-crypt is two layers.
func TestCryptOnCrypt(t *testing.T) {
	t.Parallel()
	onKernels(t, fullSet, testCryptOnCrypt)
}

func testCryptOnCrypt(t *testing.T, k *kernelLab) {
	k0, k1 := randomHex(t, 64), randomHex(t, 64)
	res := boot(t, k, Scenario{Name: "crypt-on-crypt", Script: prelude + `
modprobe brd rd_nr=1 rd_size=8192
dmsetup create c0 --table "0 $(cat /sys/block/ram0/size) crypt aes-xts-plain64 ` + k0 + ` 0 /dev/ram0 0"
dmsetup create c1 --table "0 $(blockdev --getsz /dev/mapper/c0) crypt aes-xts-plain64 ` + k1 + ` 0 /dev/mapper/c0 0"
report
dmsetup remove c1
dmsetup remove c0
rmmod brd
`})
	o := loadOutputs(t, res, "")
	top := o.dmDevice(t, "c1")
	p := o.path(t, top.Name)
	if p.EncryptionLayers != 2 {
		t.Errorf("path %s: %d encryption layers, want 2; layers %+v", p.Subject(), p.EncryptionLayers, p.Layers)
	}
	stackedFired(t, o, p.Subject(), "c1")
	o.noKey(t, k0)
	o.noKey(t, k1)
}

// TestCryptOnLoopOnExt4OnCrypt is scenario d: ext4 on dm-crypt holds a file
// that a loop device exposes and a second dm-crypt encrypts. The second
// layer is only found by following the loop device to its backing file's
// filesystem.
func TestCryptOnLoopOnExt4OnCrypt(t *testing.T) {
	t.Parallel()
	onKernels(t, fullSet, testCryptOnLoopOnExt4OnCrypt)
}

func testCryptOnLoopOnExt4OnCrypt(t *testing.T, k *kernelLab) {
	k0, k1 := randomHex(t, 64), randomHex(t, 64)
	res := boot(t, k, Scenario{Name: "crypt-loop-ext4-crypt", Script: prelude + `
modprobe brd rd_nr=1 rd_size=65536
dmsetup create d0 --table "0 $(cat /sys/block/ram0/size) crypt aes-xts-plain64 ` + k0 + ` 0 /dev/ram0 0"
mke2fs -q -t ext4 /dev/mapper/d0
mkdir -p /mnt/outer
mount -t ext4 /dev/mapper/d0 /mnt/outer
dd if=/dev/zero of=/mnt/outer/inner.img bs=1M count=16 2>/dev/null
L=$(losetup -f --show /mnt/outer/inner.img)
dmsetup create d1 --table "0 $(blockdev --getsz $L) crypt aes-xts-plain64 ` + k1 + ` 0 $L 0"
report
dmsetup remove d1
losetup -d $L
umount /mnt/outer
dmsetup remove d0
rmmod brd
`})
	o := loadOutputs(t, res, "")
	top := o.dmDevice(t, "d1")
	p := o.path(t, top.Name)
	if p.EncryptionLayers != 2 {
		t.Errorf("path %s: %d encryption layers, want 2; layers %+v", p.Subject(), p.EncryptionLayers, p.Layers)
	}
	var viaLoop bool
	for _, l := range p.Layers {
		viaLoop = viaLoop || (l.Kind == storagemodel.LayerLoop && l.BackingFile == "/mnt/outer/inner.img")
	}
	if !viaLoop {
		t.Errorf("path %s does not pass through the loop backing file /mnt/outer/inner.img: %+v", p.Subject(), p.Layers)
	}
	stackedFired(t, o, p.Subject(), "d1")
	o.noKey(t, k0)
	o.noKey(t, k1)
}

// TestFioOnCrypt is scenario f: an fio job built by internal/workload/fio
// runs on a dm-crypt device in the guest and its JSON parses. The figures
// are logged only as evidence that I/O happened: under TCG AES is emulated,
// so they say nothing about performance.
func TestFioOnCrypt(t *testing.T) {
	t.Parallel()
	onKernels(t, fullSet, testFioOnCrypt)
}

func testFioOnCrypt(t *testing.T, k *kernelLab) {
	job := fio.Job{Name: "cryptsmoke", Filename: "/dev/mapper/f0", RW: "randrw", RWMixRead: 50, BlockSize: "4k",
		Size: "16m", IOEngine: "psync", Direct: true, Runtime: 2 * time.Second, TimeBased: true}
	jf, err := job.JobFile()
	if err != nil {
		t.Fatal(err)
	}
	key := randomHex(t, 64)
	res := boot(t, k, Scenario{Name: "fio-on-crypt", Files: map[string][]byte{"/root/job.fio": jf}, Script: prelude + `
modprobe brd rd_nr=1 rd_size=32768
dmsetup create f0 --table "0 $(cat /sys/block/ram0/size) crypt aes-xts-plain64 ` + key + ` 0 /dev/ram0 0"
# Prefill, so reads hit written sectors.
dd if=/dev/zero of=/dev/mapper/f0 bs=1M count=16 2>/dev/null
fio ` + strings.Join(fio.Args("/root/job.fio", "/results/fio.json"), " ") + `
dmsetup remove f0
rmmod brd
`})
	r, err := fio.Parse(bytes.NewReader(res.Files["fio.json"]))
	if err != nil {
		t.Fatalf("parse guest fio output: %v", err)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if len(r.Jobs) != 1 || r.Jobs[0].Name != "cryptsmoke" {
		t.Fatalf("jobs %+v", r.Jobs)
	}
	for dir, d := range map[string]fio.Direction{"read": r.Jobs[0].Read, "write": r.Jobs[0].Write} {
		if d.IOs == 0 || d.Bytes != d.IOs*4096 || d.IOPS <= 0 || d.Clat.Count != d.IOs || len(d.Clat.Percentiles) == 0 {
			t.Errorf("%s: implausible %+v", dir, d)
		}
		p99, _ := d.Clat.Percentile(99)
		t.Logf("guest fio %s on dm-crypt: %d I/Os, %.0f IOPS, p99 %v (TCG, AES emulated: functional evidence, not performance)", dir, d.IOs, d.IOPS, p99)
	}
}
