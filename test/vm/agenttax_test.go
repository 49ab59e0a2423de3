package vm

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestAgentTaxOnCrypt runs `slowpath agent` on a live dm-crypt over
// dm-linear over brd with fio running on the crypt device, scraping four
// times 4 s apart and reading both devices' stat files just before and just
// after each scrape. From the second scrape on, dmcrypt.tax is judged over
// the interval (not unknown), and every exported counter lies between the
// two readings of its stat file, so its rate between two scrapes agrees
// with the iostat-style deltas of the same files.
func TestAgentTaxOnCrypt(t *testing.T) {
	t.Parallel()
	onKernels(t, fullSet, testAgentTaxOnCrypt)
}

func testAgentTaxOnCrypt(t *testing.T, k *kernelLab) {
	key := randomHex(t, 64)
	const scrapes = 4
	res := boot(t, k, Scenario{Name: "agent-tax", Script: prelude + `
ip link set lo up
modprobe brd rd_nr=1 rd_size=65536
dmsetup create sp-lin --table "0 $(cat /sys/block/ram0/size) linear /dev/ram0 0"
dmsetup create sp-tax --table "0 $(cat /sys/block/ram0/size) crypt aes-xts-plain64 ` + key + ` 0 /dev/mapper/sp-lin 0"
# No udev in the guest: /dev/mapper nodes are not links to dm-N; sysfs names them.
for d in /sys/block/dm-*; do
	case $(cat $d/dm/name) in sp-tax) top=${d##*/};; sp-lin) low=${d##*/};; esac
done
echo $top > /results/top; echo $low > /results/low
dd if=/dev/zero of=/dev/mapper/sp-tax bs=1M count=32 2>/dev/null
# Threads, not forked jobs, and no progress line on the console (it would
# interleave with the result files); it ends by itself after the scrapes.
fio --name=tax --filename=/dev/mapper/sp-tax --rw=randrw --bs=4k --direct=1 --ioengine=psync --size=32m --time_based --runtime=25 --thread --eta=never --output=/results/fio.txt >/dev/null 2>&1 &
wl=$!
sp agent --cloud none --web.listen-address 127.0.0.1:9877 --ready-file /tmp/ready 2>/results/agent.err &
pid=$!
i=0; until [ -e /tmp/ready ]; do i=$((i+1)); [ $i -lt 600 ] || { echo "agent never listened"; cat /results/agent.err; exit 1; }; sleep 0.1; done
for i in ` + seq(scrapes) + `; do
	cat /sys/class/block/$top/stat /sys/class/block/$low/stat > /results/before.$i
	wget -q -O /results/scrape.$i http://127.0.0.1:9877/metrics
	cat /sys/class/block/$top/stat /sys/class/block/$low/stat > /results/after.$i
	sleep 4
done
kill $pid; wait $pid || true
wait $wl
dmsetup remove sp-tax
dmsetup remove sp-lin
rmmod brd
`})
	top, low := strings.TrimSpace(string(res.Files["top"])), strings.TrimSpace(string(res.Files["low"]))
	if top == "" || low == "" {
		t.Fatalf("devices not named: top %q low %q", top, low)
	}
	type reading struct{ ios, ticksMS, sectors [2]uint64 } // per device: top, low
	stat := func(name string) reading {
		lines := strings.Split(strings.TrimSpace(string(res.Files[name])), "\n")
		if len(lines) != 2 {
			t.Fatalf("%s: %d stat lines", name, len(lines))
		}
		var r reading
		for d, l := range lines {
			f := strings.Fields(l)
			if len(f) < 11 {
				t.Fatalf("%s: %q", name, l)
			}
			n := func(i int) uint64 { v, _ := strconv.ParseUint(f[i], 10, 64); return v }
			r.ios[d], r.sectors[d], r.ticksMS[d] = n(0)+n(4), n(2)+n(6), n(3)+n(7)
		}
		return r
	}
	metric := func(body, name, dev string) float64 {
		sum, found := 0.0, false
		re := regexp.MustCompile(`(?m)^` + name + `\{device="` + dev + `",direction="(?:read|write)"\} (\S+)$`)
		for _, m := range re.FindAllStringSubmatch(body, -1) {
			v, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			sum, found = sum+v, true
		}
		if !found {
			t.Fatalf("no %s for %s in the scrape", name, dev)
		}
		return sum
	}
	var got [scrapes + 1]reading
	for i := 1; i <= scrapes; i++ {
		body := string(res.Files[fmt.Sprintf("scrape.%d", i)])
		before, after := stat(fmt.Sprintf("before.%d", i)), stat(fmt.Sprintf("after.%d", i))
		for d, dev := range []string{top, low} {
			got[i].ios[d] = uint64(metric(body, "slowpath_disk_ios_total", dev))
			got[i].ticksMS[d] = uint64(math.Round(metric(body, "slowpath_disk_io_time_seconds_total", dev) * 1000))
			got[i].sectors[d] = uint64(metric(body, "slowpath_disk_io_bytes_total", dev)) / 512
			for what, v := range map[string][3]uint64{
				"I/Os": {before.ios[d], got[i].ios[d], after.ios[d]}, "ticks": {before.ticksMS[d], got[i].ticksMS[d], after.ticksMS[d]},
				"sectors": {before.sectors[d], got[i].sectors[d], after.sectors[d]},
			} {
				if v[1] < v[0] || v[1] > v[2] {
					t.Errorf("scrape %d, %s %s: exported %d outside the stat file's %d..%d around the scrape", i, dev, what, v[1], v[0], v[2])
				}
			}
		}
		if !strings.Contains(body, `slowpath_cipher_bytes_per_second{algorithm="xts(aes)"`) {
			t.Errorf("scrape %d: no cipher measured (agent stderr: %s)", i, res.Files["agent.err"])
		}
		if !strings.Contains(body, `slowpath_dmcrypt_tax_span{device="`+top+`",lower="`+low+`",mountpoint="",table="read"} 1`) {
			t.Errorf("scrape %d: no tax span %s over %s", i, top, low)
		}
		unknown := strings.Contains(body, `slowpath_finding_unknown{id="dmcrypt.tax"`)
		if i == 1 && !unknown {
			t.Errorf("scrape 1 has no interval but dmcrypt.tax is not unknown")
		}
		if i > 1 {
			if unknown {
				t.Errorf("scrape %d: dmcrypt.tax unknown with fio running (%d I/Os at %s in the interval)", i, got[i].ios[0]-got[i-1].ios[0], top)
			}
			b, a := stat(fmt.Sprintf("before.%d", i)), stat(fmt.Sprintf("after.%d", i-1))
			b0, a1 := stat(fmt.Sprintf("before.%d", i-1)), stat(fmt.Sprintf("after.%d", i))
			for d, dev := range []string{top, low} {
				delta := got[i].ios[d] - got[i-1].ios[d]
				if lo, hi := b.ios[d]-a.ios[d], a1.ios[d]-b0.ios[d]; delta < lo || delta > hi {
					t.Errorf("scrapes %d-%d, %s: %d I/Os between scrapes, the stat files say %d..%d", i-1, i, dev, delta, lo, hi)
				}
			}
			fires := strings.Contains(body, `slowpath_finding{id="dmcrypt.tax",severity="warning",subject="/dev/mapper/sp-tax"} 1`)
			dIOs := got[i].ios[0] - got[i-1].ios[0]
			t.Logf("interval %d: %s %d I/Os, await %.3f ms; %s %.3f ms; dmcrypt.tax fires: %v (TCG: functional evidence, not performance)", i,
				top, dIOs, float64(got[i].ticksMS[0]-got[i-1].ticksMS[0])/float64(max(dIOs, 1)),
				low, float64(got[i].ticksMS[1]-got[i-1].ticksMS[1])/float64(max(got[i].ios[1]-got[i-1].ios[1], 1)), fires)
		}
	}
}

func seq(n int) string {
	var s []string
	for i := 1; i <= n; i++ {
		s = append(s, strconv.Itoa(i))
	}
	return strings.Join(s, " ")
}
