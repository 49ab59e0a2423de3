package storagecheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

const hostsDir = "../../../testdata/hosts"

// fixtureFindings runs every check on a whole-host fixture, with its
// <name>.config when present, as doctor --from would.
func fixtureFindings(t *testing.T, name string) []check.Finding {
	t.Helper()
	s, err := snapshot.Load(filepath.Join(hostsDir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg check.Config
	if b, err := os.ReadFile(filepath.Join(hostsDir, name+".config")); err == nil {
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
	}
	m := storagemodel.Build(s)
	return check.Run(&check.Input{Snapshot: s, Storage: m, Config: cfg}, true)
}

func find(fs []check.Finding, id, subject string) *check.Finding {
	for i := range fs {
		if fs[i].ID == id && fs[i].Subject == subject {
			return &fs[i]
		}
	}
	return nil
}

func fired(fs []check.Finding, id string) []string {
	var out []string
	for _, f := range fs {
		if f.ID == id && f.Status == check.Fail {
			out = append(out, f.Subject)
		}
	}
	return out
}

// TestFixtureAcceptance asserts the findings the acceptance names,
// and that every storage check fires on some fixture and stays silent on another.
func TestFixtureAcceptance(t *testing.T) {
	tests := []struct {
		fixture, id, subject string
		want                 check.Status
		severity             check.Severity
	}{
		// The incident: a v5 temp disk, hardware-encrypted already, under
		// encryption at host: two platform layers, no dm-crypt at all.
		{"azure-e16dv5-eah", "storage.stacked-encryption", "/mnt/data", check.Fail, check.Warning},
		{"azure-e16dv5-noeah", "storage.stacked-encryption", "/mnt/data", check.Pass, 0},
		// LUKS on top of that: three layers.
		{"azure-e16dv5-eah-luks", "storage.stacked-encryption", "/mnt/data", check.Fail, check.Warning},
		// The fixture temp disk reports rotational 1; the cloud table knows it is local SSD.
		{"azure-e16dv5-eah-luks", "dmcrypt.workqueue", "/dev/mapper/data", check.Fail, check.Warning},
		// LUKS2 default flags on an i4i instance store (itself always encrypted).
		{"aws-i4i-luks-default", "dmcrypt.workqueue", "/dev/mapper/scratch", check.Fail, check.Warning},
		{"aws-i4i-luks-default", "storage.stacked-encryption", "/data", check.Fail, check.Warning},
		{"aws-r6i-ebs-luks-tuned", "dmcrypt.workqueue", "/dev/mapper/pgdata", check.Pass, 0},
		{"aws-r6i-ebs-luks-tuned", "storage.stacked-encryption", "/var/lib/postgresql", check.Unknown, check.Info},
		{"aws-r6i-ebs-luks-tuned", "dmcrypt.sector-size", "/dev/mapper/pgdata", check.Pass, 0},
		// Bare metal: crypt on crypt, a LUKS file on it, a required stack.
		{"baremetal-crypt-on-crypt-loop", "storage.stacked-encryption", "/mnt/vault", check.Fail, check.Warning},
		{"baremetal-crypt-on-crypt-loop", "storage.stacked-encryption", "/srv", check.Fail, check.Info},
		{"baremetal-crypt-on-crypt-loop", "dmcrypt.sector-size", "/dev/mapper/outer", check.Fail, check.Warning},
		{"baremetal-crypt-on-crypt-loop", "dmcrypt.scheduler", "/dev/nvme0n1", check.Fail, check.Info},
		{"baremetal-crypt-on-crypt-loop", "dmcrypt.workqueue", "/dev/mapper/vault", check.Pass, 0},
		{"plain-host", "storage.stacked-encryption", "/", check.Pass, 0},
		// The PostgreSQL ramdisk case on a pre-5.9 kernel and a CPU without AES.
		{"kvm-qemu64-ramdisk-crypt-5.4", "crypto.no-aes-acceleration", "/dev/mapper/pgram", check.Fail, check.Warning},
		{"kvm-qemu64-ramdisk-crypt-5.4", "dmcrypt.same-cpu-crypt", "/dev/mapper/pgram", check.Fail, check.Info},
		{"kvm-qemu64-ramdisk-crypt-5.4", "dmcrypt.workqueue", "/dev/mapper/pgram", check.Skipped, check.Info},
		{"aws-i4i-luks-default", "crypto.no-aes-acceleration", "/dev/mapper/scratch", check.Pass, 0},
		// Cloud disk identity by the clouds' own rules (issue 14 §1). A Gen2
		// temp disk 4 MiB short of the IMDS size is still the temp disk (VMBus
		// scsi0, LUN 1); a data disk of exactly the IMDS size is not.
		{"azure-e16dv5-gen2-eah", "storage.stacked-encryption", "/mnt/resource", check.Fail, check.Warning},
		{"azure-e16dv5-gen2-eah", "storage.stacked-encryption", "/mnt/archive", check.Pass, 0},
		{"azure-e16dv5-gen2-eah", "storage.stacked-encryption", "/", check.Pass, 0},
		// Size alone identifies nothing: unknown, not a guess either way.
		{"azure-e16dv5-eah-sizeonly", "storage.stacked-encryption", "/mnt/data", check.Unknown, check.Info},
		{"azure-e16dv5-eah-sizeonly", "storage.stacked-encryption", "/", check.Unknown, check.Info},
		// NVMe: the local Direct Disk v2 under EAH fires; a remote data disk
		// of the same size (MSFT NVMe Accelerator, nsid 2) does not.
		{"azure-d16aldsv6-nvme-eah", "storage.stacked-encryption", "/mnt/scratch", check.Fail, check.Warning},
		{"azure-d16aldsv6-nvme-eah", "storage.stacked-encryption", "/data", check.Pass, 0},
		// GCP: LUKS on a SCSI local SSD (EphemeralDisk) fires; the PD root does not.
		{"gcp-n1-localssd-luks", "storage.stacked-encryption", "/mnt/disks/ssd0", check.Fail, check.Warning},
		{"gcp-n1-localssd-luks", "storage.stacked-encryption", "/", check.Pass, 0},
		{"gcp-n1-localssd-luks", "dmcrypt.workqueue", "/dev/mapper/ssd0", check.Fail, check.Warning},
		// GCP over NVMe: nvme_card-pd under LUKS fires; nvme_card alone passes.
		{"gcp-c3-nvme-pd-luks", "storage.stacked-encryption", "/srv/db", check.Fail, check.Warning},
		{"gcp-c3-nvme-pd-luks", "storage.stacked-encryption", "/mnt/disks/ssd0", check.Pass, 0},
		// The expected encryption tax on since-boot counters: the
		// incident's 18 ms over 0.45 ms fires; a tuned mapping adding 7 µs
		// per I/O does not; without a cipher figure it is not evaluated.
		{"aws-i4i-luks-default", "dmcrypt.tax", "/dev/mapper/scratch", check.Fail, check.Warning},
		{"aws-r6i-ebs-luks-tuned", "dmcrypt.tax", "/dev/mapper/pgdata", check.Pass, 0},
		// The same incident read without CAP_SYS_ADMIN (the default
		// DaemonSet): dm-0's table unread, dm-crypt by its CRYPT-LUKS2 uuid.
		{"aws-i4i-luks-unprivileged", "dmcrypt.tax", "/dev/mapper/scratch", check.Fail, check.Warning},
		{"aws-i4i-luks-unprivileged", "dmcrypt.workqueue", "/dev/mapper/scratch", check.Unknown, check.Info},
		{"aws-i4i-luks-unprivileged", "storage.stacked-encryption", "/data", check.Unknown, check.Info},
		{"gcp-n1-localssd-luks", "dmcrypt.tax", "/dev/mapper/ssd0", check.Unknown, check.Info},
		{"kvm-qemu64-ramdisk-crypt-5.4", "dmcrypt.tax", "/dev/mapper/pgram", check.Unknown, check.Info},
		// Field truth 2026 (issue 30): platforms that add dm-crypt
		// themselves. Bottlerocket's encrypted ephemeral storage on an
		// instance store: two layers, default flags.
		{"bottlerocket-i4i-ephemeral-luks", "storage.stacked-encryption", "/mnt/.ephemeral", check.Fail, check.Warning},
		{"bottlerocket-i4i-ephemeral-luks", "dmcrypt.workqueue", "/dev/mapper/EPHEMERAL-DATA", check.Fail, check.Warning},
		{"bottlerocket-i4i-ephemeral-luks", "storage.stacked-encryption", "/local", check.Unknown, check.Info},
		// Talos: the flags unset fire, set pass.
		{"talos-luks-default", "dmcrypt.workqueue", "/dev/mapper/luks2-EPHEMERAL", check.Fail, check.Warning},
		{"talos-luks-flags", "dmcrypt.workqueue", "/dev/mapper/luks2-EPHEMERAL", check.Pass, 0},
		// Storage served by user-space targets: unknown, never 0 layers.
		{"longhorn-v2-mayastor-nvmf", "storage.userspace-encryption", "/mnt/pgdata", check.Unknown, check.Info},
		{"longhorn-v2-mayastor-nvmf", "storage.userspace-encryption", "/mnt/reports", check.Unknown, check.Info},
		{"longhorn-v2-mayastor-nvmf", "storage.stacked-encryption", "/mnt/pgdata", check.Unknown, check.Info},
		{"longhorn-v2-mayastor-nvmf", "storage.stacked-encryption", "/mnt/reports", check.Pass, 0},
		{"longhorn-v2-mayastor-nvmf", "dmcrypt.workqueue", "/dev/mapper/pgdata-encrypted", check.Fail, check.Warning},
		{"plain-host", "storage.userspace-encryption", "storage", check.Pass, 0},
		// Issue 42: MariaDB's own encryption over LUKS over the instance
		// store is three layers, the engine's on this CPU; a PostgreSQL
		// without pg_tde is found and encrypts nothing itself.
		{"aws-i4i-mariadb-luks", "storage.stacked-encryption", "/var/lib/mysql", check.Fail, check.Warning},
		{"aws-i4i-mariadb-luks", "storage.engine-encryption", "mariadb /var/lib/mysql", check.Fail, check.Info},
		{"aws-i4i-mariadb-luks", "dmcrypt.tax", "/dev/mapper/mysql", check.Fail, check.Warning},
		{"aws-r6i-postgresql-luks", "storage.engine-encryption", "postgresql /var/lib/postgresql/15/main", check.Pass, 0},
		{"aws-r6i-postgresql-luks", "storage.stacked-encryption", "/var/lib/postgresql", check.Unknown, check.Info},
		{"plain-host", "storage.engine-encryption", "engines", check.Pass, 0},
	}
	for _, tt := range tests {
		t.Run(tt.fixture+"/"+tt.id+"/"+tt.subject, func(t *testing.T) {
			fs := fixtureFindings(t, tt.fixture)
			f := find(fs, tt.id, tt.subject)
			if f == nil {
				t.Fatalf("no %s finding for %s; findings: %+v", tt.id, tt.subject, fs)
			}
			if f.Status != tt.want {
				t.Fatalf("status %s, want %s: %s", f.Status, tt.want, f.Summary)
			}
			if tt.severity != 0 && f.Severity != tt.severity {
				t.Errorf("severity %s, want %s", f.Severity, tt.severity)
			}
		})
	}
	// Explicit negatives of the acceptance: nothing stacked without EAH,
	// no workqueue finding on the tuned r6i.
	if got := fired(fixtureFindings(t, "azure-e16dv5-noeah"), "storage.stacked-encryption"); len(got) != 0 {
		t.Errorf("stacked-encryption fired on the EAH-off fixture: %v", got)
	}
	if got := fired(fixtureFindings(t, "aws-r6i-ebs-luks-tuned"), "dmcrypt.workqueue"); len(got) != 0 {
		t.Errorf("dmcrypt.workqueue fired on the tuned r6i: %v", got)
	}
	// The temp disk is named by its VMBus id, not by size: the evidence says so.
	f := find(fixtureFindings(t, "azure-e16dv5-gen2-eah"), "storage.stacked-encryption", "/mnt/resource")
	found := false
	for _, e := range f.Evidence {
		if strings.Contains(e.Observed, "{f8b3781a-1e82-4818-a1c3-63d806ec15bb} (Gen2 scsi0), LUN 1 (resource)") {
			found = true
		}
	}
	if !found {
		t.Errorf("stacked-encryption on the Gen2 temp disk does not cite the VMBus id and LUN: %+v", f.Evidence)
	}
	platformFixtures(t)
	if got := fixtureFindings(t, "plain-host"); check.Worst(got) != 0 {
		t.Errorf("plain host has findings: %+v", got)
	}
}

// TestEveryStorageCheckFiresSomewhere keeps the fixture set honest: each
// storage check must fail on at least one fixture and pass or stay quiet on another.
func TestEveryStorageCheckFiresSomewhere(t *testing.T) {
	fixtures := []string{"azure-e16dv5-eah", "azure-e16dv5-noeah", "azure-e16dv5-eah-luks", "aws-i4i-luks-default", "aws-r6i-ebs-luks-tuned",
		"baremetal-crypt-on-crypt-loop", "plain-host", "kvm-qemu64-ramdisk-crypt-5.4",
		"azure-e16dv5-gen2-eah", "azure-e16dv5-eah-sizeonly", "azure-d16aldsv6-nvme-eah", "gcp-n1-localssd-luks", "gcp-c3-nvme-pd-luks",
		"bottlerocket-i4i-ephemeral-luks", "talos-luks-default", "talos-luks-flags", "longhorn-v2-mayastor-nvmf",
		"aws-i4i-mariadb-luks", "aws-r6i-postgresql-luks"}
	fires := map[string]int{}
	silent := map[string]int{}
	for _, name := range fixtures {
		fs := fixtureFindings(t, name)
		for _, c := range check.All() {
			if n := len(fired(fs, c.ID)); n > 0 {
				fires[c.ID]++
			} else {
				silent[c.ID]++
			}
		}
	}
	for _, id := range []string{"storage.stacked-encryption", "dmcrypt.workqueue", "dmcrypt.sector-size",
		"crypto.no-aes-acceleration", "dmcrypt.same-cpu-crypt", "dmcrypt.scheduler", "dmcrypt.tax", "storage.engine-encryption"} {
		if fires[id] == 0 || silent[id] == 0 {
			t.Errorf("%s fires on %d fixtures and is silent on %d; want at least one of each", id, fires[id], silent[id])
		}
	}
}

// platformFixtures: each platform's finding names the platform's own
// setting, and a path over a user-space target never reads "0 layers".
func platformFixtures(t *testing.T) {
	t.Helper()
	for _, tt := range []struct{ fixture, id, subject, want string }{
		{"bottlerocket-i4i-ephemeral-luks", "storage.stacked-encryption", "/mnt/.ephemeral", "ENCRYPTED_STORAGE=true"},
		{"bottlerocket-i4i-ephemeral-luks", "storage.stacked-encryption", "/mnt/.ephemeral", "settings.bootstrap-commands"},
		{"bottlerocket-i4i-ephemeral-luks", "dmcrypt.workqueue", "/dev/mapper/EPHEMERAL-DATA", "no Bottlerocket setting"},
		{"bottlerocket-i4i-ephemeral-luks", "dmcrypt.workqueue", "/dev/mapper/EPHEMERAL-DATA", "TPM"},
		{"bottlerocket-i4i-ephemeral-luks", "dmcrypt.workqueue", "/dev/mapper/EPHEMERAL-DATA", "apiclient"},
		{"talos-luks-default", "dmcrypt.workqueue", "/dev/mapper/luks2-EPHEMERAL", "kind: VolumeConfig\n  name: EPHEMERAL"},
		{"talos-luks-default", "dmcrypt.workqueue", "/dev/mapper/luks2-EPHEMERAL", "      - no_read_workqueue\n      - no_write_workqueue"},
		{"longhorn-v2-mayastor-nvmf", "storage.userspace-encryption", "/mnt/reports", "kubectl get diskpool"},
		{"longhorn-v2-mayastor-nvmf", "storage.userspace-encryption", "/mnt/pgdata", "volumes.longhorn.io"},
	} {
		f := find(fixtureFindings(t, tt.fixture), tt.id, tt.subject)
		if f == nil || !strings.Contains(f.Remediation, tt.want) {
			t.Errorf("%s %s %s: remediation does not say %q: %+v", tt.fixture, tt.id, tt.subject, tt.want, f)
		}
	}
	// Bottlerocket seals the volume key in the TPM: no cryptsetup refresh
	// --persistent is offered, nor a bootstrap command running one.
	if f := find(fixtureFindings(t, "bottlerocket-i4i-ephemeral-luks"), "dmcrypt.workqueue", "/dev/mapper/EPHEMERAL-DATA"); f != nil && strings.Contains(f.Remediation, "cryptsetup refresh --perf") {
		t.Errorf("Bottlerocket remediation offers cryptsetup refresh:\n%s", f.Remediation)
	}
	// Talos has no shell: its fix is the machine configuration alone.
	if f := find(fixtureFindings(t, "talos-luks-default"), "dmcrypt.workqueue", "/dev/mapper/luks2-EPHEMERAL"); f != nil && strings.Contains(f.Remediation, "cryptsetup") {
		t.Errorf("Talos remediation offers cryptsetup:\n%s", f.Remediation)
	}
	f := find(fixtureFindings(t, "longhorn-v2-mayastor-nvmf"), "storage.stacked-encryption", "/mnt/reports")
	if f == nil || !strings.Contains(f.Summary, "1 whose encryption cannot be seen from inside") {
		t.Errorf("a path over a Mayastor target reads as unencrypted: %+v", f)
	}
}

// TestTalosVersions: before 1.11 the flags go into machine.systemDiskEncryption
// under the volume the mapping belongs to (mappings were <PARTITION>-encrypted
// before 1.12, so STATE-encrypted is STATE, never EPHEMERAL); 1.11 has the
// VolumeConfig document with encryption options; from 1.12 mappings are
// luks2-<VOLUME>.
func TestTalosVersions(t *testing.T) {
	for _, tt := range []struct {
		version, mapping string
		want, not        []string
	}{
		{"v1.9.5", "STATE-encrypted", []string{"machine:\n    systemDiskEncryption:\n      state:\n", "Talos 1.11 moves this"}, []string{"kind: VolumeConfig", "ephemeral:"}},
		{"v1.10.7", "EPHEMERAL-encrypted", []string{"systemDiskEncryption:\n      ephemeral:\n"}, []string{"kind: VolumeConfig"}},
		{"v1.11.2", "STATE-encrypted", []string{"kind: VolumeConfig\n  name: STATE\n"}, []string{"systemDiskEncryption"}},
		{"v1.12.1", "luks2-EPHEMERAL", []string{"kind: VolumeConfig\n  name: EPHEMERAL\n"}, []string{"systemDiskEncryption"}},
	} {
		t.Run(tt.version+"/"+tt.mapping, func(t *testing.T) {
			s, err := snapshot.Load(filepath.Join(hostsDir, "talos-luks-default.json"))
			if err != nil {
				t.Fatal(err)
			}
			s.Host.OS.VersionID, s.Host.OS.PrettyName = tt.version, "Talos ("+tt.version+")"
			for i := range s.Storage.BlockDevices {
				if dm := s.Storage.BlockDevices[i].DM; dm != nil && dm.Name == "luks2-EPHEMERAL" {
					dm.Name = tt.mapping
				}
			}
			fs := check.Run(&check.Input{Snapshot: s, Storage: storagemodel.Build(s)}, true)
			f := find(fs, "dmcrypt.workqueue", "/dev/mapper/"+tt.mapping)
			if f == nil || f.Status != check.Fail {
				t.Fatalf("no dmcrypt.workqueue finding on %s: %+v", tt.mapping, fired(fs, "dmcrypt.workqueue"))
			}
			for _, w := range tt.want {
				if !strings.Contains(f.Remediation, w) {
					t.Errorf("remediation does not say %q:\n%s", w, f.Remediation)
				}
			}
			for _, n := range append(tt.not, "cryptsetup") {
				if strings.Contains(f.Remediation, n) {
					t.Errorf("remediation says %q:\n%s", n, f.Remediation)
				}
			}
		})
	}
}
