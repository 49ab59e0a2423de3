package vm

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/btf"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/dropreport"
	"github.com/slowpath/slowpath/internal/lab/cryptlab"
)

// The scenarios of this file run on every kernel of the matrix: each
// asserts a kernel fact from kernels/NAME.expect against what the guest
// kernel itself says and against what slowpath says about it.

// kernelFactsScript collects the kernel's own answers (/proc/crypto,
// softnet_stat, the crypt target version, the dm table of a crypt device
// over brd) next to slowpath's (collect, doctor), and runs the crypt lab's
// default matrix in its shortest form: its variant list and tax section
// turn on the kernel.
const kernelFactsScript = prelude + `
cat /proc/crypto > /results/crypto
cat /proc/net/softnet_stat > /results/softnet
dmsetup targets > /results/targets
modprobe brd rd_nr=1 rd_size=8192
dmsetup create kf --table "0 $(cat /sys/block/ram0/size) crypt aes-xts-plain64 $KEY 0 /dev/ram0 0"
dd if=/dev/zero of=/dev/mapper/kf bs=64k count=16 2>/dev/null
cat /sys/block/ram0/dev > /results/ram0-dev
dmsetup table > /results/dmsetup-table
report
dmsetup remove kf
rmmod brd
lab() { env PATH=/usr/sbin:/usr/bin:/sbin:/bin /usr/bin/slowpath lab "$@"; }
lab crypt --profile randrw-4k --backing ram:32M --runs 1 --runtime 1s > /results/lab.txt 2> /results/lab.err || { cat /results/lab.err; exit 1; }
`

// TestKernelFacts: on each kernel, doctor/collect agree with the kernel's
// own answers (/proc/crypto's xts(aes) driver, softnet_stat's columns,
// `dmsetup table` of dm-crypt over brd, drop reasons), those answers are
// the ones kernels/NAME.expect records, and the crypt lab's variant list
// matches the kernel's crypt target version.
func TestKernelFacts(t *testing.T) {
	t.Parallel()
	onKernels(t, everyKernel, testKernelFacts)
}

