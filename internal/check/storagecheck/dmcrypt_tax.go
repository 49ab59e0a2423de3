package storagecheck

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/cryptotax"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/quote"
	"github.com/slowpath/slowpath/internal/safetext"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/units"
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

// The thresholds are cryptotax's (MinIOs, MinAdded, FarAbove): the agent's
// alert rules use the same ones.
const (
	taxMinIOs   = cryptotax.MinIOs
	taxMinAdded = cryptotax.MinAdded
)

func runTax(in *check.Input) []check.Finding {
	if in.Storage == nil || in.Snapshot == nil || in.Snapshot.Storage == nil {
		return nil // storage.stacked-encryption already says there is no storage model
	}
	devs := devicesByName(in.Snapshot.Storage)
	var out []check.Finding
	seen := map[string]bool{}
	for _, p := range in.Storage.Paths {
		t, ok := taxSpanOf(p)
		if !ok || seen[t.top.Name] {
			continue
		}
		seen[t.top.Name] = true
		out = append(out, t.withEngine(in, t.judge(in, devs, countersOf(in.Snapshot.Storage))))
	}
	return out
}

// counters is what the device counters judged cover: since boot in a saved
// snapshot, the last scrape interval in the agent's (Windowed).
type counters struct {
	window bool
	first  bool   // the agent's first scrape: no interval yet
	phrase string // "since boot", "over the last 15s"
}

func countersOf(st *snapshot.Storage) counters {
	switch {
	case st.Windowed && st.StatWindowMS > 0:
		return counters{window: true, phrase: fmt.Sprintf("over the last %v", time.Duration(st.StatWindowMS)*time.Millisecond)}
	case st.Windowed:
		return counters{window: true, first: true, phrase: "over a scrape interval"}
	}
	return counters{phrase: "since boot"}
}

