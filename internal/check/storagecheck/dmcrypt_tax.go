package storagecheck

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/cryptotax"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// dmcrypt.tax: the expected encryption tax (internal/model/cryptotax)
// applied to the since-boot counters of the host. The await of the topmost
// dm-crypt device against the await of the device beneath the lowest is
// what the encryption layers added to each I/O; the cipher measured on this
// CPU says what encrypting one I/O of that size costs. Added latency many
// times the cipher's is time spent waiting, not encrypting: dm-crypt's
// workqueues queueing I/O (Cloudflare, "Speeding up Linux disk
// encryption"), or a second encryption layer. The search incident was read
// the same way off iostat, dm-0's await against the disk's beneath, as
// issue 11 quotes it (the incident's write-up, refDoubleEncryption, names
// the double encryption but prints no iostat). Measured figures stay in the
// evidence: the summary says what they mean.
func init() {
	check.Register(check.Check{
		ID:       "dmcrypt.tax",
		Title:    "I/O through dm-crypt waits far longer than the cipher needs",
		Severity: check.Warning,
		Run:      runTax,
	})
}

const (
	// taxMinIOs is the I/Os each device must have completed since boot.
	// Below it a few slow I/Os at boot (a journal replay, a fsck) can make
	// the mean.
	taxMinIOs = 1000
	// taxMinAdded is the smallest added await per I/O that fires. The
	// counters are milliseconds summed over I/Os, so over taxMinIOs the mean
	// is resolved to 1 µs; 20 µs is 20 times that, and still below the
	// smallest overhead the check must catch: the PostgreSQL ramdisk's
	// 4 KiB I/O at 171k IOPS plain and 26.6k through dm-crypt is +32 µs
	// per I/O at one I/O in flight (1/26.6k − 1/171k s;
	// https://blog.gonchik.com/2021/03/yet-another-compliance-request-can.html).
	taxMinAdded = 20 * time.Microsecond
)

func runTax(in *check.Input) []check.Finding {
	if in.Storage == nil || in.Snapshot == nil || in.Snapshot.Storage == nil {
		return nil // storage.stacked-encryption already says there is no storage model
	}
	devs := map[string]*snapshot.BlockDevice{}
	for i := range in.Snapshot.Storage.BlockDevices {
		d := &in.Snapshot.Storage.BlockDevices[i]
		devs[d.Name] = d
	}
	var out []check.Finding
	seen := map[string]bool{}
	for _, p := range in.Storage.Paths {
		t, ok := taxSpanOf(p)
		if !ok || seen[t.top.Name] {
			continue
		}
		seen[t.top.Name] = true
		out = append(out, t.judge(in, devs))
	}
	return out
}

// taxSpan is the stretch of a path the tax is judged on: the topmost
// dm-crypt layer down to the device beneath the lowest one.
type taxSpan struct {
	path   storagemodel.Path
	crypts []storagemodel.Layer // dm-crypt layers, top first
	top    storagemodel.Layer
	bottom *storagemodel.Layer // nil when there is not exactly one device beneath
	// beneath says why bottom is nil.
	beneath string
}

func taxSpanOf(p storagemodel.Path) (taxSpan, bool) {
	cs, ok := p.CryptSpan()
	if !ok {
		return taxSpan{}, false
	}
	return taxSpan{path: p, crypts: cs.Crypts, top: cs.Top(), bottom: cs.Beneath, beneath: cs.NoBeneath}, true
}

func (t taxSpan) subject() string { return "/dev/mapper/" + t.top.Name }

func (t taxSpan) unknown(why string) check.Finding {
	return check.Finding{Status: check.Unknown, Severity: check.Info, Subject: t.subject(),
		Summary: "encryption tax not evaluated: " + why}
}

// ioFigures are the since-boot means of one device's stat.
type ioFigures struct {
	ios        uint64
	await      time.Duration
	bytesPerIO float64
	queueDepth float64 // time_in_queue / io_ticks: mean I/Os in flight while busy
}

func figuresOf(st *snapshot.BlockStat) ioFigures {
	f := ioFigures{ios: st.ReadIOs + st.WriteIOs, queueDepth: 1}
	if f.ios == 0 {
		return f
	}
	ticks := float64(st.ReadTicksMS + st.WriteTicksMS)
	f.await = time.Duration(math.Round(ticks / float64(f.ios) * 1e6))
	f.bytesPerIO = float64(st.ReadSectors+st.WriteSectors) * 512 / float64(f.ios)
	if st.IOTicksMS > 0 {
		f.queueDepth = float64(st.TimeInQueueMS) / float64(st.IOTicksMS)
	}
	return f
}