func testKernelFacts(t *testing.T, k *kernelLab) {
	e := k.Expect
	key := randomHex(t, 64)
	res := boot(t, k, Scenario{Name: "kernel-facts", Timeout: 5 * time.Minute, Script: "KEY=" + key + "\n" + kernelFactsScript})
	o := loadOutputs(t, res, "")
	o.noKey(t, key)

	t.Run("crypto", func(t *testing.T) {
		driver, err := procCryptoDriver(string(res.Files["crypto"]), "xts(aes)")
		if err != nil {
			t.Fatal(err)
		}
		if driver != e.XTSDriver {
			t.Errorf("/proc/crypto: xts(aes) is %s, kernels/%s.expect says %s", driver, k.Name, e.XTSDriver)
		}
		var got []string
		for _, a := range o.snap.Host.Crypto {
			if a.Name == "xts(aes)" {
				got = append(got, a.Driver)
			}
		}
		if !slices.Contains(got, driver) {
			t.Errorf("snapshot host.crypto xts(aes) drivers %q lack the kernel's %s", got, driver)
		}
		if c := o.snap.Host.Cipher; c == nil {
			t.Errorf("no host.cipher measurement with a dm-crypt device present (errors %+v)", o.snap.Manifest.Errors)
		} else if c.Method == "af_alg" && c.Driver != driver {
			t.Errorf("host.cipher measured through AF_ALG names driver %q, /proc/crypto's highest priority is %s", c.Driver, driver)
		}
	})

	t.Run("softnet", func(t *testing.T) {
		cols, err := softnetColumns(string(res.Files["softnet"]))
		if err != nil {
			t.Fatal(err)
		}
		if cols != e.SoftnetColumns {
			t.Errorf("softnet_stat has %d columns, kernels/%s.expect says %d", cols, k.Name, e.SoftnetColumns)
		}
		if o.snap.Net == nil || len(o.snap.Net.Samples) == 0 {
			t.Fatalf("snapshot has no net samples (errors %+v)", o.snap.Manifest.Errors)
		}
		for i, s := range o.snap.Net.Samples {
			if s.SoftnetColumns != cols || len(s.Softnet) == 0 {
				t.Errorf("snapshot net sample %d: softnet_columns %d over %d CPUs, the kernel printed %d columns", i, s.SoftnetColumns, len(s.Softnet), cols)
			}
		}
	})

	t.Run("drop-reasons", func(t *testing.T) {
		if o.snap.Net == nil || o.snap.Net.DropReasons == nil {
			t.Fatalf("snapshot has no net.drop_reasons (errors %+v)", o.snap.Manifest.Errors)
		}
		want := map[bool]string{true: "yes", false: "no"}[e.DropReasons]
		if got := o.snap.Net.DropReasons.Status; got != want {
			t.Errorf("snapshot drop_reasons %q (%s), kernels/%s.expect says %s", got, o.snap.Net.DropReasons.Detail, k.Name, want)
		}
		const id = "net.no-drop-reasons"
		fs := o.findings(id)
		if e.DropReasons {
			// Silent: doctor lists no failing finding of the check.
			for _, f := range fs {
				if f.Status != check.Pass {
					t.Errorf("%s on a kernel with drop reasons: %s %q", f.ID, f.Status, f.Summary)
				}
			}
			return
		}
		if len(fs) != 1 {
			t.Fatalf("%d %s findings on a kernel without drop reasons, want 1", len(fs), id)
		}
		f := fs[0]
		// It fires, and its text is accurate for this kernel: reasons
		// arrived in 5.17, and net drops groups by function here (kernel
		// BTF is built in on every kernel of the matrix).
		if f.Status == check.Pass || f.Status == check.Unknown {
			t.Errorf("%s on a kernel without drop reasons: %s %q", f.ID, f.Status, f.Summary)
		}
		for _, w := range []string{"does not say why it drops", "runs here", "kernel function"} {
			if !strings.Contains(f.Summary, w) {
				t.Errorf("%s summary lacks %q: %s", f.ID, w, f.Summary)
			}
		}
		if !strings.Contains(f.Remediation, "5.17") && !strings.Contains(f.Summary, "5.17") {
			t.Errorf("%s does not say drop reasons need 5.17: %+v", f.ID, f)
		}
	})

	t.Run("storage-model", func(t *testing.T) {
		d := o.dmDevice(t, "kf")
		ram := o.device(t, "ram0")
		if dev := strings.TrimSpace(string(res.Files["ram0-dev"])); ram.MajorMinor != dev {
			t.Errorf("snapshot ram0 is %s, sysfs says %s", ram.MajorMinor, dev)
		}
		table, err := dmsetupTable(string(res.Files["dmsetup-table"]), "kf")
		if err != nil {
			t.Fatal(err)
		}
		if len(d.DM.Targets) != 1 {
			t.Fatalf("snapshot kf targets %+v, want one", d.DM.Targets)
		}
		got := d.DM.Targets[0]
		if got.Start != table.start || got.Length != table.length || got.Type != table.typ {
			t.Errorf("snapshot kf target %d %d %s, dmsetup table %d %d %s", got.Start, got.Length, got.Type, table.start, table.length, table.typ)
		}
		// dmsetup masks the key with zeros, slowpath with redacted:BITS;
		// every other field must be the kernel's.
		want := slices.Clone(table.params)
		want[1] = fmt.Sprintf("redacted:%d", len(key)*4)
		if g := strings.Fields(got.Params); !slices.Equal(g, want) {
			t.Errorf("snapshot kf params %q, dmsetup table %q (key redacted)", g, want)
		}
		l := cryptLayer(t, o.path(t, d.Name), d.Name)
		if l.Crypt.CipherSpec != table.params[0] || l.Crypt.KeyBits != len(key)*4 || l.Crypt.Device != table.params[3] || l.Crypt.SectorSize != 512 {
			t.Errorf("doctor model of kf %+v, dmsetup table %q", *l.Crypt, table.params)
		}
	})

	t.Run("crypt-lab-variants", func(t *testing.T) {
		checkCryptVariants(t, k, string(res.Files["targets"]), string(res.Files["lab.txt"]))
	})
}

// procCryptoDriver returns the highest-priority driver of name in
// /proc/crypto: the one the kernel's crypto API picks (crypto/api.c
// __crypto_alg_lookup).
func procCryptoDriver(crypto, name string) (string, error) {
	best, bestPrio := "", -1
	var cur struct {
		name, driver string
		prio         int
	}
	flush := func() {
		if cur.name == name && cur.prio > bestPrio {
			best, bestPrio = cur.driver, cur.prio
		}
		cur.name, cur.driver, cur.prio = "", "", -1
	}
	sc := bufio.NewScanner(strings.NewReader(crypto))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			flush()
			continue
		}
		switch strings.TrimSpace(k) {
		case "name":
			cur.name = strings.TrimSpace(v)
		case "driver":
			cur.driver = strings.TrimSpace(v)
		case "priority":
			cur.prio, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	flush()
	if best == "" {
		return "", fmt.Errorf("/proc/crypto lists no %s", name)
	}
	return best, nil
}

