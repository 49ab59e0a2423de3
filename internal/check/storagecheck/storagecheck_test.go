package storagecheck

import (
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

func bptr(b bool) *bool { return &b }

// host is a small snapshot builder: one disk, optional crypt on it, mounted at /data.
type host struct {
	kernel     string
	flags      []string
	rotational bool
	transport  string
	model      string
	scheduler  string
	pbs        int
	diskKind   string
	crypt      []string // crypt params per stacked layer, bottom first
	uuid       string
	cloud      *snapshot.Cloud
	diskSize   uint64
}

func (h host) snapshot() *snapshot.Snapshot {
	if h.kernel == "" {
		h.kernel = "6.1.0-50-amd64"
	}
	if h.flags == nil {
		h.flags = []string{"aes", "avx2", "sse2"}
	}
	if h.pbs == 0 {
		h.pbs = 4096
	}
	if h.diskKind == "" {
		h.diskKind = snapshot.KindDisk
	}
	if h.scheduler == "" {
		h.scheduler = "none"
	}
	if h.transport == "" {
		h.transport = "nvme"
	}
	if h.uuid == "" {
		h.uuid = "CRYPT-LUKS2-3f0c9d6e1b2a4c5d8e7f6a5b4c3d2e1f-"
	}
	if h.diskSize == 0 {
		h.diskSize = 1 << 40
	}
	s := &snapshot.Snapshot{
		Manifest: snapshot.Manifest{FormatVersion: 1},
		Host:     &snapshot.Host{KernelRelease: h.kernel, CPUFlags: h.flags, CPUModel: "Test CPU"},
		Cloud:    h.cloud,
		Storage:  &snapshot.Storage{},
	}
	d := snapshot.BlockDevice{Name: "nvme0n1", MajorMinor: "259:0", Kind: h.diskKind, SizeBytes: h.diskSize,
		Queue: &snapshot.Queue{Rotational: bptr(h.rotational), LogicalBlockSize: 512, PhysicalBlockSize: h.pbs,
			Scheduler: h.scheduler, Schedulers: []string{"none", "mq-deadline"}},
		Ident: &snapshot.Identity{Transport: h.transport, Model: h.model}}
	prev, prevMM := d.Name, d.MajorMinor
	devs := []snapshot.BlockDevice{d}
	for i, p := range h.crypt {
		name := "dm-" + string(rune('0'+i))
		dmName := []string{"outer", "inner", "innermost"}[i]
		devs[len(devs)-1].Holders = []string{name}
		devs = append(devs, snapshot.BlockDevice{Name: name, MajorMinor: "253:" + string(rune('0'+i)), Kind: snapshot.KindDM,
			SizeBytes: 1 << 40, Slaves: []string{prev},
			Queue: &snapshot.Queue{Rotational: bptr(h.rotational), LogicalBlockSize: 512, PhysicalBlockSize: h.pbs, Scheduler: "none"},
			DM: &snapshot.DM{Name: dmName, UUID: h.uuid + dmName,
				Targets: []snapshot.DMTarget{{Length: 1 << 31, Type: "crypt", Params: strings.Replace(p, "DEV", prevMM, 1)}}}})
		prev, prevMM = name, "253:"+string(rune('0'+i))
	}
	s.Storage.BlockDevices = devs
	s.Storage.Mounts = []snapshot.Mount{{MountID: 1, MajorMinor: prevMM, Root: "/", MountPoint: "/data", FSType: "ext4", Source: "/dev/x"}}
	return s
}

const (
	luksDefault = "aes-xts-plain64 redacted:512 0 DEV 32768 1 sector_size:4096"
	luksTuned   = "aes-xts-plain64 redacted:512 0 DEV 32768 3 no_read_workqueue no_write_workqueue sector_size:4096"
	luks512     = "aes-xts-plain64 redacted:512 0 DEV 4096"
)

func run(t *testing.T, id string, s *snapshot.Snapshot, cfg check.Config) []check.Finding {
	t.Helper()
	m := storagemodel.Build(s)
	in := &check.Input{Snapshot: s, Storage: m, Config: cfg}
	for _, c := range check.All() {
		if c.ID == id {
			return c.Run(in)
		}
	}
	t.Fatalf("check %s not registered", id)
	return nil
}

func statuses(fs []check.Finding) map[check.Status]int {
	out := map[check.Status]int{}
	for _, f := range fs {
		st := f.Status
		if st == "" {
			st = check.Fail
		}
		out[st]++
	}
	return out
}

func failing(fs []check.Finding) []check.Finding {
	var out []check.Finding
	for _, f := range fs {
		if f.Status == "" || f.Status == check.Fail {
			out = append(out, f)
		}
	}
	return out
}

func TestChecksFireAndStaySilent(t *testing.T) {
	aws := &snapshot.Cloud{Provider: "aws", InstanceType: "i4i.2xlarge"}
	tests := []struct {
		id       string
		h        host
		cfg      check.Config
		fires    bool
		severity check.Severity
		contains string // in summary or remediation of the failing finding
		status   check.Status
	}{
		{id: "storage.stacked-encryption", h: host{crypt: []string{luksDefault, luksDefault}}, fires: true, severity: check.Warning, contains: "2 encryption layers"},
		{id: "storage.stacked-encryption", h: host{crypt: []string{luksDefault, luksDefault}}, cfg: check.Config{RequiredStacks: []string{"/data"}},
			fires: true, severity: check.Info, contains: "Required by policy"},
		{id: "storage.stacked-encryption", h: host{crypt: []string{luksDefault}, model: "Amazon EC2 NVMe Instance Storage", cloud: aws},
			fires: true, severity: check.Warning, contains: "aws instance-store"},
		{id: "storage.stacked-encryption", h: host{crypt: []string{luksDefault}}, fires: false},
		{id: "storage.stacked-encryption", h: host{crypt: []string{luksDefault}, model: "Amazon Elastic Block Store", cloud: aws},
			fires: false, status: check.Unknown},

		{id: "dmcrypt.workqueue", h: host{crypt: []string{luksDefault}}, fires: true, severity: check.Warning,
			contains: "cryptsetup refresh --perf-no_read_workqueue --perf-no_write_workqueue --persistent -- outer"},
		{id: "dmcrypt.workqueue", h: host{crypt: []string{"aes-xts-plain64 redacted:512 0 DEV 32768 2 allow_discards same_cpu_crypt"}}, fires: true,
			contains: "cryptsetup refresh --perf-no_read_workqueue --perf-no_write_workqueue --allow-discards --perf-same_cpu_crypt --persistent -- outer"},
		{id: "dmcrypt.workqueue", h: host{crypt: []string{luksDefault}, uuid: "CRYPT-PLAIN-"}, fires: true, severity: check.Warning,
			contains: "no-read-workqueue,no-write-workqueue"},
		{id: "dmcrypt.workqueue", h: host{crypt: []string{luksDefault}, diskKind: snapshot.KindRAM}, fires: true, contains: "RAM storage"},
		{id: "dmcrypt.workqueue", h: host{crypt: []string{luksTuned}}, fires: false},
		{id: "dmcrypt.workqueue", h: host{crypt: []string{luksDefault}, rotational: true, model: "Amazon EC2 NVMe Instance Storage", cloud: aws},
			fires: true, contains: "local SSD storage"},
		{id: "dmcrypt.workqueue", h: host{crypt: []string{luksDefault}, rotational: true}, fires: false},
		{id: "dmcrypt.workqueue", h: host{crypt: []string{luksDefault}, kernel: "5.4.0-150-generic"}, fires: false, status: check.Skipped},
		{id: "dmcrypt.workqueue", h: host{crypt: []string{luksDefault}, kernel: "garbage"}, fires: false, status: check.Unknown},

		{id: "dmcrypt.sector-size", h: host{crypt: []string{luks512}}, fires: true, contains: "8 cipher operations"},
		{id: "dmcrypt.sector-size", h: host{crypt: []string{luksDefault}}, fires: false},
		{id: "dmcrypt.sector-size", h: host{crypt: []string{luks512}, pbs: 512}, fires: false},

		{id: "crypto.no-aes-acceleration", h: host{crypt: []string{luksDefault}, flags: []string{"sse2", "avx2"}}, fires: true, contains: "no AES instructions"},
		{id: "crypto.no-aes-acceleration", h: host{crypt: []string{luksDefault}}, fires: false},
		{id: "crypto.no-aes-acceleration", h: host{crypt: []string{"serpent-xts-plain64 redacted:512 0 DEV 0"}, flags: []string{"sse2"}}, fires: false},

		{id: "dmcrypt.same-cpu-crypt", h: host{crypt: []string{luksDefault}, kernel: "5.4.0-150-generic"}, fires: true, contains: "45.3k"},
		{id: "dmcrypt.same-cpu-crypt", h: host{crypt: []string{"aes-xts-plain64 redacted:512 0 DEV 0 1 same_cpu_crypt"}, kernel: "5.4.0"}, fires: false},
		{id: "dmcrypt.same-cpu-crypt", h: host{crypt: []string{luksDefault}}, fires: false},

		{id: "dmcrypt.scheduler", h: host{crypt: []string{luksDefault}, scheduler: "mq-deadline"}, fires: true, contains: "ATTR{queue/scheduler}=\"none\""},
		{id: "dmcrypt.scheduler", h: host{crypt: []string{luksDefault}}, fires: false},
		{id: "dmcrypt.scheduler", h: host{crypt: []string{luksDefault}, scheduler: "mq-deadline", transport: "sata"}, fires: false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			fs := run(t, tt.id, tt.h.snapshot(), tt.cfg)
			bad := failing(fs)
			if !tt.fires {
				if len(bad) > 0 {
					t.Fatalf("fired: %+v", bad)
				}
				if tt.status != "" && statuses(fs)[tt.status] == 0 {
					t.Errorf("want a %s finding, got %+v", tt.status, fs)
				}
				return
			}
			if len(bad) != 1 {
				t.Fatalf("want one failing finding, got %+v", fs)
			}
			f := bad[0]
			if tt.severity != 0 && f.Severity != tt.severity && !(f.Severity == 0 && tt.severity == check.Warning) {
				t.Errorf("severity %v, want %v", f.Severity, tt.severity)
			}
			if !strings.Contains(f.Summary+"\n"+f.Remediation, tt.contains) {
				t.Errorf("finding does not mention %q:\n%s\n%s", tt.contains, f.Summary, f.Remediation)
			}
			if len(f.Evidence) == 0 || f.Remediation == "" || len(f.References) == 0 {
				t.Errorf("finding lacks evidence, remediation or references: %+v", f)
			}
		})
	}
}

