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
	onKernels(t, fullSet, testDMTimingVsDmsetup)
}

func testDMTimingVsDmsetup(t *testing.T, k *kernelLab) {
	const dmDevices, rounds = 64, 5
	key := randomHex(t, 64)
	var sc strings.Builder
	sc.WriteString(prelude)
	// lsblk leaves out RAM disks (major 1) by default, and with them the
	// dm devices on top: the reference includes them and device-mapper's
	// dynamic major.
	sc.WriteString("export DMMAJ=$(awk '$2 == \"device-mapper\" {print $1}' /proc/devices)\n")
	// The same timings with no dm device first: the difference is what
	// the dm devices cost each side, whatever else each one does (slowpath
	// collect runs every collector, not only storage).
	sc.WriteString(timeRounds(rounds, "0"))
	fmt.Fprintf(&sc, "modprobe brd rd_nr=1 rd_size=%d\n", dmDevices*1024)
	fmt.Fprintf(&sc, "i=0; while [ $i -lt %d ]; do dmsetup create t$i --table \"0 2048 crypt aes-xts-plain64 %s 0 /dev/ram0 $((i*2048))\"; i=$((i+1)); done\n", dmDevices, key)
	sc.WriteString(`dmsetup table | wc -l > /results/dmsetup-lines
lsblk -J -O -I 1,$DMMAJ > /results/lsblk.json
sp collect --cloud none --net-interval 0 -o - > /results/snapshot.json
`)
	sc.WriteString(timeRounds(rounds, "n"))
	sc.WriteString(`i=0; while [ $i -lt ` + strconv.Itoa(dmDevices) + ` ]; do dmsetup remove t$i; i=$((i+1)); done
rmmod brd
`)
	res := boot(t, k, Scenario{Name: "dm-timing", Script: sc.String()})
	if got := strings.TrimSpace(string(res.Files["dmsetup-lines"])); got != strconv.Itoa(dmDevices) {
		t.Errorf("dmsetup table printed %s lines, want %d", got, dmDevices)
	}
	if got := lsblkNames(t, res.Files["lsblk.json"], "t"); got != dmDevices {
		t.Errorf("lsblk -J -O listed %d of the %d dm devices:\n%.1500s", got, dmDevices, res.Files["lsblk.json"])
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
	best := map[string]float64{}
	for _, f := range []string{"slowpath-0", "reference-0", "slowpath-n", "reference-n"} {
		secs, err := parseRealSeconds(string(res.Files["time-"+f]))
		if err != nil || len(secs) != rounds {
			t.Fatalf("timings %s: %v (%v)\n%s", f, secs, err, res.Files["time-"+f])
		}
		best[f] = slices.Min(secs)
	}
	addOurs, addRef := best["slowpath-n"]-best["slowpath-0"], best["reference-n"]-best["reference-0"]
	t.Logf("qemu TCG, functional evidence only (AES and everything else emulated; not performance), best of %d:", rounds)
	t.Logf("  no dm device:  slowpath collect %.2fs, lsblk -J -O + dmsetup table %.2fs", best["slowpath-0"], best["reference-0"])
	t.Logf("  %d dm-crypt:   slowpath collect %.2fs, lsblk -J -O + dmsetup table %.2fs (reference/slowpath %.2f)",
		dmDevices, best["slowpath-n"], best["reference-n"], best["reference-n"]/max(best["slowpath-n"], 0.01))
	t.Logf("  added by the %d devices: slowpath %.2fs, reference %.2fs", dmDevices, addOurs, addRef)
}

// timeRounds times slowpath collect and the by-hand reference rounds
// times each, alternating, into /results/time-{slowpath,reference}-SUFFIX.
func timeRounds(rounds int, suffix string) string {
	return `r=0; while [ $r -lt ` + strconv.Itoa(rounds) + ` ]; do
	time sh -c 'env PATH=/bin /usr/bin/slowpath collect --cloud none --net-interval 0 -o - >/dev/null' 2>> /results/time-slowpath-` + suffix + `
	time sh -c 'lsblk -J -O -I 1,$DMMAJ >/dev/null; dmsetup table >/dev/null' 2>> /results/time-reference-` + suffix + `
	r=$((r+1))
done
`
}

// lsblkNames counts the devices in lsblk -J output whose name starts
// with prefix, children included.
func lsblkNames(t *testing.T, b []byte, prefix string) int {
	t.Helper()
	type dev struct {
		Name     string `json:"name"`
		Children []dev  `json:"children"`
	}
	var out struct {
		Blockdevices []dev `json:"blockdevices"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("lsblk -J: %v\n%.500s", err, b)
	}
	seen := map[string]bool{}
	var walk func([]dev)
	walk = func(ds []dev) {
		for _, d := range ds {
			if strings.HasPrefix(d.Name, prefix) {
				seen[d.Name] = true
			}
			walk(d.Children)
		}
	}
	walk(out.Blockdevices)
	return len(seen)
}