// softnetColumns is the column count of softnet_stat, the same on every line.
func softnetColumns(s string) (int, error) {
	n := -1
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		c := len(strings.Fields(l))
		if n >= 0 && c != n {
			return 0, fmt.Errorf("softnet_stat lines have %d and %d columns", n, c)
		}
		n = c
	}
	if n <= 0 {
		return 0, fmt.Errorf("softnet_stat is empty")
	}
	return n, nil
}

// softnetDropped sums the dropped column (the second) over CPUs.
func softnetDropped(s string) (uint64, error) {
	var sum uint64
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			return 0, fmt.Errorf("softnet_stat line %q", l)
		}
		v, err := strconv.ParseUint(f[1], 16, 32)
		if err != nil {
			return 0, fmt.Errorf("softnet_stat dropped %q: %w", f[1], err)
		}
		sum += v
	}
	return sum, nil
}

type dmTable struct {
	start, length uint64
	typ           string
	params        []string
}

// dmsetupTable finds NAME's one-line table in `dmsetup table` output
// ("NAME: START LENGTH TYPE PARAMS...").
func dmsetupTable(out, name string) (dmTable, error) {
	for _, l := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(l, name+": ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 8 {
			return dmTable{}, fmt.Errorf("dmsetup table line %q: want START LENGTH crypt CIPHER KEY IV_OFFSET DEVICE OFFSET", l)
		}
		s, err1 := strconv.ParseUint(f[0], 10, 64)
		n, err2 := strconv.ParseUint(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return dmTable{}, fmt.Errorf("dmsetup table line %q: bad start or length", l)
		}
		return dmTable{start: s, length: n, typ: f[2], params: f[3:]}, nil
	}
	return dmTable{}, fmt.Errorf("dmsetup table has no %s:\n%s", name, out)
}

var cryptTargetLine = regexp.MustCompile(`(?m)^crypt\s+v(\d+\.\d+\.\d+)\s*$`)

// checkCryptVariants: the kernel's crypt target version is the one
// recorded, and the lab's default matrix ran exactly the variants that
// version allows and reported the others as not supported, naming both
// versions.
func checkCryptVariants(t *testing.T, k *kernelLab, targets, table string) {
	t.Helper()
	e := k.Expect
	m := cryptTargetLine.FindStringSubmatch(targets)
	if m == nil {
		t.Fatalf("dmsetup targets lists no crypt target:\n%s", targets)
	}
	// The recorded version is one build's; what it means is which
	// variants it allows. A newer build of the series may report another
	// version: accepted when it allows the same variants (cryptlab's own
	// rule), and the not-supported lines must name the version it reports.
	var have cryptlab.Version
	for i, p := range strings.Split(m[1], ".") {
		n, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			t.Fatalf("dmsetup targets: crypt %q: %v", m[1], err)
		}
		have[i] = uint32(n)
	}
	if have.String() != e.CryptTargetString() {
		t.Logf("dmsetup targets: crypt %s, kernels/%s.expect recorded %s: checked by the variants it allows", have, k.Name, e.CryptTargetString())
	}
	head, notRun, _ := strings.Cut(table, "\nNot run:\n")
	notRun, _, _ = strings.Cut(notRun, "\n\n")
	t.Logf("lab crypt on %s (TCG):\n%s", k.Name, table)
	for _, name := range cryptlab.DefaultVariants {
		vs, err := cryptlab.ParseVariants([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		allowed, _ := vs[0].Supported(have)
		if allowed != slices.Contains(e.CryptVariants, name) {
			t.Errorf("crypt %s allows variant %s: %v, kernels/%s.expect's crypt_variants say %v (the series' dm-crypt moved: update the expect file)", have, name, allowed, k.Name, !allowed)
		}
	}
	for _, v := range cryptlab.DefaultVariants {
		line := ""
		for _, l := range strings.Split(notRun, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), v+":") {
				line = strings.TrimSpace(l)
			}
		}
		if slices.Contains(e.CryptVariants, v) {
			if line != "" {
				t.Errorf("variant %s is allowed by crypt %s but reported %q", v, have, line)
			}
			if !regexp.MustCompile(`\b` + regexp.QuoteMeta(v) + `\b`).MatchString(head) {
				t.Errorf("variant %s is allowed by crypt %s but not in the table", v, have)
			}
			continue
		}
		if want := "kernel has " + have.String(); !strings.Contains(line, "needs dm-crypt target") || !strings.Contains(line, want) {
			t.Errorf("variant %s: not-supported line %q, want one saying it needs a newer dm-crypt target and %q", v, line, want)
		}
	}
	for _, v := range e.CryptVariants {
		if !slices.Contains(cryptlab.DefaultVariants, v) {
			t.Errorf("kernels/%s.expect lists crypt variant %s, which is not a default variant of the lab", k.Name, v)
		}
	}
	// The tax model names the driver the kernel encrypts with.
	_, tax, ok := strings.Cut(table, "Encryption tax")
	if !ok {
		t.Fatalf("no Encryption tax section")
	}
	tax, _, _ = strings.Cut(tax, "\n")
	if !strings.Contains(tax, e.XTSDriver) {
		t.Errorf("the tax model's line %q does not name the kernel's xts(aes) driver %s", strings.TrimSpace(tax), e.XTSDriver)
	}
}