func (t taxSpan) judge(in *check.Input, devs map[string]*snapshot.BlockDevice) check.Finding {
	if t.bottom == nil {
		return t.unknown(t.beneath)
	}
	for _, c := range t.crypts {
		if c.Crypt == nil {
			return t.unknown(fmt.Sprintf("the table of dm-crypt %s was not read, so its cipher is unknown", c.Name))
		}
		if !c.Crypt.IsAES() {
			return t.unknown(fmt.Sprintf("dm-crypt %s uses %s; the cipher figure is for AES-XTS", c.Name, c.Crypt.CipherSpec))
		}
	}
	topDev, botDev := devs[t.top.Device], devs[t.bottom.Device]
	for _, d := range []struct {
		name string
		dev  *snapshot.BlockDevice
	}{{t.top.Device, topDev}, {t.bottom.Device, botDev}} {
		if d.dev == nil || d.dev.Stat == nil {
			return t.unknown(fmt.Sprintf("the snapshot has no I/O counters for %s (/sys/class/block/%s/stat: "+
				"collected by an older slowpath, or unreadable: see the manifest)", d.name, d.name))
		}
	}
	host := in.Snapshot.Host
	if host == nil || host.Cipher == nil {
		return t.unknown(noCipherReason(in.Snapshot))
	}
	top, bot := figuresOf(topDev.Stat), figuresOf(botDev.Stat)
	for _, d := range []struct {
		name string
		f    ioFigures
	}{{t.top.Device, top}, {t.bottom.Device, bot}} {
		if d.f.ios == 0 {
			return t.unknown(fmt.Sprintf("%s counts no I/O since boot (brd and some other drivers do no I/O accounting), "+
				"so its await is unknown", d.name))
		}
	}
	if top.ios < taxMinIOs || bot.ios < taxMinIOs {
		return t.unknown(fmt.Sprintf("too few I/Os since boot to judge (%s %d, %s %d; at least %d each)",
			t.top.Device, top.ios, t.bottom.Device, bot.ios, taxMinIOs))
	}
	if top.await <= bot.await {
		return check.Finding{Status: check.Pass, Subject: t.subject(), Summary: fmt.Sprintf(
			"since boot: no added await (%s %v, %s %v)", t.top.Device, roundDur(top.await), t.bottom.Device, roundDur(bot.await))}
	}
	limit := cryptotax.Limit{BytesPerSecPerCore: host.Cipher.BytesPerSecPerCore, Source: host.Cipher.What}
	tax, err := cryptotax.AssessLayered(limit, cryptotax.Layered{
		Layers: len(t.crypts), BytesPerIO: top.bytesPerIO,
		TopAwait: top.await, BottomAwait: bot.await, QueueDepth: top.queueDepth, Cores: host.NumCPU,
	})
	if err != nil {
		return t.unknown(err.Error())
	}
	added := top.await - bot.await
	if tax.Verdict != cryptotax.VerdictFarAbove || added < taxMinAdded {
		s := "since boot: " + tax.Line()
		if tax.Verdict == cryptotax.VerdictFarAbove {
			s += fmt.Sprintf(", but %v added per I/O is below the %v this check needs", added, taxMinAdded)
		}
		return check.Finding{Status: check.Pass, Subject: t.subject(), Summary: s}
	}
	return t.finding(in, tax, top, bot, host)
}

// noCipherReason says why the snapshot has no cipher figure, from the
// manifest when the collector said.
func noCipherReason(s *snapshot.Snapshot) string {
	for _, e := range s.Manifest.Errors {
		if e.Collector == "host.cipher" {
			return "no cipher figure in the snapshot: " + e.Message
		}
	}
	return "no cipher figure in the snapshot (it is measured live on the host itself, by slowpath doctor or collect; " +
		"older snapshots and other roots have none)"
}

