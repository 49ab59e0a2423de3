package storagecheck

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// ioStat is a since-boot stat with a given mean await in µs and bytes per I/O.
func ioStat(ios, awaitUS, bytesPerIO uint64) *snapshot.BlockStat {
	ticks := ios * awaitUS / 1000
	return &snapshot.BlockStat{Fields: 17, ReadIOs: ios, ReadSectors: ios * bytesPerIO / 512, ReadTicksMS: ticks,
		IOTicksMS: ticks, TimeInQueueMS: ticks}
}

// TestTaxSpans runs dmcrypt.tax on the crypt-on-crypt fixture with counters
// added: the span runs from the topmost dm-crypt device to the device
// beneath the lowest, whatever sits between (a loop file on a filesystem).
func TestTaxSpans(t *testing.T) {
	s, err := snapshot.Load(filepath.Join(hostsDir, "baremetal-crypt-on-crypt-loop.json"))
	if err != nil {
		t.Fatal(err)
	}
	s.Host.Cipher = &snapshot.CipherLimit{Algorithm: "xts(aes)", Method: "af_alg", Driver: "xts-aes-aesni",
		BytesPerSecPerCore: 2e9, What: "test figure"}
	stats := map[string]*snapshot.BlockStat{
		// /srv: inner over outer over an HDD partition: +22 ms per I/O.
		"dm-1": ioStat(100000, 30000, 4096), "sda1": ioStat(100000, 8000, 4096),
		// /: far above the cipher's 2 µs, but 15 µs is below the floor.
		"dm-3": ioStat(50000, 115, 4096), "nvme0n1p3": ioStat(50000, 100, 4096),
		// /mnt/vault: too few I/Os at its top.
		"dm-2": ioStat(500, 40000, 4096),
	}
	for i := range s.Storage.BlockDevices {
		if st := stats[s.Storage.BlockDevices[i].Name]; st != nil {
			s.Storage.BlockDevices[i].Stat = st
		}
	}
	fs := run(t, "dmcrypt.tax", s, check.Config{})
	got := map[string]check.Finding{}
	for _, f := range fs {
		got[f.Subject] = f
	}
	if len(fs) != 3 {
		t.Errorf("%d findings, want one per topmost crypt device (inner, root_crypt, vault): %+v", len(fs), fs)
	}
	inner := got["/dev/mapper/inner"]
	if inner.Status != check.Fail || inner.Severity != check.Warning {
		t.Fatalf("inner: %s %s: %s", inner.Status, inner.Severity, inner.Summary)
	}
	for _, want := range []string{"2 dm-crypt layers (inner down to outer)", "far longer at dm-1 than at sda1", "far above what the cipher costs", "since-boot means"} {
		if !strings.Contains(inner.Summary, want) {
			t.Errorf("inner summary lacks %q: %s", want, inner.Summary)
		}
	}
	for i, want := range []string{"30ms over 100000 I/Os, 4.0 KiB per I/O, 1.0 in flight", "8ms over 100000 I/Os"} {
		if !strings.Contains(inner.Evidence[i].Observed, want) {
			t.Errorf("inner evidence %d: %+v, want %q", i, inner.Evidence[i], want)
		}
	}
	if e := inner.Evidence[3]; !strings.HasPrefix(e.Observed, "+22ms, 5371x") {
		t.Errorf("inner added await: %+v", e)
	}
	// 4 KiB x 2 layers / 2 GB/s = 4.1 µs; queue depth 1 on 32 cores.
	if e := inner.Evidence[3]; !strings.Contains(e.Expected, "4.1µs") || !strings.Contains(e.Expected, "x 2 layer(s)") {
		t.Errorf("inner tax evidence: %+v", e)
	}
	if e := inner.Evidence[2]; e.Source != "host.cipher (af_alg, xts-aes-aesni)" || !strings.Contains(e.Observed, "2.00 GB/s: test figure") {
		t.Errorf("inner cipher evidence: %+v", e)
	}
	if !strings.Contains(inner.Remediation, "--perf-no_read_workqueue") || !strings.Contains(inner.Remediation, "storage.stacked-encryption") {
		t.Errorf("inner remediation: %s", inner.Remediation)
	}
	root := got["/dev/mapper/root_crypt"]
	if root.Status != check.Pass || !strings.Contains(root.Summary, "below the 20µs") {
		t.Errorf("root_crypt under the floor: %s: %s", root.Status, root.Summary)
	}
	vault := got["/dev/mapper/vault"]
	if vault.Status != check.Unknown || !strings.Contains(vault.Summary, "too few I/Os since boot") {
		t.Errorf("vault with 500 I/Os: %s: %s", vault.Status, vault.Summary)
	}

	// A cipher the figure does not describe is not judged by it.
	for i := range s.Storage.BlockDevices {
		d := &s.Storage.BlockDevices[i]
		if d.Name == "dm-3" {
			d.DM.Targets[0].Params = strings.Replace(d.DM.Targets[0].Params, "aes-xts-plain64", "serpent-xts-plain64", 1)
		}
	}
	for _, f := range run(t, "dmcrypt.tax", s, check.Config{}) {
		if f.Subject == "/dev/mapper/root_crypt" && (f.Status != check.Unknown || !strings.Contains(f.Summary, "serpent")) {
			t.Errorf("serpent judged by the AES figure: %s: %s", f.Status, f.Summary)
		}
	}
}

