package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/collect/cipherlimit"
	"github.com/slowpath/slowpath/internal/collect/host"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/model/cryptotax"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/units"
)

// notComputed is the verdict of a tax that could not be computed.
const notComputed = "not computed"

// cipherDuration is how long the cipher measurement after a run takes: one
// core only (the tax needs no more), short next to any run.
const cipherDuration = 200 * time.Millisecond

// findCrypt returns the dm-crypt span of the target's path (the model's
// CryptSpan), or nil when it has no dm-crypt layer.
func findCrypt(p *storagemodel.Path) *storagemodel.CryptSpan {
	if p == nil {
		return nil
	}
	cs, ok := p.CryptSpan()
	if !ok {
		return nil
	}
	return &cs
}

// cipherSpec is what to measure for the crypt layer: dm-crypt's key size
// (both XTS halves) and encryption sector size, or an error when the layer
// does not use AES-XTS, the only cipher crypto-limit measures.
func cipherSpec(c *storagemodel.Crypt) (keyBits, sectorSize int, err error) {
	keyBits, sectorSize = 512, 512 // cryptsetup's defaults for aes-xts-plain64
	if c == nil {
		return keyBits, sectorSize, nil
	}
	if !c.IsAES() || c.ChainMode != "xts" {
		return 0, 0, fmt.Errorf("the layer's cipher is %s: slowpath measures AES-XTS only", c.CipherSpec)
	}
	if c.KeyBits == 256 || c.KeyBits == 512 {
		keyBits = c.KeyBits
	}
	if c.SectorSize == 4096 {
		sectorSize = 4096
	}
	return keyBits, sectorSize, nil
}

// ReadCipherLimit reads a crypto-limit file (cipherlimit.File), so the
// cipher can be measured once on an idle machine (Env.Cipher); the bool
// says it was measured on an emulated CPU.
func ReadCipherLimit(path string) (*benchresult.Cipher, bool, error) {
	f, err := cipherlimit.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	return f.Cipher("file " + path), f.Emulated, nil
}

// cipherFor returns the cipher's cost for the stack: given (Env.Cipher),
// or measured now, after the workload (measuring during it would take CPU
// from the run). interrupted skips the measurement: the user asked to stop.
func cipherFor(ctx context.Context, fs hostfs.FS, given *benchresult.Cipher, cs *storagemodel.CryptSpan, interrupted bool) (*benchresult.Cipher, error) {
	// A layer taken as dm-crypt from its uuid (table unread) has no cipher
	// to read: the type's default is assumed and said, or there is none.
	var assumed []string
	for _, l := range cs.Inferred() {
		ic := l.InferredCrypt
		if ic.AssumedCipher == "" {
			return nil, fmt.Errorf("%s, and a %s mapping has no default cipher", ic.Label(l.DMUUID), ic.Type)
		}
		assumed = append(assumed, fmt.Sprintf("%s: %s assumed (%s)", ic.Label(l.DMUUID), ic.AssumedCipher, ic.AssumedFrom))
	}
	c, err := cipherForRead(ctx, fs, given, cs, interrupted)
	if c != nil && len(assumed) > 0 {
		c.Note = strings.TrimPrefix(c.Note+"; "+strings.Join(assumed, "; "), "; ")
	}
	return c, err
}

func cipherForRead(ctx context.Context, fs hostfs.FS, given *benchresult.Cipher, cs *storagemodel.CryptSpan, interrupted bool) (*benchresult.Cipher, error) {
	keyBits, sectorSize, err := cipherSpec(cs.Top().Crypt)
	if err != nil {
		return nil, err
	}
	if given != nil {
		c := *given
		if c.KeyBits != keyBits || c.SectorSize != sectorSize {
			c.Note = fmt.Sprintf("measured with a %d-bit key and %d-byte sectors; %s uses %d and %d", c.KeyBits, c.SectorSize, cs.Top().Device, keyBits, sectorSize)
		}
		return &c, nil
	}
	if interrupted {
		return nil, errors.New("the run was interrupted before the cipher was measured")
	}
	r, err := cipherlimit.Measure(ctx, fs, cipherlimit.Options{KeyBits: keyBits, SectorSize: sectorSize, Duration: cipherDuration, PerCoreOnly: true})
	if err != nil {
		return nil, fmt.Errorf("cipher measurement: %w", err)
	}
	return r.Cipher("measured after the run"), nil
}