// backlogScript floods a veth pair whose receiving end steers every packet
// to the other vCPU (RPS), with netdev_max_backlog at 1, while `slowpath
// net drops` runs: enqueue_to_backlog refuses packets and counts each in
// softnet_stat's dropped column. The guest records softnet_stat around the
// flood, so the Go side knows exactly how many backlog drops happened.
const backlogScript = prelude + `
modprobe veth
ip link set lo up
ip netns add rx
ip link add sp-t type veth peer name sp-r
# RPS is set before the move: sysfs shows only the current namespace's
# devices, and the queue's map moves with the device.
echo 2 > /sys/class/net/sp-r/queues/rx-0/rps_cpus
ip link set sp-r netns rx
ip addr add 10.213.0.1/30 dev sp-t
ip link set sp-t up
ip -n rx addr add 10.213.0.2/30 dev sp-r
ip -n rx link set sp-r up
ip -n rx link set lo up
ip netns exec rx iperf3 -s -1 -D -B 10.213.0.2
old=$(cat /proc/sys/net/core/netdev_max_backlog)
echo 1 > /proc/sys/net/core/netdev_max_backlog
env PATH=/bin /usr/bin/slowpath net drops --duration 120s --ready-file /tmp/ready --format json > /results/drops.json 2> /results/drops.err &
pid=$!
i=0; until [ -e /tmp/ready ] || ! kill -0 $pid 2>/dev/null; do i=$((i+1)); [ $i -lt 900 ] || { echo "net drops never attached"; exit 1; }; sleep 0.1; done
if [ -e /tmp/ready ]; then
	cat /proc/net/softnet_stat > /results/softnet-before
	taskset 1 iperf3 -c 10.213.0.2 -u -b 0 -l 64 -t 3 > /results/iperf3.txt 2>&1 || true
	cat /proc/net/softnet_stat > /results/softnet-after
	kill -INT $pid
fi
rc=0; wait $pid || rc=$?
echo $rc > /results/drops.rc
echo $old > /proc/sys/net/core/netdev_max_backlog
ip netns del rx
ip link del sp-t 2>/dev/null || true
`

// TestBacklogDrop makes real CPU_BACKLOG drops on each kernel and checks
// `slowpath net drops` attributes them as the kernel allows: by reason
// (CPU_BACKLOG at enqueue_to_backlog) where the kernel names reasons;
// where it does not, either by drop site (the function, clearly not a
// reason) or a refusal that names what is missing. The count must be the
// kernel's own: softnet_stat's dropped delta, less what the tracer says it
// missed.
func TestBacklogDrop(t *testing.T) {
	t.Parallel()
	onKernels(t, everyKernel, testBacklogDrop)
}

