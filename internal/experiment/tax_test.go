package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/collect/cipherlimit"
	"github.com/slowpath/slowpath/internal/collect/host"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/model/cryptotax"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/testing/golden"
)

// cryptPath is ext4 on dm-crypt dm-0 on sda, or with stacked, dm-crypt
// dm-1 on dm-crypt dm-0 on sda (the double encryption of the search
// incident).
func cryptPath(stacked bool) *storagemodel.Path {
	aes := &storagemodel.Crypt{CipherSpec: "aes-xts-plain64", Cipher: "aes", ChainMode: "xts", IVMode: "plain64", KeyBits: 512, SectorSize: 512}
	p := &storagemodel.Path{MountPoint: "/data", Layers: []storagemodel.Layer{{Kind: storagemodel.LayerFilesystem, FSType: "ext4"}}}
	if stacked {
		p.Layers = append(p.Layers, storagemodel.Layer{Kind: storagemodel.LayerDMCrypt, Device: "dm-1", Encrypted: true, Crypt: aes})
	}
	p.Layers = append(p.Layers,
		storagemodel.Layer{Kind: storagemodel.LayerDMCrypt, Device: "dm-0", Encrypted: true, Crypt: aes},
		storagemodel.Layer{Kind: storagemodel.LayerDisk, Device: "sda"})
	for i := range p.Layers {
		p.Layers[i].Depth = i
	}
	return p
}

// device is one device's whole-run figures over 10 s: iops I/Os per
// second of bytesPerIO each, half reads.
func device(name, layer string, depth int, iops, bytesPerIO, awaitNS, qd float64) benchresult.DeviceTime {
	n := uint64(iops * 10)
	b := uint64(iops * bytesPerIO * 10)
	return benchresult.DeviceTime{Device: name, Layer: layer, Depth: depth, ReadIOPS: iops / 2, WriteIOPS: iops / 2,
		ReadBytesPerSec: iops * bytesPerIO / 2, WriteBytesPerSec: iops * bytesPerIO / 2, AwaitNS: awaitNS, QueueDepth: qd,
		Samples: []benchresult.DeviceSample{{TMS: 10000, IntervalMS: 10000, Reads: n / 2, Writes: n / 2, ReadBytes: b / 2, WriteBytes: b / 2}}}
}

// whereTime is the search incident's iostat (dm-0 18 ms over sda 0.45 ms,
// 128 KiB I/Os, 4 in flight) with kcryptd at 38% of a CPU over 10 s.
func whereTime(topAwait, bottomAwait, qd float64) *benchresult.WhereTime {
	return &benchresult.WhereTime{
		Devices: []benchresult.DeviceTime{
			device("dm-0", "dm-crypt", 1, 200, 128<<10, topAwait, qd),
			device("sda", "disk", 2, 200, 128<<10, bottomAwait, qd/4),
		},
		Threads: []benchresult.ThreadGroup{
			{Group: benchresult.GroupWorkload, CPUNS: 9e9, CPUs: 0.9, Threads: 4, Top: []benchresult.ThreadCPU{{Comm: "fio", CPUNS: 9e9}}},
			{Group: benchresult.GroupKcryptd, CPUNS: 3.8e9, CPUs: 0.38, Threads: 2, Top: []benchresult.ThreadCPU{{Comm: "kworker/u4:2-kcryptd/253:0", CPUNS: 3.8e9}}},
			{Group: benchresult.GroupDmcryptWrite, CPUNS: 0.2e9, CPUs: 0.02, Threads: 1, Top: []benchresult.ThreadCPU{{Comm: "dmcrypt_write/253:0", CPUNS: 0.2e9}}},
		},
	}
}

var gbCipher = &benchresult.Cipher{BytesPerSecPerCore: 1e9, Method: "user-space", What: "test cipher", KeyBits: 512, SectorSize: 512, Source: "measured after the run"}

