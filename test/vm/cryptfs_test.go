package vm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/capture/capfile"
	"github.com/slowpath/slowpath/internal/testing/capfiletest"
)

// cryptFSScript runs lab crypt on ext4 with the profiles that need files:
// a captured service's replay (a capture written on the host, below), a
// user's fio job file and search-index at a small scale, each plain and
// under default, no_workqueue and null_cipher, one short run a side: the
// kernels' acceptance of the filesystem per side and the result's shape
// (TCG), not a measurement. After each lab, nothing of it may be mounted.
const cryptFSScript = `set -e
lab() { env PATH=/usr/sbin:/usr/bin:/sbin:/bin /usr/bin/slowpath lab "$@"; }
for p in replay:/cap fio:/job.fio search-index; do
	n=${p%%:*}
	# A job file's size is unknown: its default ramdisk (1G) is more than
	# half of the guest's memory, so it gets one of its own size.
	b=; [ $n = fio ] && b="--backing ram:128M"
	rc=0; lab crypt --profile $p --fs ext4 $b --scale 0.02 --runs 1 --runtime 1s \
		--variants default,no_workqueue,null_cipher --format json > /results/$n.json 2> /results/$n.err || rc=$?
	echo $rc > /results/$n.rc
	grep -c /run/slowpath/cryptlab /proc/self/mountinfo > /results/$n.mounts || true
	ls -d /run/slowpath/cryptlab/mnt-* 2>/dev/null | wc -l > /results/$n.dirs
done
`

const cryptFSJob = `[global]
ioengine=psync
bs=4k
size=8m
[writer]
rw=randwrite
fdatasync=16
[reader]
rw=randread
`

// TestCryptLabOnFilesystem: lab crypt runs a replay of a captured service,
// a fio job file and search-index on ext4 that it makes on every side
// (plain, default, no_workqueue, null_cipher) on the full-set kernel and
// the newest: each gives a result whose setup names the filesystem, with
// every side run, the null cipher counted as no encryption layer and the
// tax in parts; the lab leaves nothing mounted.
func TestCryptLabOnFilesystem(t *testing.T) {
	t.Parallel()
	onKernels(t, fullSetAndNewest, testCryptLabOnFilesystem)
}

func testCryptLabOnFilesystem(t *testing.T, k *kernelLab) {
	files := map[string][]byte{"job.fio": []byte(cryptFSJob)}
	capDir := capfiletest.Service(t)
	for _, n := range []string{capfile.ManifestName, capfile.OpsName, capfile.BlockName} {
		b, err := os.ReadFile(filepath.Join(capDir, n))
		if err != nil {
			t.Fatal(err)
		}
		files["cap/"+n] = b
	}
	res := boot(t, k, Scenario{Name: "crypt-fs", Script: cryptFSScript, Files: files, Timeout: 9 * time.Minute})
	for _, n := range []string{"replay", "fio", "search-index"} {
		if rc := strings.TrimSpace(string(res.Files[n+".rc"])); rc != "0" && rc != "1" {
			t.Errorf("%s: lab crypt exited %s:\n%s", n, rc, res.Files[n+".err"])
			continue
		}
		if m := strings.TrimSpace(string(res.Files[n+".mounts"])); m != "0" {
			t.Errorf("%s: %s lab mounts left after lab crypt", n, m)
		}
		if d := strings.TrimSpace(string(res.Files[n+".dirs"])); d != "0" {
			t.Errorf("%s: %s lab mount directories left after lab crypt", n, d)
		}
		t.Logf("%s: lab crypt's progress (TCG):\n%s", n, res.Files[n+".err"])
		checkFSResult(t, n, res.Files[n+".json"])
	}
}

func checkFSResult(t *testing.T, name string, doc []byte) {
	t.Helper()
	var r struct {
		Setup []struct{ Key, Value string }
		Sides []struct {
			Name string
			Runs int
		}
		NotRun []struct{ Name, Reason string } `json:"not_run"`
		Tax    *struct {
			Sides []struct{ Name string }
		} `json:"encryption_tax"`
		Split *struct {
			Metric string
			Steps  []struct{ Part, From, To, Change, Verdict string }
		} `json:"tax_split"`
		Rows []struct {
			Metric, Role string
			Sides        []struct{ Median float64 }
		}
	}
	if err := json.Unmarshal(doc, &r); err != nil {
		t.Errorf("%s: lab crypt JSON: %v\n%s", name, err, doc)
		return
	}
	if len(r.NotRun) != 0 {
		t.Errorf("%s: not run: %+v", name, r.NotRun)
	}
	var sides []string
	for _, s := range r.Sides {
		sides = append(sides, s.Name)
		if s.Runs != 1 {
			t.Errorf("%s: side %s has %d runs, want 1", name, s.Name, s.Runs)
		}
	}
	if want := []string{"plain", "default", "no_workqueue", "null_cipher"}; !slices.Equal(sides, want) {
		t.Errorf("%s: sides %v, want %v", name, sides, want)
	}
	i := slices.IndexFunc(r.Setup, func(f struct{ Key, Value string }) bool { return f.Key == "filesystem" })
	if i < 0 || !strings.HasPrefix(r.Setup[i].Value, "ext4: mke2fs -t ext4") {
		t.Errorf("%s: setup %+v has no ext4 filesystem fact", name, r.Setup)
	}
	if r.Split == nil {
		t.Errorf("%s: no tax in parts", name)
		return
	}
	for _, row := range r.Rows {
		if row.Role == "primary" || row.Role == "guard" {
			var med []float64
			for _, sd := range row.Sides {
				med = append(med, sd.Median)
			}
			t.Logf("%s: %s (%s): medians %v %v", name, row.Metric, row.Role, sides, med)
		}
	}
	var parts []string
	for _, s := range r.Split.Steps {
		parts = append(parts, s.Part)
		t.Logf("%s: tax in parts on %s: %s (%s → %s): %s %s", name, r.Split.Metric, s.Part, s.From, s.To, s.Change, s.Verdict)
	}
	if !slices.Contains(parts, "queueing") || !slices.Contains(parts, "cipher") {
		t.Errorf("%s: tax in parts %v, want queueing and cipher", name, parts)
	}
	if r.Tax != nil && slices.ContainsFunc(r.Tax.Sides, func(s struct{ Name string }) bool { return s.Name == "null_cipher" }) {
		t.Errorf("%s: the null cipher has an expected tax: it encrypts nothing", name)
	}
}