func testBacklogDrop(t *testing.T, k *kernelLab) {
	e := k.Expect
	res := boot(t, k, Scenario{Name: "backlog-drop", SMP: 2, Script: backlogScript, Timeout: 5 * time.Minute})
	rc := strings.TrimSpace(string(res.Files["drops.rc"]))
	stderr := string(res.Files["drops.err"])
	if rc != "0" {
		if e.DropReasons {
			t.Fatalf("net drops exited %s on a kernel with drop reasons:\n%s", rc, stderr)
		}
		// A refusal: exit 2, naming the missing facility and what to run.
		if rc != "2" || !strings.Contains(strings.ToLower(stderr), "drop reason") || !strings.Contains(stderr, "perf") {
			t.Fatalf("net drops on a kernel without drop reasons exited %s; a refusal must exit 2, name the missing drop reasons and what to run instead (perf):\n%s", rc, stderr)
		}
		t.Logf("refused as the contract allows:\n%s", stderr)
		return
	}
	before, err1 := softnetDropped(string(res.Files["softnet-before"]))
	after, err2 := softnetDropped(string(res.Files["softnet-after"]))
	if err1 != nil || err2 != nil {
		t.Fatalf("softnet_stat: %v %v", err1, err2)
	}
	delta := after - before
	t.Logf("softnet_stat dropped +%d during the flood; iperf3:\n%s", delta, res.Files["iperf3.txt"])
	if delta == 0 {
		t.Fatalf("the flood made no backlog drop (softnet_stat dropped unchanged): the scenario proves nothing")
	}
	var rep dropreport.Report
	if err := json.Unmarshal(res.Files["drops.json"], &rep); err != nil {
		t.Fatalf("drops JSON: %v\n%s\nstderr: %s", err, res.Files["drops.json"], stderr)
	}
	if rep.DropReasons != e.DropReasons {
		t.Errorf("report drop_reasons %v, kernels/%s.expect says %v", rep.DropReasons, k.Name, e.DropReasons)
	}
	// What the tracer could miss: recursion and a full map.
	missed := rep.LostRecords
	if rep.RecursionMisses != nil {
		missed += *rep.RecursionMisses
	}
	var got uint64
	var where []string
	for _, r := range rep.Reasons {
		at := slices.ContainsFunc(r.Locations, func(l dropreport.LocationCount) bool { return l.Function == e.BacklogDropSite })
		switch {
		case e.DropReasons && r.Reason == "CPU_BACKLOG":
			got = r.Count
			if !at {
				t.Errorf("CPU_BACKLOG locations %+v, want %s", r.Locations, e.BacklogDropSite)
			}
		case !e.DropReasons && (r.Reason == e.BacklogDropSite || at):
			// Without reasons an entry is a drop site: it must not claim
			// the reason the kernel cannot give.
			got += r.Count
			if r.Reason == "CPU_BACKLOG" {
				t.Errorf("entry %+v claims the reason CPU_BACKLOG on a kernel without drop reasons", r)
			}
		}
		where = append(where, fmt.Sprintf("%s=%d", r.Reason, r.Count))
	}
	if got == 0 {
		t.Fatalf("no backlog drops attributed (want %s at %s); report: %s", map[bool]string{true: "CPU_BACKLOG", false: "the drop site"}[e.DropReasons], e.BacklogDropSite, strings.Join(where, " "))
	}
	if got > delta || got+missed < delta {
		t.Errorf("attributed %d backlog drops, the kernel counted %d (tracer missed %d)", got, delta, missed)
	}
	t.Logf("%d of %d backlog drops attributed; report: %s", got, delta, strings.Join(where, " "))
}

// TestAgentDropsAttach runs `slowpath agent --collector.drops` on each kernel.
// With drop reasons, both attachments (tp_btf on skb:kfree_skb, fentry on
// the drop function) count five TCP connects to a closed port as NO_SOCKET,
// and the fentry program's trampoline is on the function the kernel now
// drops through (kernels/NAME.expect drop_function: kfree_skb_reason, or
// sk_skb_reason_drop since 6.11): the kernel names each trampoline
// bpf_trampoline_<key> in kallsyms (kernel/bpf/trampoline.c), key = BTF
// object id << 32 | 0x80000000 | BTF type id, and the type id is looked up
// in the BTF of the very vmlinux the guest booted. Without reasons the agent must not claim
// any and must say why.
func TestAgentDropsAttach(t *testing.T) {
	t.Parallel()
	onKernels(t, everyKernel, testAgentDrops)
}