func TestAssessTax(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stacked   bool
		wt        *benchresult.WhereTime
		cipher    *benchresult.Cipher
		cipherErr error
		verdict   string
		ratio     float64 // when computed
		why       string  // in NotComputed, when not
	}{
		// 262 µs of cipher (128 KiB at 1 GB/s, × 4 in flight / 2 cores)
		// against +17.55 ms: the incident's symptom.
		{name: "far above", wt: whereTime(18e6, 450e3, 4), cipher: gbCipher, verdict: cryptotax.VerdictFarAbove, ratio: 66.948},
		// +150 µs against 131 µs: what the cipher costs.
		{name: "cipher level", wt: whereTime(600e3, 450e3, 0.5), cipher: gbCipher, verdict: cryptotax.VerdictCipher, ratio: 1.144},
		{name: "no overhead", wt: whereTime(450e3, 450e3, 0.5), cipher: gbCipher, verdict: cryptotax.VerdictNoOverhead, ratio: 0},
		{name: "bottom counts no I/O", wt: whereTime(18e6, -1, 4), cipher: gbCipher, verdict: notComputed, why: "sda beneath dm-0 counted no I/O"},
		{name: "no I/O at the top", wt: whereTime(-1, -1, 0), cipher: gbCipher, verdict: notComputed, why: "no I/O reached dm-0"},
		{name: "no cipher", wt: whereTime(18e6, 450e3, 4), cipherErr: errors.New("the run was interrupted before the cipher was measured"), verdict: notComputed, why: "no cipher figure: the run was interrupted"},
		{name: "top not sampled", stacked: true, wt: whereTime(18e6, 450e3, 4), cipher: gbCipher, verdict: notComputed, why: "dm-1 was not sampled"},
		{name: "no where time", wt: nil, cipher: gbCipher, verdict: notComputed, why: "dm-0 was not sampled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := findCrypt(cryptPath(tc.stacked))
			got := assessTax(tc.wt, cs, tc.cipher, tc.cipherErr, 2, false)
			if got.Verdict != tc.verdict {
				t.Fatalf("verdict %q, want %q: %+v", got.Verdict, tc.verdict, got)
			}
			if !strings.HasPrefix(got.Line, "encryption tax: ") || !strings.Contains(got.Line, got.Verdict) && tc.verdict != notComputed {
				t.Errorf("line %q", got.Line)
			}
			if tc.verdict == notComputed {
				if !strings.Contains(got.NotComputed, tc.why) || !strings.Contains(got.Line, "not computed: "+got.NotComputed) {
					t.Errorf("not computed %q, line %q; want %q", got.NotComputed, got.Line, tc.why)
				}
				if got.Ratio != nil || got.ExpectedPerIONS != nil || got.ObservedPerIONS != nil {
					t.Errorf("not computed, yet per-I/O figures: %+v", got)
				}
				return
			}
			if got.Ratio == nil || *got.Ratio != tc.ratio {
				t.Errorf("ratio %v, want %v", got.Ratio, tc.ratio)
			}
			if got.BytesPerIO != 128<<10 || got.TopDevice != "dm-0" || got.BottomDevice != "sda" || got.Layers != 1 {
				t.Errorf("inputs %+v", got)
			}
		})
	}
}

