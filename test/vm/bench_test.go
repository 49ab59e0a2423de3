package vm

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
)

// TestBenchOnCrypt is scenario g: `slowpath bench` search-index and
// db-commit on ext4 over dm-crypt over a brd ramdisk. Where the time went
// must name the dm-crypt device and find CPU in the kcryptd threads; the
// ramdisk below is on the path but counts no I/O (brd does no I/O
// accounting), which the summary must say; the run's directory must be gone afterwards. Under
// TCG the figures are functional evidence only.
func TestBenchOnCrypt(t *testing.T) {
	t.Parallel()
	key := randomHex(t, 64)
	res := boot(t, Scenario{Name: "bench-on-crypt", Timeout: 4 * time.Minute, Script: prelude + `
# fio is in /usr/bin: bench needs it on PATH.
spb() { env PATH=/bin:/usr/bin:/usr/sbin /usr/bin/slowpath "$@"; }
modprobe brd rd_nr=1 rd_size=262144
dmsetup create b0 --table "0 $(cat /sys/block/ram0/size) crypt aes-xts-plain64 ` + key + ` 0 /dev/ram0 0"
mke2fs -q -t ext4 /dev/mapper/b0
mkdir -p /mnt/b
mount -t ext4 /dev/mapper/b0 /mnt/b
spb bench search-index --dir /mnt/b --scale 0.05 --runtime 3s --cloud none -o /results/search-index.json > /results/search-index.txt
spb bench db-commit --dir /mnt/b --scale 0.05 --runtime 2s --cloud none -o /results/db-commit.json > /results/db-commit.txt
ls -A /mnt/b > /results/left.txt
umount /mnt/b
dmsetup remove b0
rmmod brd
`})
	if left := strings.TrimSpace(string(res.Files["left.txt"])); left != "" && left != "lost+found" {
		t.Errorf("bench left %q in /mnt/b", left)
	}
	for _, prof := range []string{"search-index", "db-commit"} {
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
		var crypt, ram string
		for _, d := range r.WhereTime.Devices {
			switch d.Layer {
			case "dm-crypt":
				crypt = d.Device
			case "ram":
				ram = d.Device
			}
			if d.Layer == "dm-crypt" && (d.WriteIOPS <= 0 || d.AwaitNS <= 0) {
				t.Errorf("%s: dm-crypt device %s saw no I/O: %+v", prof, d.Device, d)
			}
		}
		if !strings.HasPrefix(crypt, "dm-") || ram != "ram0" {
			t.Fatalf("%s: devices %+v, want the dm-crypt device and ram0", prof, r.WhereTime.Devices)
		}
		sum := r.WhereTime.Summary
		if !strings.Contains(sum, crypt+" await") || !strings.Contains(sum, "(ram0 counts no I/O)") || !strings.Contains(sum, "in kcryptd") {
			t.Errorf("%s: summary %q does not name %s, ram0 and kcryptd", prof, sum, crypt)
		}
		for _, g := range r.WhereTime.Threads {
			if g.Group == benchresult.GroupKcryptd && (g.CPUNS <= 0 || g.Threads == 0 || !strings.Contains(g.Top[0].Comm, "kcryptd")) {
				t.Errorf("%s: kcryptd group %+v", prof, g)
			}
		}
		if !bytes.Contains(res.Files[prof+".txt"], []byte("where the time went: "+crypt)) {
			t.Errorf("%s: printed summary lacks %s", prof, crypt)
		}
	}
}