// assessTax computes the tax of the run from its own where-time figures:
// the await of the top dm-crypt device against the device beneath the
// lowest, the top device's bytes per I/O and queue depth, and the crypto
// threads' CPU per GiB through the top device. cipherErr is why there is
// no cipher figure. Whatever is missing is said, never filled in.
func assessTax(wt *benchresult.WhereTime, cs *storagemodel.CryptSpan, c *benchresult.Cipher, cipherErr error, cores int, emulated bool) *benchresult.EncryptionTax {
	top, lowest, layers := cs.Top().Device, cs.Lowest().Device, len(cs.Crypts)
	var beneath string
	if cs.Beneath != nil {
		beneath = cs.Beneath.Device
	}
	t := &benchresult.EncryptionTax{Verdict: notComputed, Emulated: emulated, Cipher: c, Layers: layers,
		TopDevice: top, BottomDevice: beneath, Cores: cores}
	defer func() { t.Line = taxLine(t) }()
	if cipherErr != nil || c == nil || !(c.BytesPerSecPerCore > 0) {
		t.NotComputed = "no cipher figure"
		if cipherErr != nil {
			t.NotComputed += ": " + cipherErr.Error()
		}
		return t
	}
	limit := cryptotax.Limit{BytesPerSecPerCore: c.BytesPerSecPerCore, Source: c.What}
	t.ExpectedCPUPerGiB = round3(float64(layers) * (1 << 30) / c.BytesPerSecPerCore)
	find := func(name string) *benchresult.DeviceTime {
		if wt == nil {
			return nil
		}
		for i := range wt.Devices {
			if wt.Devices[i].Device == name {
				return &wt.Devices[i]
			}
		}
		return nil
	}
	topTime := find(top)
	if topTime == nil {
		t.NotComputed = top + " was not sampled"
		return t
	}
	// The CPU form: CPU of the crypto threads per GiB through the top
	// device. With no_read/no_write_workqueue the cipher runs in the
	// submitter or in softirq context instead and is not in these groups.
	var bytes uint64
	for _, s := range topTime.Samples {
		bytes += s.ReadBytes + s.WriteBytes
	}
	for _, g := range wt.Threads {
		if g.Group == benchresult.GroupKcryptd || g.Group == benchresult.GroupDmcryptWrite {
			t.CryptoCPUNS += g.CPUNS
		}
	}
	if bytes > 0 {
		t.CryptBytes = bytes
		v := round3(float64(t.CryptoCPUNS) / 1e9 / float64(bytes) * (1 << 30))
		t.CryptoCPUPerGiB = &v
	}
	t.Load = cryptLoad(topTime, bytes, t.CryptoCPUNS, layers, c.BytesPerSecPerCore, cores)
	if topTime.AwaitNS < 0 {
		t.NotComputed = "no I/O reached " + top + " during the run"
		return t
	}
	if beneath == "" {
		t.NotComputed = "no one device beneath " + lowest + " to compare its await with: " + cs.NoBeneath
		return t
	}
	bottom := find(beneath)
	switch {
	case bottom == nil:
		t.NotComputed = beneath + " was not sampled"
		return t
	case bottom.AwaitNS < 0:
		// brd does no I/O accounting (drivers/block/brd.c never calls
		// bio_start_io_acct): its diskstats stay 0.
		t.NotComputed = fmt.Sprintf("%s beneath %s counted no I/O (a driver without I/O accounting, such as brd), so what the encryption added cannot be told", beneath, lowest)
		return t
	}
	ios := topTime.ReadIOPS + topTime.WriteIOPS
	t.BytesPerIO = round3((topTime.ReadBytesPerSec + topTime.WriteBytesPerSec) / ios)
	t.QueueDepth, t.TopAwaitNS, t.BottomAwaitNS = topTime.QueueDepth, math.Round(topTime.AwaitNS), math.Round(bottom.AwaitNS)
	tax, err := cryptotax.AssessLayered(limit, cryptotax.Layered{Layers: layers, BytesPerIO: t.BytesPerIO,
		TopAwait: time.Duration(t.TopAwaitNS), BottomAwait: time.Duration(t.BottomAwaitNS), QueueDepth: t.QueueDepth, Cores: cores})
	if err != nil {
		t.NotComputed = err.Error()
		return t
	}
	exp, obs, ratio := int64(tax.ExpectedPerIO), int64(tax.ObservedPerIO), round3(tax.Ratio)
	t.ExpectedPerIONS, t.ObservedPerIONS, t.Ratio = &exp, &obs, &ratio
	t.Verdict = tax.Verdict
	return t
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// cryptLoad is how hard the run pushed the crypt layers (benchresult.CryptLoad):
// nil when the run's length or the cores are unknown.
func cryptLoad(top *benchresult.DeviceTime, bytes uint64, cryptoCPUNS int64, layers int, perCore float64, cores int) *benchresult.CryptLoad {
	var wallMS int64
	for _, s := range top.Samples {
		wallMS += s.IntervalMS
	}
	if wallMS <= 0 || cores <= 0 || !(perCore > 0) {
		return nil
	}
	wall := float64(wallMS) / 1e3
	l := &benchresult.CryptLoad{
		BytesPerSec:      math.Round(float64(bytes) / wall),
		CryptoThreadCPUs: round3(float64(cryptoCPUNS) / 1e9 / wall),
		QueueDepth:       round3(top.QueueDepth),
	}
	l.CipherShare = round3(l.BytesPerSec * float64(layers) / (perCore * float64(cores)))
	l.Loaded = l.CipherShare >= benchresult.LoadedShare || l.CryptoThreadCPUs/float64(cores) >= benchresult.LoadedShare
	l.Line = fmt.Sprintf("dm-crypt load: %s/s through %s = %.1f%% of AES-XTS on %d core(s) (%s/s each), crypto threads %.2f CPU, queue depth %.1f",
		units.Size(uint64(l.BytesPerSec)), top.Device, l.CipherShare*100, cores, units.Size(uint64(perCore)), l.CryptoThreadCPUs, l.QueueDepth)
	if l.Loaded {
		l.Line += ": loaded"
	} else {
		l.Line += fmt.Sprintf(": this run did not load dm-crypt (under %.0f%% of the cipher's capacity and of the cores): "+
			"an overhead it shows says nothing about dm-crypt under load; run one that moves data near the cipher's limit, "+
			"e.g. slowpath lab crypt --profile lab:seq-read, or bench fio:FILE with 1 MiB reads at queue depth 16", benchresult.LoadedShare*100)
	}
	return l
}

// taxLine is the summary's line.
func taxLine(t *benchresult.EncryptionTax) string {
	var b strings.Builder
	b.WriteString("encryption tax: ")
	if t.Emulated {
		b.WriteString(host.EmulatedLabel + "; ")
	}
	if t.Verdict == notComputed {
		fmt.Fprintf(&b, "not computed: %s", t.NotComputed)
	} else {
		sign := "+"
		if *t.ObservedPerIONS < 0 {
			sign = ""
		}
		layers := ""
		if t.Layers > 1 {
			layers = fmt.Sprintf(", %d layers", t.Layers)
		}
		fmt.Fprintf(&b, "cipher %v/IO, observed %s%v/IO (%s over %s%s, %.1fx): %s", units.RoundDurationBench(time.Duration(*t.ExpectedPerIONS)), sign, units.RoundDurationBench(time.Duration(*t.ObservedPerIONS)),
			t.TopDevice, t.BottomDevice, layers, *t.Ratio, t.Verdict)
	}
	if t.CryptoCPUPerGiB != nil && t.ExpectedCPUPerGiB > 0 {
		fmt.Fprintf(&b, "; crypto threads %.2f CPU-s/GiB, cipher %.2f (%.1fx)", *t.CryptoCPUPerGiB, t.ExpectedCPUPerGiB, *t.CryptoCPUPerGiB/t.ExpectedCPUPerGiB)
	}
	return b.String()
}