// The CPU form: 4 s of crypto threads for 2000 × 128 KiB = 250 MiB is
// 16.4 CPU-s per GiB against 1.07 for the cipher; it stands even where the
// await beneath is missing.
func TestAssessTaxCPU(t *testing.T) {
	got := assessTax(whereTime(18e6, -1, 4), findCrypt(cryptPath(false)), gbCipher, nil, 2, false)
	if got.CryptoCPUPerGiB == nil || *got.CryptoCPUPerGiB != 16.384 || got.ExpectedCPUPerGiB != 1.074 || got.CryptoCPUNS != 4e9 || got.CryptBytes != 2000*128<<10 {
		t.Errorf("CPU form %+v (crypto %v)", got, got.CryptoCPUPerGiB)
	}
	if !strings.HasSuffix(got.Line, "; crypto threads 16.38 CPU-s/GiB, cipher 1.07 (15.3x)") {
		t.Errorf("line %q", got.Line)
	}
	// Two layers: the cipher needs twice the CPU.
	wt := whereTime(30e3, 10e3, 1)
	wt.Devices = append([]benchresult.DeviceTime{device("dm-1", "dm-crypt", 1, 200, 4096, 30e3, 1)}, wt.Devices...)
	got = assessTax(wt, findCrypt(cryptPath(true)), gbCipher, nil, 2, false)
	if got.Layers != 2 || got.ExpectedCPUPerGiB != 2.147 || got.Verdict != cryptotax.VerdictAbove {
		t.Errorf("stacked %+v", got)
	}
}

// The summary's line, exactly, in each form.
func TestTaxLine(t *testing.T) {
	cs := findCrypt(cryptPath(false))
	for _, tc := range []struct {
		got  *benchresult.EncryptionTax
		want string
	}{
		{assessTax(whereTime(18e6, 450e3, 4), cs, gbCipher, nil, 2, false),
			"encryption tax: cipher 262µs/IO, observed +17.55ms/IO (dm-0 over sda, 66.9x): " + cryptotax.VerdictFarAbove + "; crypto threads 16.38 CPU-s/GiB, cipher 1.07 (15.3x)"},
		{assessTax(whereTime(440e3, 450e3, 0.5), cs, gbCipher, nil, 2, false),
			"encryption tax: cipher 131µs/IO, observed -10µs/IO (dm-0 over sda, -0.1x): no measurable overhead; crypto threads 16.38 CPU-s/GiB, cipher 1.07 (15.3x)"},
		{assessTax(whereTime(18e6, -1, 4), cs, gbCipher, nil, 2, true),
			"encryption tax: " + host.EmulatedLabel + "; not computed: sda beneath dm-0 counted no I/O (a driver without I/O accounting, such as brd), so what the encryption added cannot be told; crypto threads 16.38 CPU-s/GiB, cipher 1.07 (15.3x)"},
		{assessTax(whereTime(18e6, 450e3, 4), cs, nil, errors.New("cipher measurement: boom"), 2, false),
			"encryption tax: not computed: no cipher figure: cipher measurement: boom"},
	} {
		if tc.got.Line != tc.want {
			t.Errorf("line\n%s\nwant\n%s", tc.got.Line, tc.want)
		}
	}
}

func TestFindCrypt(t *testing.T) {
	beneath := func(cs *storagemodel.CryptSpan) string {
		if cs.Beneath == nil {
			return ""
		}
		return cs.Beneath.Device
	}
	if cs := findCrypt(cryptPath(false)); cs == nil || cs.Top().Device != "dm-0" || cs.Lowest().Device != "dm-0" || beneath(cs) != "sda" || len(cs.Crypts) != 1 {
		t.Errorf("one layer: %+v", cs)
	}
	if cs := findCrypt(cryptPath(true)); cs == nil || cs.Top().Device != "dm-1" || cs.Lowest().Device != "dm-0" || beneath(cs) != "sda" || len(cs.Crypts) != 2 {
		t.Errorf("stacked: %+v", cs)
	}
	plain := &storagemodel.Path{Layers: []storagemodel.Layer{{Kind: storagemodel.LayerFilesystem}, {Kind: storagemodel.LayerDisk, Device: "sda", Depth: 1}}}
	if cs := findCrypt(plain); cs != nil {
		t.Errorf("plain path: %+v", cs)
	}
	if findCrypt(nil) != nil {
		t.Error("nil path")
	}
	// A cloud disk that encrypts on the host costs this kernel nothing.
	cloud := &storagemodel.Path{Layers: []storagemodel.Layer{{Kind: storagemodel.LayerFilesystem}, {Kind: storagemodel.LayerCloud, Device: "nvme0n1", Encrypted: true, EncryptedBy: "hypervisor-host", Depth: 1}}}
	if cs := findCrypt(cloud); cs != nil {
		t.Errorf("cloud path: %+v", cs)
	}
	// dm-crypt over md RAID 1 over two disks: beneath is the md device.
	raid := &storagemodel.Path{Layers: []storagemodel.Layer{{Kind: storagemodel.LayerFilesystem}, {Kind: storagemodel.LayerDMCrypt, Device: "dm-0", Encrypted: true, Depth: 1},
		{Kind: "md", Device: "md0", Depth: 2}, {Kind: storagemodel.LayerDisk, Device: "sda", Depth: 3}, {Kind: storagemodel.LayerDisk, Device: "sdb", Depth: 3}}}
	if cs := findCrypt(raid); cs == nil || beneath(cs) != "md0" {
		t.Errorf("raid: %+v", cs)
	}
}

