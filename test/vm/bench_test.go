package vm

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
)

// TestBenchOnCrypt is scenario g: `slowpath bench` search-index on ext4
// over dm-crypt over a brd ramdisk, and db-commit on ext4 over dm-crypt over
// dm-linear over a second ramdisk. Where the time went must name the
// dm-crypt device and find CPU in the kcryptd threads; the ramdisk below
// counts no I/O (brd does no I/O accounting), which the summary must say;
// the run's directory must be gone afterwards. Each result carries the
// encryption tax labelled as from an emulated CPU: search-index with the
// cipher from a `lab crypto-limit --format json` file and "not computed"
// (nothing beneath the crypt device counts I/O), db-commit with the cipher
// measured after the run and a verdict from the dm-linear device's await.
// Under TCG the figures are functional evidence only.
func TestBenchOnCrypt(t *testing.T) {
	t.Parallel()
	onKernels(t, fullSet, testBenchOnCrypt)
}

func testBenchOnCrypt(t *testing.T, k *kernelLab) {
	key, key2 := randomHex(t, 64), randomHex(t, 64)
	res := boot(t, k, Scenario{Name: "bench-on-crypt", Timeout: 4 * time.Minute, Script: prelude + `
# fio is in /usr/bin: bench needs it on PATH.
spb() { env PATH=/bin:/usr/bin:/usr/sbin /usr/bin/slowpath "$@"; }
modprobe brd rd_nr=2 rd_size=262144
dmsetup create b0 --table "0 $(cat /sys/block/ram0/size) crypt aes-xts-plain64 ` + key + ` 0 /dev/ram0 0"
mke2fs -q -t ext4 /dev/mapper/b0
mkdir -p /mnt/b /mnt/c
mount -t ext4 /dev/mapper/b0 /mnt/b
# dm-linear counts I/O where brd does not: the tax's await beneath.
dmsetup create l1 --table "0 $(cat /sys/block/ram1/size) linear /dev/ram1 0"
dmsetup create b1 --table "0 $(blockdev --getsz /dev/mapper/l1) crypt aes-xts-plain64 ` + key2 + ` 0 /dev/mapper/l1 0"
mke2fs -q -t ext4 /dev/mapper/b1
mount -t ext4 /dev/mapper/b1 /mnt/c
spb lab crypto-limit --format json --duration 200ms > /results/limit.json
spb bench search-index --dir /mnt/b --scale 0.05 --runtime 3s --cloud none --cipher-limit /results/limit.json -o /results/search-index.json > /results/search-index.txt
spb bench db-commit --dir /mnt/c --scale 0.05 --runtime 2s --cloud none -o /results/db-commit.json > /results/db-commit.txt
# Did the run load dm-crypt? A trickle of 4 KiB reads (10/s for 6 s from a
# 128 KiB file; fio's layout and ext4's own writes are in the sampled run
# too, so it is long and small) does not; 1 MiB direct reads from four jobs do.
printf '[trickle]\nrw=randread\nbs=4k\nsize=128k\ndirect=1\nioengine=psync\nrate_iops=10\nruntime=6\ntime_based\n' > /results/trickle.fio
printf '[flood]\nrw=read\nbs=1m\nsize=32m\ndirect=1\nioengine=psync\nnumjobs=4\nruntime=2\ntime_based\n' > /results/flood.fio
sync
for j in trickle flood; do
	spb bench fio:/results/$j.fio --dir /mnt/c --runtime $(grep -o "runtime=[0-9]*" /results/$j.fio | cut -d= -f2)s --cloud none --cipher-limit /results/limit.json -o /results/$j.json > /results/$j.txt 2>&1
done
ls -A /mnt/b /mnt/c | grep -v -e '^lost+found$' -e '^/mnt' -e '^$' > /results/left.txt || true
umount /mnt/b
umount /mnt/c
dmsetup remove b0
dmsetup remove b1
dmsetup remove l1
rmmod brd
`})
	if left := strings.TrimSpace(string(res.Files["left.txt"])); left != "" {
		t.Errorf("bench left %q in /mnt/b or /mnt/c", left)
	}
	for _, tc := range []struct{ prof, ram, beneath string }{{"search-index", "ram0", "ram"}, {"db-commit", "ram1", "dm-linear"}} {
		prof := tc.prof
		r, err := benchresult.Read(bytes.NewReader(res.Files[prof+".json"]))
		if err != nil {
			t.Fatalf("%s: %v\n%s", prof, err, res.Files[prof+".txt"])
		}
		t.Logf("%s in the guest:\n%s", prof, res.Files[prof+".txt"])
		if r.Status != benchresult.StatusComplete {
			t.Errorf("%s: status %s: %s", prof, r.Status, r.Error)
		}
		st := r.Environment.Target.Storage
		if st == nil || st.EncryptionLayers != 1 {
			t.Fatalf("%s: target path %+v", prof, r.Environment.Target)
		}
		var crypt, ram, beneath string
		for _, d := range r.WhereTime.Devices {
			switch d.Layer {
			case "dm-crypt":
				crypt = d.Device
			case "ram":
				ram = d.Device
			}
			if d.Layer == tc.beneath {
				beneath = d.Device
			}
			if d.Layer == "dm-crypt" && (d.WriteIOPS <= 0 || d.AwaitNS <= 0) {
				t.Errorf("%s: dm-crypt device %s saw no I/O: %+v", prof, d.Device, d)
			}
		}
		if !strings.HasPrefix(crypt, "dm-") || ram != tc.ram || beneath == "" {
			t.Fatalf("%s: devices %+v, want the dm-crypt device, %s and a %s device", prof, r.WhereTime.Devices, tc.ram, tc.beneath)
		}
		sum := r.WhereTime.Summary
		if !strings.Contains(sum, crypt+" await") || !strings.Contains(sum, "in kcryptd") {
			t.Errorf("%s: summary %q does not name %s and kcryptd", prof, sum, crypt)
		}
		if prof == "search-index" && !strings.Contains(sum, "(ram0 counts no I/O)") {
			t.Errorf("%s: summary %q does not say that ram0 counts no I/O", prof, sum)
		}
		for _, g := range r.WhereTime.Threads {
			if g.Group == benchresult.GroupKcryptd && (g.CPUNS <= 0 || g.Threads == 0 || !strings.Contains(g.Top[0].Comm, "kcryptd")) {
				t.Errorf("%s: kcryptd group %+v", prof, g)
			}
		}
		if !bytes.Contains(res.Files[prof+".txt"], []byte("where the time went: "+crypt)) {
			t.Errorf("%s: printed summary lacks %s", prof, crypt)
		}

		// The encryption tax, on real dm-crypt, labelled as emulated.
		tax := r.EncryptionTax
		if tax == nil {
			t.Fatalf("%s: no encryption_tax in the result", prof)
		}
		t.Logf("%s: %s", prof, tax.Line)
		if !tax.Emulated || !strings.HasPrefix(tax.Line, "encryption tax: functional (emulated CPU)") || !bytes.Contains(res.Files[prof+".txt"], []byte(tax.Line+"\n")) {
			t.Errorf("%s: tax not labelled as emulated or not printed: %+v", prof, tax)
		}
		if tax.TopDevice != crypt || tax.BottomDevice != beneath || tax.Layers != 1 || tax.Cipher == nil || tax.Cipher.Method != "af_alg" || !(tax.Cipher.BytesPerSecPerCore > 0) {
			t.Errorf("%s: tax %+v, cipher %+v", prof, tax, tax.Cipher)
		}
		if tax.CryptoCPUPerGiB == nil || !(*tax.CryptoCPUPerGiB > 0) || tax.CryptBytes == 0 {
			t.Errorf("%s: no crypto-thread CPU per GiB: %+v", prof, tax)
		}
		switch prof {
		case "search-index":
			if tax.Cipher.Source != "file /results/limit.json" || tax.Verdict != "not computed" || !strings.Contains(tax.NotComputed, "ram0 beneath "+crypt+" counted no I/O") || tax.Ratio != nil {
				t.Errorf("%s: tax %+v", prof, tax)
			}
		case "db-commit":
			if tax.Cipher.Source != "measured after the run" || tax.Verdict == "not computed" || tax.Ratio == nil || tax.ExpectedPerIONS == nil || !(tax.BytesPerIO > 0) || !(tax.BottomAwaitNS > 0) {
				t.Errorf("%s: tax %+v (%s)", prof, tax, tax.NotComputed)
			}
		}
	}
	// Whether the run loaded dm-crypt: the trickle did not, and says so
	// (issue 30's "did not load dm-crypt" finding); the flood did.
	for _, tc := range []struct {
		job    string
		loaded bool
	}{{"trickle", false}, {"flood", true}} {
		r, err := benchresult.Read(bytes.NewReader(res.Files[tc.job+".json"]))
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.job, err, res.Files[tc.job+".txt"])
		}
		t.Logf("%s in the guest:\n%s", tc.job, res.Files[tc.job+".txt"])
		if r.EncryptionTax == nil || r.EncryptionTax.Load == nil {
			t.Fatalf("%s: no dm-crypt load in the result: %+v", tc.job, r.EncryptionTax)
		}
		l := r.EncryptionTax.Load
		said := bytes.Contains(res.Files[tc.job+".txt"], []byte("this run did not load dm-crypt"))
		if l.Loaded != tc.loaded || said == tc.loaded || !bytes.Contains(res.Files[tc.job+".txt"], []byte(l.Line)) {
			t.Errorf("%s: load %+v, printed the finding: %v; want loaded %v", tc.job, l, said, tc.loaded)
		}
	}
}