func (t taxSpan) finding(in *check.Input, tax cryptotax.Tax, top, bot ioFigures, host *snapshot.Host) check.Finding {
	c := host.Cipher
	src := "host.cipher (" + c.Method
	if c.Driver != "" {
		src += ", " + c.Driver
	}
	src += ")"
	qd := fmt.Sprintf("%.1f", top.queueDepth)
	ev := []check.Evidence{
		{Source: "/sys/class/block/" + t.top.Device + "/stat", Key: "await since boot",
			Observed: fmt.Sprintf("%v over %d I/Os, %s per I/O, %s in flight while busy", roundDur(top.await), top.ios, storagemodel.FormatBytes(uint64(top.bytesPerIO)), qd)},
		{Source: "/sys/class/block/" + t.bottom.Device + "/stat", Key: "await since boot",
			Observed: fmt.Sprintf("%v over %d I/Os", roundDur(bot.await), bot.ios)},
		{Source: src, Key: "AES-XTS on one core", Observed: fmt.Sprintf("%.2f GB/s: %s", c.BytesPerSecPerCore/1e9, c.What)},
		{Source: "expected encryption tax", Key: "added await per I/O",
			Observed: fmt.Sprintf("+%v, %.0fx the cipher's time", roundDur(tax.ObservedPerIO), tax.Ratio),
			Expected: fmt.Sprintf("<= %.0fx the cipher's %v (%s per I/O x %d layer(s) / one core's AES-XTS x max(1, %s in flight / %d cores))",
				cryptotax.FarAbove, roundDur(tax.ExpectedPerIO), storagemodel.FormatBytes(uint64(top.bytesPerIO)), len(t.crypts), qd, max(host.NumCPU, 1))},
	}
	via := t.top.Name
	if len(t.crypts) > 1 {
		via = fmt.Sprintf("%d dm-crypt layers (%s down to %s)", len(t.crypts), t.top.Name, t.crypts[len(t.crypts)-1].Name)
	}
	return check.Finding{
		Status:   check.Fail,
		Severity: check.Warning,
		Subject:  t.subject(),
		Summary: fmt.Sprintf("Since boot, I/O through %s has waited far longer at %s than at %s beneath; "+
			"the difference is %s. Evidence: both awaits, the cipher measured on this CPU and their ratio. "+
			"The figures are since-boot means; iostat -x %s %s 5 shows whether it holds now.",
			via, t.top.Device, t.bottom.Device, tax.Verdict, t.top.Device, t.bottom.Device),
		Evidence:    ev,
		Remediation: t.remediation(in),
		References:  []string{refWorkqueue, refCloudflare, refDoubleEncryption, refIOStats},
	}
}

// roundDur keeps about three significant figures.
func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= time.Microsecond:
		return d.Round(100 * time.Nanosecond)
	}
	return d
}

// remediation: the workqueue bypass where a layer lacks it, and the hunt for
// a second encryption layer.
func (t taxSpan) remediation(in *check.Input) string {
	var b strings.Builder
	rel := kernelRelease(in)
	for _, c := range t.crypts {
		if c.Crypt.NoReadWorkqueue && c.Crypt.NoWriteWorkqueue {
			continue
		}
		if ok, known := kernelAtLeast(rel, 5, 9); known && !ok {
			fmt.Fprintf(&b, "dm-crypt %s queues every I/O to kcryptd workqueues, and kernel %s\n"+
				"predates their bypass (5.9): see dmcrypt.same-cpu-crypt, or move to a\n"+
				"5.9+ kernel and set no_read_workqueue/no_write_workqueue.\n", c.Name, rel)
			continue
		}
		fmt.Fprintf(&b, "dm-crypt %s queues every I/O to kcryptd workqueues. Bypass them\n"+
			"(the dmcrypt.workqueue entry of `slowpath fix` does this):\n", c.Name)
		b.WriteString(workqueueRemediation(c) + "\n")
	}
	if b.Len() == 0 {
		b.WriteString("The workqueues are already bypassed, so the wait is elsewhere.\n")
	}
	if n := t.path.EncryptionLayers; n >= 2 {
		fmt.Fprintf(&b, "%s has %d encryption layers, each encrypting every block again:\n"+
			"storage.stacked-encryption says which one to drop.", t.path.Subject(), n)
	} else {
		fmt.Fprintf(&b, "Check for a second encryption layer slowpath cannot see: another\n"+
			"dm-crypt or fscrypt (lsblk -s /dev/mapper/%s), or the platform\n"+
			"encrypting the disk again (cloud encryption at host).", t.top.Name)
	}
	return b.String()
}