func TestCipherSpec(t *testing.T) {
	for _, tc := range []struct {
		c           *storagemodel.Crypt
		key, sector int
		err         string
	}{
		{nil, 512, 512, ""},
		{&storagemodel.Crypt{CipherSpec: "aes-xts-plain64", Cipher: "aes", ChainMode: "xts", KeyBits: 256, SectorSize: 4096}, 256, 4096, ""},
		{&storagemodel.Crypt{CipherSpec: "capi:xts(aes)-plain64", Cipher: "aes", ChainMode: "xts", KeyBits: 512, SectorSize: 512}, 512, 512, ""},
		{&storagemodel.Crypt{CipherSpec: "serpent-xts-plain64", Cipher: "serpent", ChainMode: "xts", KeyBits: 512}, 0, 0, "serpent-xts-plain64: slowpath measures AES-XTS only"},
		{&storagemodel.Crypt{CipherSpec: "aes-cbc-essiv:sha256", Cipher: "aes", ChainMode: "cbc", KeyBits: 256}, 0, 0, "AES-XTS only"},
	} {
		key, sector, err := cipherSpec(tc.c)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: err %v, want %q", tc.c, err, tc.err)
			}
			continue
		}
		if err != nil || key != tc.key || sector != tc.sector {
			t.Errorf("%+v: %d %d %v", tc.c, key, sector, err)
		}
	}
}