func (c counters) of(d *snapshot.BlockDevice) *snapshot.BlockStat {
	if c.window {
		return d.StatWindow
	}
	return d.Stat
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

func (t taxSpan) judge(in *check.Input, devs map[string]*snapshot.BlockDevice, c counters) check.Finding {
	if t.bottom == nil {
		return t.unknown(t.beneath)
	}
	for _, c := range t.crypts {
		if ic := c.InferredCrypt; ic != nil {
			if ic.AssumedCipher == "" {
				return t.unknown(fmt.Sprintf("%s, and a %s mapping has no default cipher (TrueCrypt and VeraCrypt volumes may use "+
					"Serpent or Twofish), so the cipher figure (AES-XTS) may not apply", ic.Label(c.DMUUID), ic.Type))
			}
			continue // assumed AES, and said so in the finding
		}
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
		if c.first {
			return t.unknown("no interval yet: this is the agent's first reading of the I/O counters; " +
				"the next scrape judges the interval since this one")
		}
		if d.dev != nil && c.window && d.dev.StatWindow == nil {
			return t.unknown(fmt.Sprintf("no I/O counters of %s %s (/sys/class/block/%s/stat unreadable, or reset: "+
				"see slowpath_scrape_collector_errors)", d.name, c.phrase, d.name))
		}
		if d.dev == nil || c.of(d.dev) == nil {
			return t.unknown(fmt.Sprintf("the snapshot has no I/O counters for %s (/sys/class/block/%s/stat: "+
				"collected by an older slowpath, or unreadable: see the manifest)", d.name, d.name))
		}
	}
	host := in.Snapshot.Host
	if host == nil || host.Cipher == nil {
		return t.unknown(noCipherReason(in.Snapshot))
	}
	top, bot := figuresOf(c.of(topDev)), figuresOf(c.of(botDev))
	for _, d := range []struct {
		name string
		f    ioFigures
	}{{t.top.Device, top}, {t.bottom.Device, bot}} {
		if d.f.ios == 0 {
			if c.window {
				return t.unknown(fmt.Sprintf("%s counts no I/O %s (idle, or a driver without I/O accounting such as brd), "+
					"so its await is unknown", d.name, c.phrase))
			}
			return t.unknown(fmt.Sprintf("%s counts no I/O since boot (brd and some other drivers do no I/O accounting), "+
				"so its await is unknown", d.name))
		}
	}
	if top.ios < taxMinIOs || bot.ios < taxMinIOs {
		return t.unknown(fmt.Sprintf("too few I/Os %s to judge (%s %d, %s %d; at least %d each)",
			c.phrase, t.top.Device, top.ios, t.bottom.Device, bot.ios, taxMinIOs))
	}
	if top.await <= bot.await {
		return t.inferred(check.Finding{Status: check.Pass, Subject: t.subject(), Summary: fmt.Sprintf(
			"%s: no added await (%s %v, %s %v)", c.phrase, t.top.Device, units.RoundDuration(top.await), t.bottom.Device, units.RoundDuration(bot.await))})
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
		s := c.phrase + ": " + tax.Line()
		if tax.Verdict == cryptotax.VerdictFarAbove {
			s += fmt.Sprintf(", but %v added per I/O is below the %v this check needs", added, taxMinAdded)
		}
		return t.inferred(check.Finding{Status: check.Pass, Subject: t.subject(), Summary: s})
	}
	return t.inferred(t.finding(in, tax, top, bot, host, c))
}

// inferred labels a judged finding whose span has layers taken as dm-crypt
// from their uuid, their tables unread: the summary says the cipher was
// assumed, and the evidence names each layer, its uuid, why its table was
// not read and the cipher assumed.
func (t taxSpan) inferred(f check.Finding) check.Finding {
	var ciphers []string
	for _, c := range t.crypts {
		ic := c.InferredCrypt
		if ic == nil {
			continue
		}
		ciphers = appendUnique(ciphers, ic.AssumedCipher)
		f.Evidence = append(f.Evidence, check.Evidence{
			Source:   "/sys/class/block/" + c.Device + "/dm/uuid",
			Key:      "dm-crypt " + c.Name,
			Observed: ic.Label(c.DMUUID),
			Expected: "cipher " + ic.AssumedCipher + " assumed: " + ic.AssumedFrom + "; flags unknown",
		})
	}
	if len(ciphers) > 0 {
		f.Summary = strings.TrimSuffix(f.Summary, ".") + fmt.Sprintf(". dm-crypt inferred from the device-mapper uuid, "+
			"its table not read: cipher assumed %s, flags unknown.", strings.Join(ciphers, ", "))
	}
	return f
}

// coda says how current the figures are.
func (c counters) coda(t taxSpan) string {
	if c.window {
		return "The figures are means " + c.phrase + " (the agent's scrape interval)."
	}
	return fmt.Sprintf("The figures are since-boot means; iostat -x %s %s 5 shows whether it holds now.", t.top.Device, t.bottom.Device)
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

func (t taxSpan) finding(in *check.Input, tax cryptotax.Tax, top, bot ioFigures, host *snapshot.Host, cn counters) check.Finding {
	c := host.Cipher
	src := "host.cipher (" + c.Method
	if c.Driver != "" {
		src += ", " + c.Driver
	}
	src += ")"
	qd := fmt.Sprintf("%.1f", top.queueDepth)
	ev := []check.Evidence{
		{Source: "/sys/class/block/" + t.top.Device + "/stat", Key: "await " + cn.phrase,
			Observed: fmt.Sprintf("%v over %d I/Os, %s per I/O, %s in flight while busy", units.RoundDuration(top.await), top.ios, units.Size(uint64(top.bytesPerIO)), qd)},
		{Source: "/sys/class/block/" + t.bottom.Device + "/stat", Key: "await " + cn.phrase,
			Observed: fmt.Sprintf("%v over %d I/Os", units.RoundDuration(bot.await), bot.ios)},
		{Source: src, Key: "AES-XTS on one core", Observed: fmt.Sprintf("%.2f GB/s: %s", c.BytesPerSecPerCore/1e9, c.What)},
		{Source: "expected encryption tax", Key: "added await per I/O",
			Observed: fmt.Sprintf("+%v, %.0fx the cipher's time", units.RoundDuration(tax.ObservedPerIO), tax.Ratio),
			Expected: fmt.Sprintf("<= %.0fx the cipher's %v (%s per I/O x %d layer(s) / one core's AES-XTS x max(1, %s in flight / %d cores))",
				cryptotax.FarAbove, units.RoundDuration(tax.ExpectedPerIO), units.Size(uint64(top.bytesPerIO)), len(t.crypts), qd, max(host.NumCPU, 1))},
	}
	via := t.top.Name
	if len(t.crypts) > 1 {
		via = fmt.Sprintf("%d dm-crypt layers (%s down to %s)", len(t.crypts), t.top.Name, t.crypts[len(t.crypts)-1].Name)
	}
	return check.Finding{
		Status:   check.Fail,
		Severity: check.Warning,
		Subject:  t.subject(),
		Summary: fmt.Sprintf("%s, I/O through %s has waited far longer at %s than at %s beneath; "+
			"the difference is %s. Evidence: both awaits, the cipher measured on this CPU and their ratio. %s",
			strings.ToUpper(cn.phrase[:1])+cn.phrase[1:], via, t.top.Device, t.bottom.Device, tax.Verdict, cn.coda(t)),
		Evidence:    ev,
		Remediation: t.remediation(in),
		References:  []string{refWorkqueue, refCloudflare, refDoubleEncryption, refIOStats},
		Cost:        waitCost(t, tax, top, bot),
	}
}

// remediation: the workqueue bypass where a layer lacks it, and the hunt for
// a second encryption layer.
func (t taxSpan) remediation(in *check.Input) string {
	var b strings.Builder
	rel := kernelRelease(in)
	for _, c := range t.crypts {
		if c.InferredCrypt != nil {
			fmt.Fprintf(&b, "The table of dm-crypt %s was not read (see the evidence), so whether\n"+
				"it bypasses the kcryptd workqueues is unknown: run `slowpath doctor` on the\n"+
				"node as root (dmcrypt.workqueue), or `dmsetup table %s` and look for\n"+
				"no_read_workqueue no_write_workqueue.\n", c.Name, quote.Shell(c.Name))
			continue
		}
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
		var missing []string
		if !c.Crypt.NoReadWorkqueue {
			missing = append(missing, "no_read_workqueue")
		}
		if !c.Crypt.NoWriteWorkqueue {
			missing = append(missing, "no_write_workqueue")
		}
		rem, _ := cryptRemedy(in, c, missing, workqueueRemediation(c, cryptFix(c, missing...).Crypt))
		b.WriteString(rem + "\n")
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

// waitCost is the tax as a cost: the part of each I/O's wait at the top of
// the span that neither the device beneath nor the cipher explains, the
// waiting a bypass of the workqueues (or dropping a layer) can win back.
func waitCost(t taxSpan, tax cryptotax.Tax, top, bot ioFigures) *check.Cost {
	waiting := top.await - bot.await - tax.ExpectedPerIO
	if waiting <= 0 || top.await <= 0 {
		return nil
	}
	share := float64(waiting) / float64(top.await)
	return &check.Cost{Share: &share, Figure: fmt.Sprintf("%v of each I/O's %v at %s is waiting beyond the %v at %s beneath and the cipher's %v",
		units.RoundDuration(waiting), units.RoundDuration(top.await), t.top.Device, units.RoundDuration(bot.await), t.bottom.Device, units.RoundDuration(tax.ExpectedPerIO))}
}

// taxCost is the cost dmcrypt.tax measures on the span that holds the
// dm-crypt mapping name, for the checks whose fix works on that mapping;
// nil when the tax does not fail there. Only that span is judged.
func taxCost(in *check.Input, name string) *check.Cost {
	if in.Storage == nil || in.Snapshot == nil || in.Snapshot.Storage == nil {
		return nil
	}
	for _, p := range in.Storage.Paths {
		t, ok := taxSpanOf(p)
		if !ok || !slices.ContainsFunc(t.crypts, func(c storagemodel.Layer) bool { return c.Name == name }) {
			continue
		}
		f := t.judge(in, devicesByName(in.Snapshot.Storage), countersOf(in.Snapshot.Storage))
		if f.Status != check.Fail {
			return nil
		}
		return f.Cost
	}
	return nil
}

// devicesByName indexes the snapshot's block devices by kernel name.
func devicesByName(st *snapshot.Storage) map[string]*snapshot.BlockDevice {
	devs := map[string]*snapshot.BlockDevice{}
	for i := range st.BlockDevices {
		d := &st.BlockDevices[i]
		devs[d.Name] = d
	}
	return devs
}

// withEngine adds to a judged finding the engine layer of its path, when
// it has one: a database encrypting its own pages does so in its own
// threads before the block layer sees them, so its cipher is not in the
// awaits judged here, its CPU is the service's and not kcryptd's, and no
// dm-crypt flag moves or removes it. Its cost is the cipher figure's per
// GiB, the same as a dm-crypt layer's (cryptotax.SplitCPU).
func (t taxSpan) withEngine(in *check.Input, f check.Finding) check.Finding {
	engines := serviceLayers(t.path.EncryptionChain())
	if len(engines) == 0 {
		return f
	}
	l := engines[0]
	var procs []string
	for _, e := range l.Engines {
		procs = append(procs, fmt.Sprintf("%s, pid %d", e.Comm, e.PID))
	}
	obs := fmt.Sprintf("encrypts in the service's own threads (%s) before the block layer sees the data: "+
		"not in these awaits, and its CPU is the service's, not kcryptd's", strings.Join(procs, "; "))
	if h := in.Snapshot.Host; h != nil && h.Cipher != nil {
		split, err := cryptotax.SplitCPU(cryptotax.Limit{BytesPerSecPerCore: h.Cipher.BytesPerSecPerCore}, len(t.crypts), len(engines))
		if err == nil {
			var parts []string
			for _, s := range split {
				who := "the service"
				if s.PaidBy == cryptotax.PaidByKernel {
					who = "the kernel (dm-crypt)"
				}
				parts = append(parts, fmt.Sprintf("%s %.2f CPU-s per GiB moved", who, s.CPUPerGiB))
			}
			obs += "; at this CPU's cipher figure: " + strings.Join(parts, ", ")
		}
	}
	f.Evidence = append(f.Evidence, check.Evidence{Source: "storage model", Key: "engine layer " + l.Name, Observed: safetext.Clean(obs),
		Expected: "no dm-crypt flag (no_read_workqueue, no_write_workqueue, same_cpu_crypt, submit_from_crypt_cpus) removes it"})
	if f.Status == check.Fail {
		f.Remediation += fmt.Sprintf("\n%s also encrypts this path, in the service's own threads: that\n"+
			"CPU is the service's, not kcryptd's, and the dm-crypt flags above cannot\n"+
			"remove it; only turning the engine's encryption off does.", safetext.Clean(l.Name))
	}
	return f
}