func testAgentDrops(t *testing.T, k *kernelLab) {
	e := k.Expect
	res := boot(t, k, Scenario{Name: "agent-drops", Script: prelude + `
ip link set lo up
for a in tp_btf fentry; do
	rm -f /tmp/ready
	env PATH=/bin /usr/bin/slowpath agent --cloud none --collector.drops --collector.drops.attach $a --web.listen-address 127.0.0.1:9877 --ready-file /tmp/ready 2>/results/$a.err &
	pid=$!
	i=0; until [ -e /tmp/ready ] || ! kill -0 $pid 2>/dev/null; do i=$((i+1)); [ $i -lt 600 ] || { echo "agent ($a) never listened"; cat /results/$a.err; exit 1; }; sleep 0.1; done
	[ -e /tmp/ready ] || { rc=0; wait $pid || rc=$?; echo $rc > /results/$a.rc; continue; }
	for i in 1 2 3 4 5; do nc -w 1 127.0.0.1 9 </dev/null 2>/dev/null || true; done
	wget -q -O /results/$a.metrics http://127.0.0.1:9877/metrics
	grep ' bpf_trampoline_' /proc/kallsyms > /results/$a.trampolines || true
	kill $pid
	wait $pid || true
done
`})
	for _, a := range []string{"tp_btf", "fentry"} {
		metrics, stderr := res.Files[a+".metrics"], string(res.Files[a+".err"])
		if !e.DropReasons {
			if regexp.MustCompile(`slowpath_skb_drops_total\{[^}]*reason=`).Match(metrics) {
				t.Errorf("%s: the scrape has per-reason drop series on a kernel without drop reasons", a)
			}
			if !strings.Contains(strings.ToLower(stderr+string(metrics)), "drop reason") {
				t.Errorf("%s: the agent does not say this kernel has no drop reasons (exit %s):\n%s", a, strings.TrimSpace(string(res.Files[a+".rc"])), stderr)
			}
			continue
		}
		m := noSocketLine.FindSubmatch(metrics)
		if m == nil {
			t.Errorf("%s: no NO_SOCKET series in the scrape (exit %s, stderr: %s)", a, strings.TrimSpace(string(res.Files[a+".rc"])), stderr)
			continue
		}
		n, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil || n < 5 {
			t.Errorf("%s: NO_SOCKET %s, want at least 5 (one per connect)", a, m[1])
		}
		t.Logf("%s: NO_SOCKET %v (qemu TCG: functional evidence, not performance)", a, n)
	}
	if e.DropReasons {
		checkTrampoline(t, k, string(res.Files["fentry.trampolines"]))
	}
}

// checkTrampoline: one of the guest's bpf trampolines is on e.DropFunction.
func checkTrampoline(t *testing.T, k *kernelLab, kallsyms string) {
	t.Helper()
	// Every kernel of the matrix has BTF built in (CONFIG_DEBUG_INFO_BTF=y):
	// the .BTF section of the vmlinux the guest booted, what it serves as
	// /sys/kernel/btf/vmlinux. The stripped vmlinux has no symbol table,
	// which btf.LoadSpec wants; the section alone is a complete BTF blob.
	f, err := elf.Open(k.setupLab(t).Kernel.Image)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sec := f.Section(".BTF")
	if sec == nil {
		t.Fatalf("%s's vmlinux has no .BTF section", k.Name)
	}
	spec, err := btf.LoadSpecFromReader(sec)
	if err != nil {
		t.Fatalf("BTF of %s's vmlinux: %v", k.Name, err)
	}
	var fn *btf.Func
	if err := spec.TypeByName(k.Expect.DropFunction, &fn); err != nil {
		t.Fatalf("%s is not in %s's BTF: %v", k.Expect.DropFunction, k.Name, err)
	}
	id, err := spec.TypeID(fn)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, l := range strings.Split(strings.TrimSpace(kallsyms), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		key, err := strconv.ParseUint(strings.TrimPrefix(f[2], "bpf_trampoline_"), 10, 64)
		if err != nil {
			continue
		}
		keys = append(keys, f[2])
		// include/linux/bpf_verifier.h bpf_trampoline_compute_key: a
		// kernel function's key is btf_obj_id << 32 | 0x80000000 | btf_id;
		// vmlinux's BTF is the first BTF object, id 1.
		if key>>32 == 1 && key&0x80000000 != 0 && key&0x7fffffff == uint64(id) {
			t.Logf("fentry trampoline %s is on %s (BTF id %d)", f[2], k.Expect.DropFunction, id)
			return
		}
	}
	t.Errorf("no bpf trampoline on %s (BTF id %d) while the fentry counter ran; trampolines: %q", k.Expect.DropFunction, id, keys)
}