// ReadCipherLimit reads the JSON lab crypto-limit --format json prints
// (a real measurement, brief, embedded as that command embeds it); a
// mismatch with the layer is noted, a file that is not such JSON is
// refused. benchcmd's TestCipherLimitFile reads the command's own output.
func TestReadCipherLimit(t *testing.T) {
	r, err := cipherlimit.Measure(context.Background(), hostfs.Default(), cipherlimit.Options{SectorSize: 4096, Duration: 50 * time.Millisecond, PerCoreOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(struct {
		*cipherlimit.Result
		Emulated bool `json:"emulated_cpu"`
	}{r, true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "limit.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c, emulated, err := ReadCipherLimit(path)
	if err != nil {
		t.Fatal(err)
	}
	if !emulated || !(c.BytesPerSecPerCore > 0) || c.SectorSize != 4096 || c.KeyBits != 512 || c.Method == "" || c.What == "" || c.Source != "file "+path {
		t.Errorf("cipher %+v, emulated %v", c, emulated)
	}
	got, err := cipherFor(context.Background(), hostfs.Default(), c, findCrypt(cryptPath(false)), false)
	if err != nil || !strings.Contains(got.Note, "512-bit key and 4096-byte sectors; dm-0 uses 512 and 512") {
		t.Errorf("cipherFor: %+v, %v", got, err)
	}
	for name, body := range map[string]string{"empty.json": "", "other.json": `{"kind": "slowpath-bench-result"}`, "zero.json": `{"algorithm": "xts(aes)", "bytes_per_sec_per_core": 0}`} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := ReadCipherLimit(p); err == nil || !strings.Contains(err.Error(), "crypto-limit --format json") {
			t.Errorf("%s: err %v", name, err)
		}
	}
	if _, _, err := ReadCipherLimit(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// The measurement after the run: real, brief, for the layer's sector size;
// skipped when the run was interrupted.
func TestCipherForMeasures(t *testing.T) {
	cs := findCrypt(cryptPath(false))
	start := time.Now()
	c, err := cipherFor(context.Background(), hostfs.Default(), nil, cs, false)
	if err != nil {
		t.Fatal(err)
	}
	if !(c.BytesPerSecPerCore > 0) || c.Source != "measured after the run" || c.SectorSize != 512 {
		t.Errorf("cipher %+v", c)
	}
	t.Logf("cipher %.2f GB/s per core (%s) in %v", c.BytesPerSecPerCore/1e9, c.Method, time.Since(start))
	if _, err := cipherFor(context.Background(), hostfs.Default(), nil, cs, true); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("interrupted: %v", err)
	}
}

// The result file keeps the tax and reads back (benchcmd's
// TestSummaryWithTax prints it).
func TestTaxInResultFile(t *testing.T) {
	r := &benchresult.Result{Kind: benchresult.Kind, SchemaVersion: benchresult.SchemaVersion, Profile: "db-commit", Status: benchresult.StatusComplete,
		DurationNS: int64(10 * time.Second), Parameters: benchresult.Parameters{Target: "/data"},
		Environment: benchresult.Environment{Target: &benchresult.TargetPath{Path: "/data", Storage: cryptPath(false).Record()}},
		Figures:     []benchresult.Figure{{Name: "read_iops", Phase: "direct-4k", Value: 100, Unit: benchresult.UnitIOPS}},
		WhereTime:   whereTime(18e6, 450e3, 4)}
	r.WhereTime.Summary = "dm-0 await 18 ms vs sda 0.45 ms; 38% of a CPU in kcryptd"
	r.EncryptionTax = assessTax(r.WhereTime, findCrypt(cryptPath(false)), gbCipher, nil, 2, false)
	var buf bytes.Buffer
	if err := benchresult.Write(&buf, r); err != nil {
		t.Fatal(err)
	}
	// benchcmd's TestSummaryWithTax prints this file.
	golden.Compare(t, "testdata/result-tax.json", buf.Bytes())
	back, err := benchresult.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.EncryptionTax; got == nil || got.Line != r.EncryptionTax.Line || *got.Ratio != *r.EncryptionTax.Ratio || got.Cipher.Method != "user-space" {
		t.Errorf("read back %+v", got)
	}
	// Not computed: no per-I/O figure in the file.
	r.EncryptionTax = assessTax(whereTime(18e6, -1, 4), findCrypt(cryptPath(false)), gbCipher, nil, 2, true)
	buf.Reset()
	if err := benchresult.Write(&buf, r); err != nil {
		t.Fatal(err)
	}
	if s := buf.String(); strings.Contains(s, `"ratio"`) || strings.Contains(s, `"observed_per_io_ns"`) || !strings.Contains(s, `"verdict": "not computed"`) || !strings.Contains(s, `"emulated_cpu": true`) {
		t.Errorf("not-computed tax in the file:\n%s", s[strings.Index(s, `"encryption_tax"`):])
	}
}

// TestCipherForInferred: a span whose dm-crypt layer is inferred from its
// uuid (table unread) takes the cipher figure with the assumption noted; a
// TCRYPT mapping, with no default cipher, gets none.
func TestCipherForInferred(t *testing.T) {
	given := &benchresult.Cipher{BytesPerSecPerCore: 2e9, KeyBits: 512, SectorSize: 512, Source: "file x"}
	span := func(typ, cipher string) *storagemodel.CryptSpan {
		p := &storagemodel.Path{MountPoint: "/data", Layers: []storagemodel.Layer{
			{Kind: storagemodel.LayerFilesystem},
			{Kind: "dm", Device: "dm-0", Name: "data", DMUUID: "CRYPT-" + typ + "-0123-data", EncryptionUnknown: true, Depth: 1,
				InferredCrypt: &storagemodel.InferredCrypt{Type: typ, AssumedCipher: cipher, AssumedFrom: "cryptsetup's " + typ + " default", TableNotRead: "no CAP_SYS_ADMIN"}},
			{Kind: storagemodel.LayerDisk, Device: "sda", Depth: 2}}}
		cs := findCrypt(p)
		if cs == nil {
			t.Fatal("no span")
		}
		return cs
	}
	c, err := cipherFor(context.Background(), hostfs.New(t.TempDir()), given, span("LUKS2", "aes-xts-plain64"), false)
	if err != nil {
		t.Fatal(err)
	}
	want := "dm-crypt inferred from uuid CRYPT-LUKS2-0123-data; table not read: no CAP_SYS_ADMIN: aes-xts-plain64 assumed (cryptsetup's LUKS2 default)"
	if c.Note != want || given.Note != "" {
		t.Errorf("note %q, want %q", c.Note, want)
	}
	if _, err := cipherFor(context.Background(), hostfs.New(t.TempDir()), given, span("TCRYPT", ""), false); err == nil ||
		!strings.Contains(err.Error(), "a TCRYPT mapping has no default cipher") {
		t.Errorf("TCRYPT: %v", err)
	}
}

// TestCryptLoad: how hard a run pushed dm-crypt, against values worked
// out by hand. 200 I/Os of 128 KiB per second are 26,214,400 B/s, 1.3% of
// 2 cores at 1 GB/s, with the crypto threads at 0.4 CPU (20% of the
// cores): not loaded. 8000 per second are 1,048,576,000 B/s, 52.4%:
// loaded. The same 26 MB/s with the crypto threads at 1.2 CPUs (60% of
// the cores, a cipher far slower than measured): loaded.
func TestCryptLoad(t *testing.T) {
	cs := findCrypt(cryptPath(false))
	low := assessTax(whereTime(18e6, 450e3, 0.9), cs, gbCipher, nil, 2, false).Load
	if low == nil || low.BytesPerSec != 26214400 || low.CipherShare != 0.013 || low.CryptoThreadCPUs != 0.4 || low.QueueDepth != 0.9 || low.Loaded {
		t.Fatalf("low %+v", low)
	}
	if !strings.Contains(low.Line, "this run did not load dm-crypt") || !strings.Contains(low.Line, "lab:seq-read") ||
		!strings.HasPrefix(low.Line, "dm-crypt load: 25.0 MiB/s through dm-0 = 1.3% of AES-XTS on 2 core(s)") {
		t.Errorf("low line %q", low.Line)
	}
	wt := whereTime(18e6, 450e3, 16)
	wt.Devices[0] = device("dm-0", "dm-crypt", 1, 8000, 128<<10, 18e6, 16)
	high := assessTax(wt, cs, gbCipher, nil, 2, false).Load
	if high == nil || high.BytesPerSec != 1048576000 || high.CipherShare != 0.524 || !high.Loaded || !strings.HasSuffix(high.Line, ": loaded") {
		t.Fatalf("high %+v", high)
	}
	busy := whereTime(18e6, 450e3, 0.9)
	busy.Threads[1].CPUNS = 11.8e9 // with dmcrypt_write's 0.2 s: 12 s of CPU in 10 s
	if l := assessTax(busy, cs, gbCipher, nil, 2, false).Load; l == nil || l.CryptoThreadCPUs != 1.2 || !l.Loaded {
		t.Fatalf("busy crypto threads %+v", l)
	}
	// No cipher figure: no load either (nothing to set the bytes against).
	if l := assessTax(whereTime(18e6, 450e3, 4), cs, nil, errors.New("x"), 2, false).Load; l != nil {
		t.Errorf("load without a cipher: %+v", l)
	}
}
