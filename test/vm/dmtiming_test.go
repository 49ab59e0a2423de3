package vm

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// realRE reads busybox time's "real\t0m 0.52s" line.
var realRE = regexp.MustCompile(`(?m)^real\s+(\d+)m\s*([\d.]+)s`)

// parseRealSeconds returns every "real" time busybox printed, in seconds.
func parseRealSeconds(out string) ([]float64, error) {
	var secs []float64
	for _, m := range realRE.FindAllStringSubmatch(out, -1) {
		mins, err := strconv.Atoi(m[1])
		if err != nil {
			return nil, err
		}
		s, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, err
		}
		secs = append(secs, float64(mins)*60+s)
	}
	return secs, nil
}

func TestParseRealSeconds(t *testing.T) {
	got, err := parseRealSeconds("real\t0m 0.52s\nuser\t0m 0.10s\nsys\t0m 0.30s\nreal\t1m 2.50s\n")
	if err != nil || !slices.Equal(got, []float64{0.52, 62.5}) {
		t.Errorf("got %v, %v", got, err)
	}
}

// TestDMTimingVsDmsetup creates dmDevices real dm-crypt devices and times,
// in the guest, slowpath's reader (`slowpath collect`: its own
// DM_TABLE_STATUS ioctl, and every other collector too) against what an
// operator runs for the same storage facts, `lsblk -J -O` plus `dmsetup
// table` (all tables in one call). This is the like-for-like comparison
// the synthetic 512-device benchmark cannot make on a host without
// device-mapper. Under TCG it is functional evidence (both read the same
// real tables; the ratio is logged), never a performance figure.
func TestDMTimingVsDmsetup(t *testing.T) {
	t.Parallel()
	const dmDevices, rounds = 64, 5
	key := randomHex(t, 64)
	var sc strings.Builder
	sc.WriteString(prelude)
	fmt.Fprintf(&sc, "modprobe brd rd_nr=1 rd_size=%d\n", dmDevices*1024)
	fmt.Fprintf(&sc, "i=0; while [ $i -lt %d ]; do dmsetup create t$i --table \"0 2048 crypt aes-xts-plain64 %s 0 /dev/ram0 $((i*2048))\"; i=$((i+1)); done\n", dmDevices, key)
	sc.WriteString(`dmsetup table | wc -l > /results/dmsetup-lines
lsblk -J -O | grep -c '"name": *"t[0-9]*"' > /results/lsblk-dm || true
sp collect --cloud none --net-interval 0 -o - > /results/snapshot.json
r=0; while [ $r -lt ` + strconv.Itoa(rounds) + ` ]; do
	time sh -c 'env PATH=/bin /usr/bin/slowpath collect --cloud none --net-interval 0 -o - >/dev/null' 2>> /results/time-slowpath
	time sh -c 'lsblk -J -O >/dev/null; dmsetup table >/dev/null' 2>> /results/time-reference
	r=$((r+1))
done
i=0; while [ $i -lt ` + strconv.Itoa(dmDevices) + ` ]; do dmsetup remove t$i; i=$((i+1)); done
rmmod brd
`)
	res := boot(t, Scenario{Name: "dm-timing", Script: sc.String()})
	if got := strings.TrimSpace(string(res.Files["dmsetup-lines"])); got != strconv.Itoa(dmDevices) {
		t.Errorf("dmsetup table printed %s lines, want %d", got, dmDevices)
	}
	if got := strings.TrimSpace(string(res.Files["lsblk-dm"])); got != strconv.Itoa(dmDevices) {
		t.Errorf("lsblk -J -O listed %s of the %d dm devices", got, dmDevices)
	}
	o := outputs{raw: map[string][]byte{"snapshot.json": res.Files["snapshot.json"]}}
	o.noKey(t, key)
	var snap snapshot.Snapshot
	if err := json.Unmarshal(res.Files["snapshot.json"], &snap); err != nil || snap.Storage == nil {
		t.Fatalf("snapshot.json: %v (storage section: %v)", err, snap.Storage != nil)
	}
	crypt := 0
	for _, d := range snap.Storage.BlockDevices {
		if d.DM != nil && strings.HasPrefix(d.DM.Name, "t") && len(d.DM.Targets) == 1 && d.DM.Targets[0].Type == "crypt" {
			crypt++
		}
	}
	if crypt != dmDevices {
		t.Errorf("slowpath read %d crypt tables through its ioctl, want %d (errors: %+v)", crypt, dmDevices, snap.Manifest.Errors)
	}
	ours, err1 := parseRealSeconds(string(res.Files["time-slowpath"]))
	ref, err2 := parseRealSeconds(string(res.Files["time-reference"]))
	if err1 != nil || err2 != nil || len(ours) != rounds || len(ref) != rounds {
		t.Fatalf("timings: slowpath %v (%v), reference %v (%v)\n%s%s", ours, err1, ref, err2, res.Files["time-slowpath"], res.Files["time-reference"])
	}
	mo, mr := slices.Min(ours), slices.Min(ref)
	t.Logf("%d real dm-crypt devices under qemu TCG (functional evidence, not performance): "+
		"slowpath collect (DM ioctl, every collector) best %.2fs of %v; lsblk -J -O + dmsetup table best %.2fs of %v; ratio reference/slowpath %.2f",
		dmDevices, mo, ours, mr, ref, mr/max(mo, 0.01))
}