// TestTaxNoAccounting: brd counts no I/O, so a ramdisk beneath leaves the
// tax unknown, and says why, rather than judged against a zero await.
func TestTaxNoAccounting(t *testing.T) {
	s, err := snapshot.Load(filepath.Join(hostsDir, "kvm-qemu64-ramdisk-crypt-5.4.json"))
	if err != nil {
		t.Fatal(err)
	}
	s.Host.Cipher = &snapshot.CipherLimit{BytesPerSecPerCore: 1e8, What: "test"}
	for i := range s.Storage.BlockDevices {
		switch d := &s.Storage.BlockDevices[i]; d.Name {
		case "dm-0":
			d.Stat = ioStat(100000, 5000, 4096)
		case "ram0":
			d.Stat = &snapshot.BlockStat{Fields: 17}
		}
	}
	fs := run(t, "dmcrypt.tax", s, check.Config{})
	if len(fs) != 1 || fs[0].Status != check.Unknown || !strings.Contains(fs[0].Summary, "ram0 counts no I/O") {
		t.Errorf("findings %+v", fs)
	}
}

// TestTaxNoAddedAwait: a top device no slower than the one beneath passes
// with the two awaits, instead of an error from the model.
func TestTaxNoAddedAwait(t *testing.T) {
	s, err := snapshot.Load(filepath.Join(hostsDir, "aws-r6i-ebs-luks-tuned.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Storage.BlockDevices {
		switch d := &s.Storage.BlockDevices[i]; d.Name {
		case "dm-0":
			d.Stat = ioStat(5000, 0, 8192)
		case "nvme1n1":
			d.Stat = ioStat(5000, 600, 8192)
		}
	}
	fs := run(t, "dmcrypt.tax", s, check.Config{})
	if len(fs) != 1 || fs[0].Status != check.Pass || !strings.Contains(fs[0].Summary, "no added await (dm-0 0s, nvme1n1 600µs)") {
		t.Errorf("findings %+v", fs)
	}
}

// TestTaxWindow: with StatWindowMS set (the agent's snapshot) the check
// judges the counters over the window, not since boot. The since-boot
// counters here say the opposite of the window's, so a check reading the
// wrong ones fails this test either way.
func TestTaxWindow(t *testing.T) {
	load := func() *snapshot.Snapshot {
		s, err := snapshot.Load(filepath.Join(hostsDir, "baremetal-crypt-on-crypt-loop.json"))
		if err != nil {
			t.Fatal(err)
		}
		s.Host.Cipher = &snapshot.CipherLimit{Algorithm: "xts(aes)", Method: "given", BytesPerSecPerCore: 2e9, What: "test figure"}
		return s
	}
	set := func(s *snapshot.Snapshot, boot, window map[string]*snapshot.BlockStat) {
		s.Storage.Windowed, s.Storage.StatWindowMS = true, 15000
		for i := range s.Storage.BlockDevices {
			d := &s.Storage.BlockDevices[i]
			d.Stat, d.StatWindow = boot[d.Name], window[d.Name]
		}
	}
	slow := map[string]*snapshot.BlockStat{"dm-1": ioStat(100000, 30000, 4096), "sda1": ioStat(100000, 8000, 4096)}
	fast := map[string]*snapshot.BlockStat{"dm-1": ioStat(100000, 8010, 4096), "sda1": ioStat(100000, 8000, 4096)}
	for _, tc := range []struct {
		name         string
		boot, window map[string]*snapshot.BlockStat
		status       check.Status
		want         string
	}{
		{"fires over the window", fast, slow, check.Fail, "Over the last 15s, I/O through 2 dm-crypt layers"},
		{"silent over the window", slow, fast, check.Pass, "over the last 15s: cipher"},
		{"no window counters", slow, nil, check.Unknown, "no I/O counters of dm-1 over the last 15s"},
		{"first scrape", slow, nil, check.Unknown, "no interval yet"},
		{"idle window", slow, map[string]*snapshot.BlockStat{"dm-1": {}, "sda1": {}}, check.Unknown, "dm-1 counts no I/O over the last 15s (idle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := load()
			set(s, tc.boot, tc.window)
			if tc.name == "first scrape" {
				s.Storage.StatWindowMS = 0
			}
			var inner *check.Finding
			fs := run(t, "dmcrypt.tax", s, check.Config{})
			for i := range fs {
				if fs[i].Subject == "/dev/mapper/inner" {
					inner = &fs[i]
				}
			}
			if inner == nil {
				t.Fatalf("no finding on /dev/mapper/inner: %+v", fs)
			}
			if inner.Status != tc.status || !strings.Contains(inner.Summary, tc.want) {
				t.Errorf("got %s %q, want %s containing %q", inner.Status, inner.Summary, tc.status, tc.want)
			}
			if inner.Status == check.Fail && (strings.Contains(inner.Summary, "since") || !strings.Contains(inner.Evidence[0].Key, "over the last 15s")) {
				t.Errorf("window finding speaks of since boot: %q, %+v", inner.Summary, inner.Evidence[0])
			}
		})
	}
}