func TestChecksOnEmptyInput(t *testing.T) {
	for _, c := range check.All() {
		if !strings.HasPrefix(c.ID, "storage.") && !strings.HasPrefix(c.ID, "dmcrypt.") && !strings.HasPrefix(c.ID, "crypto.") {
			continue
		}
		for _, s := range []*snapshot.Snapshot{nil, {}, {Storage: &snapshot.Storage{}}} {
			m := storagemodel.Build(s)
			for _, f := range c.Run(&check.Input{Snapshot: s, Storage: m}) {
				if f.Status == "" || f.Status == check.Fail {
					t.Errorf("%s fired on an empty snapshot: %+v", c.ID, f)
				}
			}
		}
	}
}

// TestIncompletePath is the fires/silent pair of storage.incomplete-path:
// a mount whose device is missing from the snapshot is an unknown that
// says what to collect; a path followed to its disk gives nothing.
func TestIncompletePath(t *testing.T) {
	broken := &snapshot.Snapshot{Storage: &snapshot.Storage{Mounts: []snapshot.Mount{
		{MountID: 1, MajorMinor: "8:1", Root: "/", MountPoint: "/x", FSType: "ext4", Source: "/dev/sda1"},
	}}}
	fs := run(t, "storage.incomplete-path", broken, check.Config{})
	if len(fs) != 1 || fs[0].Status != check.Unknown || fs[0].Subject != "/x" ||
		len(fs[0].Evidence) == 0 || !strings.Contains(fs[0].Remediation, "Collect again") {
		t.Errorf("mount with a missing device: %+v", fs)
	}
	if fs := run(t, "storage.incomplete-path", host{}.snapshot(), check.Config{}); len(fs) != 0 {
		t.Errorf("complete path gave findings: %+v", fs)
	}
}