// unreadTables drops the dm tables of s, as a collector without
// CAP_SYS_ADMIN leaves them: the uuid (sysfs) kept, TableNotRead set.
func unreadTables(t *testing.T, s *snapshot.Snapshot, why string) {
	t.Helper()
	n := 0
	for i := range s.Storage.BlockDevices {
		if d := &s.Storage.BlockDevices[i]; d.DM != nil {
			d.DM.Targets, d.DM.TableNotRead = nil, why
			n++
		}
	}
	if n == 0 {
		t.Fatal("fixture has no dm device")
	}
}

// TestTaxInferredFromUUID: on the incident's i4i and the tuned r6i with
// their dm tables unread (an agent without CAP_SYS_ADMIN), dmcrypt.tax is
// judged from the CRYPT-LUKS2 uuid as with the tables read (fires on the
// first, passes on the second), and says the span was inferred and the
// cipher assumed; the workqueue flags stay unknown. A TCRYPT uuid has no
// default cipher (unknown), and a dm device whose uuid is not cryptsetup's
// has no span at all.
func TestTaxInferredFromUUID(t *testing.T) {
	const why = "DM_TABLE_STATUS 253:0: operation not permitted (run as root: it needs CAP_SYS_ADMIN)"
	for _, tc := range []struct {
		fixture, subject, uuid string
		want                   check.Status
		summary                string
	}{
		{"aws-i4i-luks-default", "/dev/mapper/scratch", "", check.Fail, "far above what the cipher costs"},
		{"aws-r6i-ebs-luks-tuned", "/dev/mapper/pgdata", "", check.Pass, "7µs"},
		{"aws-i4i-luks-default", "/dev/mapper/scratch", "CRYPT-TCRYPT-scratch", check.Unknown, "a TCRYPT mapping has no default cipher"},
		{"aws-i4i-luks-default", "", "LVM-0123456789abcdef0123456789abcdef", "", ""},
	} {
		t.Run(tc.fixture+"/"+tc.uuid, func(t *testing.T) {
			s, err := snapshot.Load(filepath.Join(hostsDir, tc.fixture+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if s.Host == nil || s.Host.Cipher == nil {
				t.Fatal("fixture has no cipher figure")
			}
			unreadTables(t, s, why)
			var uuid string
			for i := range s.Storage.BlockDevices {
				if d := &s.Storage.BlockDevices[i]; d.DM != nil {
					if tc.uuid != "" {
						d.DM.UUID = tc.uuid
					}
					uuid = d.DM.UUID
				}
			}
			fs := run(t, "dmcrypt.tax", s, check.Config{})
			if tc.subject == "" {
				if len(fs) != 0 {
					t.Fatalf("a dm device without a CRYPT- uuid and its table unread has no span: %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != tc.subject || fs[0].Status != tc.want || !strings.Contains(fs[0].Summary, tc.summary) {
				t.Fatalf("findings %+v, want %s %s with %q", fs, tc.subject, tc.want, tc.summary)
			}
			f := fs[0]
			if tc.want == check.Unknown {
				if !strings.Contains(f.Summary, "dm-crypt inferred from uuid "+uuid+"; table not read: "+why) {
					t.Errorf("unknown summary: %s", f.Summary)
				}
				return
			}
			if !strings.Contains(f.Summary, "dm-crypt inferred from the device-mapper uuid, its table not read: cipher assumed aes-xts-plain64, flags unknown.") {
				t.Errorf("summary does not say the span was inferred: %s", f.Summary)
			}
			e := f.Evidence[len(f.Evidence)-1]
			if e.Source != "/sys/class/block/dm-0/dm/uuid" || e.Observed != "dm-crypt inferred from uuid "+uuid+"; table not read: "+why ||
				e.Expected != "cipher aes-xts-plain64 assumed: cryptsetup's LUKS2 default; flags unknown" {
				t.Errorf("inferred evidence %+v", e)
			}
			if f.Status == check.Fail && (!strings.Contains(f.Remediation, "dm-crypt scratch was not read (see the evidence)") ||
				strings.Contains(f.Remediation, "--perf-no_read_workqueue")) {
				t.Errorf("remediation claims to know the flags: %s", f.Remediation)
			}
			for _, id := range []string{"dmcrypt.workqueue", "dmcrypt.same-cpu-crypt", "dmcrypt.sector-size"} {
				for _, w := range run(t, id, s, check.Config{}) {
					if w.Status != check.Unknown {
						t.Errorf("%s judged flags it cannot read: %s %s", id, w.Status, w.Summary)
					}
				}
			}
			if wq := run(t, "dmcrypt.workqueue", s, check.Config{}); len(wq) != 1 || !strings.Contains(wq[0].Summary, "workqueue flags are unknown") {
				t.Errorf("dmcrypt.workqueue on the inferred mapping: %+v", wq)
			}
		})
	}
}

// TestTaxEngineLayer: on a path whose database encrypts its own pages,
// dmcrypt.tax judges dm-crypt's span alone (the engine's cipher is not in
// the awaits) and says the engine's CPU is the service's, which no dm-crypt
// flag removes; a path without an engine says nothing of one.
func TestTaxEngineLayer(t *testing.T) {
	f := find(fixtureFindings(t, "aws-i4i-mariadb-luks"), "dmcrypt.tax", "/dev/mapper/mysql")
	if f == nil || f.Status != check.Fail {
		t.Fatalf("no failing dmcrypt.tax on mysql: %+v", f)
	}
	ev := evidenceText(*f)
	for _, want := range []string{"engine layer MariaDB InnoDB", "(mariadbd, pid 1873)", "its CPU is the service's, not kcryptd's",
		"the service 0.54 CPU-s per GiB moved, the kernel (dm-crypt) 0.54 CPU-s per GiB moved", "same_cpu_crypt"} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence does not say %q:\n%s", want, ev)
		}
	}
	if !strings.Contains(f.Remediation, "the dm-crypt flags above cannot\nremove it") {
		t.Errorf("remediation:\n%s", f.Remediation)
	}
	// The expected figure is dm-crypt's one layer, as without the engine.
	if !strings.Contains(ev, "x 1 layer(s)") {
		t.Errorf("expected tax counts the engine's layer:\n%s", ev)
	}
	plain := find(fixtureFindings(t, "aws-i4i-luks-default"), "dmcrypt.tax", "/dev/mapper/scratch")
	if plain == nil || strings.Contains(evidenceText(*plain)+plain.Remediation, "engine") {
		t.Errorf("engine named where there is none: %+v", plain)
	}
}
