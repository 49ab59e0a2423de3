package storagemodel

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/snapshot"
)

func bptr(b bool) *bool { return &b }

func ssd() *snapshot.Queue {
	return &snapshot.Queue{Rotational: bptr(false), LogicalBlockSize: 512, PhysicalBlockSize: 4096, Scheduler: "none"}
}

func disk(name, mm, model string, size uint64, holders ...string) snapshot.BlockDevice {
	return snapshot.BlockDevice{Name: name, MajorMinor: mm, Kind: snapshot.KindDisk, SizeBytes: size, Holders: holders,
		Queue: ssd(), Ident: &snapshot.Identity{Transport: "nvme", Model: model}}
}

func part(name, mm, parent string, holders ...string) snapshot.BlockDevice {
	return snapshot.BlockDevice{Name: name, MajorMinor: mm, Kind: snapshot.KindPartition, Parent: parent, SizeBytes: 1 << 30, Holders: holders}
}

func crypt(name, mm, dmName, params string, slaves []string, holders ...string) snapshot.BlockDevice {
	return snapshot.BlockDevice{Name: name, MajorMinor: mm, Kind: snapshot.KindDM, SizeBytes: 1 << 30, Slaves: slaves, Holders: holders,
		Queue: ssd(), DM: &snapshot.DM{Name: dmName, UUID: "CRYPT-LUKS2-0123-" + dmName,
			Targets: []snapshot.DMTarget{{Length: 2097152, Type: "crypt", Params: params}}}}
}

func mount(id int, mm, mp, fs string) snapshot.Mount {
	return snapshot.Mount{MountID: id, MajorMinor: mm, Root: "/", MountPoint: mp, FSType: fs, Source: "/dev/x"}
}

func snap(mounts []snapshot.Mount, devs ...snapshot.BlockDevice) *snapshot.Snapshot {
	return &snapshot.Snapshot{Manifest: snapshot.Manifest{FormatVersion: 1},
		Storage: &snapshot.Storage{Mounts: mounts, BlockDevices: devs}}
}

// kinds renders a path's layers as "depth:kind:name" for compact comparison.
func kinds(p Path) []string {
	var out []string
	for _, l := range p.Layers {
		out = append(out, strings.Repeat(" ", l.Depth)+l.Kind+":"+l.Name)
	}
	return out
}

func pathFor(t *testing.T, m *Model, subject string) Path {
	t.Helper()
	for _, p := range m.Paths {
		if p.Subject() == subject {
			return p
		}
	}
	t.Fatalf("no path %s in %+v", subject, m.Paths)
	return Path{}
}

const luksDefault = "aes-xts-plain64 redacted:512 0 259:1 32768"

func TestBuildChains(t *testing.T) {
	tests := []struct {
		name     string
		s        *snapshot.Snapshot
		subject  string
		want     []string
		wantEnc  int
		wantIncl string // substring of Incomplete, "" for complete
	}{
		{
			name: "ext4 on luks on nvme partition",
			s: snap([]snapshot.Mount{mount(1, "253:0", "/data", "ext4")},
				disk("nvme0n1", "259:0", "Samsung", 1<<40),
				part("nvme0n1p1", "259:1", "nvme0n1", "dm-0"),
				crypt("dm-0", "253:0", "data", luksDefault, []string{"nvme0n1p1"})),
			subject: "/data",
			want:    []string{"filesystem:/data", " dm-crypt:data", "  partition:nvme0n1p1", "   disk:nvme0n1"},
			wantEnc: 1,
		},
		{
			name: "crypt on crypt, and a loop file on it inside fscrypt",
			s: func() *snapshot.Snapshot {
				outer := mount(1, "253:1", "/srv", "xfs")
				s := snap([]snapshot.Mount{outer, mount(2, "7:0", "/srv/img", "ext4")},
					disk("sda", "8:0", "HDD", 1<<40, "dm-0"),
					crypt("dm-0", "253:0", "outer", luksDefault, []string{"sda"}, "dm-1"),
					crypt("dm-1", "253:1", "inner", luksDefault, []string{"dm-0"}),
					snapshot.BlockDevice{Name: "loop0", MajorMinor: "7:0", Kind: snapshot.KindLoop, SizeBytes: 1 << 30,
						Loop: &snapshot.Loop{BackingFile: "/srv/disk.img", BackingDevice: "253:1"}})
				s.Storage.Mounts[1].Fscrypt = &snapshot.Fscrypt{Version: 2, ContentsMode: "AES-256-XTS", FilenamesMode: "AES-256-CTS"}
				return s
			}(),
			subject: "/srv/img",
			want: []string{"fscrypt:AES-256-XTS", " filesystem:/srv/img", "  loop:loop0", "   filesystem:/srv",
				"    dm-crypt:inner", "     dm-crypt:outer", "      disk:sda"},
			wantEnc: 3,
		},
		{
			name: "md raid1 over two crypt legs counts one layer per chain",
			s: snap([]snapshot.Mount{mount(1, "9:0", "/r", "ext4")},
				disk("nvme0n1", "259:0", "A", 1<<40, "dm-0"), disk("nvme1n1", "259:2", "B", 1<<40, "dm-1"),
				crypt("dm-0", "253:0", "a", luksDefault, []string{"nvme0n1"}, "md0"),
				crypt("dm-1", "253:1", "b", luksDefault, []string{"nvme1n1"}, "md0"),
				snapshot.BlockDevice{Name: "md0", MajorMinor: "9:0", Kind: snapshot.KindMD, SizeBytes: 1 << 40,
					Slaves: []string{"dm-0", "dm-1"}, MD: &snapshot.MD{Level: "raid1"}}),
			subject: "/r",
			want:    []string{"filesystem:/r", " md:md0", "  dm-crypt:a", "   disk:nvme0n1", "  dm-crypt:b", "   disk:nvme1n1"},
			wantEnc: 1,
		},
		{
			name: "loop over a block device node follows the device",
			s: snap([]snapshot.Mount{mount(1, "7:1", "/l", "ext4"), mount(2, "0:5", "/dev", "devtmpfs")},
				disk("sdc", "8:32", "X", 1<<30, "loop1"),
				snapshot.BlockDevice{Name: "loop1", MajorMinor: "7:1", Kind: snapshot.KindLoop, SizeBytes: 1 << 30,
					Loop: &snapshot.Loop{BackingFile: "/dev/sdc", BackingDevice: "0:5", BackingBlockDevice: "8:32"}}),
			subject: "/l",
			want:    []string{"filesystem:/l", " loop:loop1", "  disk:sdc"},
		},
		{
			name: "loop cycle ends with a missing layer",
			s: snap([]snapshot.Mount{mount(1, "7:0", "/loop", "ext4")},
				snapshot.BlockDevice{Name: "loop0", MajorMinor: "7:0", Kind: snapshot.KindLoop, SizeBytes: 1 << 20,
					Loop: &snapshot.Loop{BackingFile: "/loop/self.img", BackingDevice: "7:0"}}),
			subject:  "/loop",
			want:     []string{"filesystem:/loop", " loop:loop0", "  missing:?"},
			wantIncl: "cycle",
		},
		{
			name: "slave missing from snapshot",
			s: snap([]snapshot.Mount{mount(1, "253:0", "/m", "ext4")},
				crypt("dm-0", "253:0", "m", luksDefault, []string{"sdz"})),
			subject:  "/m",
			want:     []string{"filesystem:/m", " dm-crypt:m", "  missing:?"},
			wantEnc:  1,
			wantIncl: "sdz, which is not in the snapshot",
		},
		{
			name: "garbage crypt params still count as encryption, named incomplete",
			s: snap([]snapshot.Mount{mount(1, "253:0", "/g", "ext4")},
				disk("sda", "8:0", "X", 1<<30, "dm-0"),
				crypt("dm-0", "253:0", "g", "this is not a crypt table at all", []string{"sda"})),
			subject:  "/g",
			want:     []string{"filesystem:/g", " dm-crypt:g", "  disk:sda"},
			wantEnc:  1,
			wantIncl: "malformed crypt table",
		},
		{
			name: "unknown target type is kept by name",
			s: snap([]snapshot.Mount{mount(1, "253:0", "/v", "xfs")},
				disk("sda", "8:0", "X", 1<<30, "dm-0"),
				snapshot.BlockDevice{Name: "dm-0", MajorMinor: "253:0", Kind: snapshot.KindDM, SizeBytes: 1 << 30, Slaves: []string{"sda"},
					DM: &snapshot.DM{Name: "vdo0", Targets: []snapshot.DMTarget{{Type: "vdo", Params: "V4 8:0 ..."}}}}),
			subject: "/v",
			want:    []string{"filesystem:/v", " dm-vdo:vdo0", "  disk:sda"},
		},
		{
			name: "mount of a device absent from the snapshot",
			s: snap([]snapshot.Mount{mount(1, "8:3", "/x", "ext4")},
				disk("sdb", "8:16", "X", 1<<30)),
			subject:  "/x",
			want:     []string{"filesystem:/x", " missing:?"},
			wantIncl: "device 8:3 of mount /x is not in the snapshot",
		},
		{
			name:    "unmounted zram",
			s:       snap(nil, snapshot.BlockDevice{Name: "zram0", MajorMinor: "252:0", Kind: snapshot.KindZram, SizeBytes: 8 << 30}),
			subject: "/dev/zram0",
			want:    []string{"zram:zram0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Build(tt.s)
			p := pathFor(t, m, tt.subject)
			if d := cmp.Diff(tt.want, kinds(p)); d != "" {
				t.Errorf("layers (-want +got):\n%s", d)
			}
			if p.EncryptionLayers != tt.wantEnc {
				t.Errorf("encryption layers = %d, want %d", p.EncryptionLayers, tt.wantEnc)
			}
			inc := strings.Join(p.Incomplete, "; ")
			if tt.wantIncl == "" && inc != "" {
				t.Errorf("unexpected incomplete: %s", inc)
			}
			if tt.wantIncl != "" && !strings.Contains(inc, tt.wantIncl) {
				t.Errorf("incomplete = %q, want it to contain %q", inc, tt.wantIncl)
			}
			if tt.wantIncl != "" && len(m.Problems) == 0 {
				t.Error("model problems empty for a partial path")
			}
		})
	}
}

func TestBuildSkipsVirtualAndHeld(t *testing.T) {
	s := snap([]snapshot.Mount{
		{MountID: 1, MajorMinor: "0:22", MountPoint: "/proc", FSType: "proc", Source: "proc"},
		mount(2, "253:0", "/data", "ext4"),
		mount(3, "253:0", "/bind/data", "ext4"),
	},
		disk("sda", "8:0", "X", 1<<30, "dm-0"),
		crypt("dm-0", "253:0", "d", luksDefault, []string{"sda"}),
		snapshot.BlockDevice{Name: "loop7", MajorMinor: "7:7", Kind: snapshot.KindLoop}, // detached: size 0
	)
	m := Build(s)
	if len(m.Paths) != 2 || m.Paths[0].MountPoint != "/data" || !m.Paths[1].Empty || m.Paths[1].Device != "loop7" {
		t.Fatalf("paths = %+v, want /data and the empty loop7", m.Paths)
	}
	if note := m.Paths[1].Layers[0].Note; note != "detached, no backing file" {
		t.Errorf("loop7 note %q", note)
	}
	if d := cmp.Diff([]string{"/bind/data"}, m.Paths[0].AlsoMountedAt); d != "" {
		t.Errorf("also mounted at (-want +got):\n%s", d)
	}
}

func TestBuildNilSafe(t *testing.T) {
	for _, s := range []*snapshot.Snapshot{nil, {}, {Storage: &snapshot.Storage{BlockDevices: []snapshot.BlockDevice{{}, {Name: "x"}, {Name: "x"}}}}} {
		if m := Build(s); m == nil || m.Paths == nil {
			t.Errorf("Build(%+v) = %+v, want a model with no paths", s, m)
		}
	}
}

func TestCloudFacts(t *testing.T) {
	const tempMB = 614400 // Standard_E16d_v5 temp disk 600 GiB, as IMDS reports it
	azureSized := func(size string, eah *bool) *snapshot.Cloud {
		return &snapshot.Cloud{Provider: "azure", Azure: &snapshot.AzureMeta{VMSize: size, EncryptionAtHost: eah, ResourceDiskSizeMB: tempMB}}
	}
	azure := func(eah *bool) *snapshot.Cloud { return azureSized("Standard_E16d_v4", eah) }
	v5 := func(eah *bool) *snapshot.Cloud { return azureSized("Standard_E16d_v5", eah) }
	osDisk := azureSCSI("sda", 30<<30, "{00000000-0000-8899-0000-000000000000}", "0:0:0:0")
	tmp := azureSCSI("sdb", tempMB<<20, "{00000000-0001-8899-0000-000000000000}", "1:0:1:0")
	sizeOnly := azureSCSI("sdb", tempMB<<20, "", "")
	type fact struct {
		id  string
		enc *bool
		by  string
	}
	tests := []struct {
		name string
		c    *snapshot.Cloud
		d    snapshot.BlockDevice
		want []fact // top (nearest the VM) first
	}{
		{"azure v4 eah temp disk", azure(bptr(true)), tmp, []fact{{"azure-eah-temp-scsi", bptr(true), ByHypervisor}}},
		{"azure v4 no eah temp disk", azure(bptr(false)), tmp, []fact{{"azure-temp-no-eah", bptr(false), ""}}},
		{"azure v5 eah temp disk: host over hardware", v5(bptr(true)), tmp, []fact{{"azure-eah-temp-scsi", bptr(true), ByHypervisor}, {"azure-v5-local-hardware", bptr(true), ByDrive}}},
		{"azure v5 no eah temp disk: hardware only", v5(bptr(false)), tmp, []fact{{"azure-v5-local-hardware", bptr(true), ByDrive}}},
		{"azure v5 os disk is not local", v5(bptr(false)), osDisk, []fact{{"azure-managed-sse", bptr(true), ByCloudStorage}}},
		{"azure no eah os disk", azure(bptr(false)), osDisk, []fact{{"azure-managed-sse", bptr(true), ByCloudStorage}}},
		{"azure eah os disk", azure(bptr(true)), osDisk, []fact{{"azure-eah-managed", bptr(true), ByHypervisor}}},
		{"azure eah unknown", azure(nil), tmp, []fact{{"azure-eah-unknown", nil, ""}}},
		{"azure nvme direct v2 eah", v5(bptr(true)), disk("nvme0n1", "259:0", "Microsoft NVMe Direct Disk v2", 440<<30),
			[]fact{{"azure-eah-temp-nvme", bptr(true), ByHypervisor}, {"azure-v5-local-hardware", bptr(true), ByDrive}}},
		// Size alone never identifies: both readings stay possible, encryption unknown.
		{"azure v5 eah size only: unknown", v5(bptr(true)), sizeOnly,
			[]fact{{"azure-unidentified/azure-eah-temp-scsi", nil, ""}, {"azure-unidentified/azure-v5-local-hardware", nil, ""}}},
		{"azure v4 no eah size only: managed reading has more layers", azure(bptr(false)), sizeOnly,
			[]fact{{"azure-unidentified/azure-managed-sse", nil, ""}}},
		{"aws instance store", &snapshot.Cloud{Provider: "aws"}, disk("nvme1n1", "259:1", "Amazon EC2 NVMe Instance Storage", 1<<40), []fact{{"aws-nitro-instance-store", bptr(true), ByDrive}}},
		{"aws ebs", &snapshot.Cloud{Provider: "aws"}, disk("nvme0n1", "259:0", "Amazon Elastic Block Store", 1<<40), []fact{{"aws-ebs", nil, ""}}},
		{"gcp local ssd", &snapshot.Cloud{Provider: "gcp"}, disk("nvme1n1", "259:1", "nvme_card", 375<<30), []fact{{"gcp-local-ssd", bptr(true), ByDrive}}},
		{"gcp pd", &snapshot.Cloud{Provider: "gcp"}, disk("nvme0n1", "259:0", "nvme_card-pd", 10<<30), []fact{{"gcp-persistent-disk", bptr(true), ByCloudStorage}}},
		{"no cloud", nil, osDisk, nil},
		{"ebs model on azure is not a fact", azure(bptr(true)), disk("nvme0n1", "259:0", "Amazon Elastic Block Store", 1), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []fact
			for _, cd := range lookupCloudDisk(tt.c, &tt.d) {
				if cd.Source == "" || !strings.HasPrefix(cd.Source, "https://") {
					t.Errorf("fact %s has no source link", cd.Fact)
				}
				if cd.Identity == nil || !strings.HasPrefix(cd.Identity.Source, "https://github.com/") {
					t.Errorf("fact %s: identity %+v names no rule source", cd.Fact, cd.Identity)
				}
				by := cd.EncryptedBy
				if cd.Encrypted == nil || !*cd.Encrypted {
					by = ""
				}
				got = append(got, fact{cd.Fact, cd.Encrypted, by})
			}
			if d := cmp.Diff(tt.want, got, cmp.AllowUnexported(fact{})); d != "" {
				t.Errorf("facts (-want +got):\n%s", d)
			}
		})
	}
	for _, f := range cloudFacts {
		if !strings.HasPrefix(f.source, "https://") {
			t.Errorf("cloud fact %s: source %q is not a link", f.id, f.source)
		}
	}
}

func azureSCSI(name string, size uint64, vmbus, addr string) snapshot.BlockDevice {
	return snapshot.BlockDevice{Name: name, Kind: snapshot.KindDisk, SizeBytes: size,
		Ident: &snapshot.Identity{Transport: "scsi", Vendor: "Msft    ", Model: "Virtual Disk    ", VMBusDeviceID: vmbus, SCSIAddress: addr}}
}

// TestIdentifyDisk: each cloud's identity rule fires on the attributes its
// own udev rule reads and stays silent otherwise; size never decides.
func TestIdentifyDisk(t *testing.T) {
	const tempMB = 614400
	az := &snapshot.Cloud{Provider: "azure", Azure: &snapshot.AzureMeta{VMSize: "Standard_E16d_v5", ResourceDiskSizeMB: tempMB}}
	aws := &snapshot.Cloud{Provider: "aws", AWS: &snapshot.AWSMeta{BlockDeviceMapping: map[string]string{"ami": "/dev/xvda", "root": "/dev/xvda"}}}
	gcp := &snapshot.Cloud{Provider: "gcp", GCP: &snapshot.GCPMeta{Disks: []snapshot.GCPDisk{{DeviceName: "persistent-disk-0", Type: "PERSISTENT"}}}}
	nvme := func(model string, nsid int) snapshot.BlockDevice {
		d := disk("nvme0n1", "259:0", model, 1<<30)
		d.Ident.Transport, d.Ident.NVMeNSID = "nvme", nsid
		return d
	}
	scsi := func(vendor, model string) snapshot.BlockDevice {
		d := disk("sdb", "8:16", model, 1<<30)
		d.Ident.Transport, d.Ident.Vendor = "scsi", vendor
		return d
	}
	// A temp disk whose size differs from IMDS (600 GiB + 1 MiB) and a data
	// disk of exactly the IMDS size.
	tempOddSize := azureSCSI("sdb", tempMB<<20+1<<20, "{00000000-0001-8899-0000-000000000000}", "1:0:1:0")
	dataSameSize := azureSCSI("sdc", tempMB<<20, "{f8b3781b-1e82-4818-a1c3-63d806ec15bb}", "3:0:0:0")
	tests := []struct {
		name      string
		c         *snapshot.Cloud
		d         snapshot.BlockDevice
		role      string // "" when no rule fires
		rule      string
		evidence  string // substring
		corrobora string // substring, "" for none
	}{
		{"azure gen1 resource by VMBus id", az, azureSCSI("sdb", tempMB<<20, "{00000000-0001-8899-0000-000000000000}", "1:0:1:0"),
			RoleTempDisk, "azure-scsi-vmbus", "matches ?00000000-0001-*", "agrees with the disk's 644245094400 bytes read as MiB"},
		{"azure temp disk of another size still found", az, tempOddSize,
			RoleTempDisk, "azure-scsi-vmbus", "(resource)", "disagrees with the disk's 644246142976 bytes; the VMBus device_id decides"},
		{"azure data disk of the temp disk's size is data", az, dataSameSize,
			RoleDataDisk, "azure-scsi-vmbus", "data controller scsi1), LUN 0", ""},
		{"azure gen1 root", az, azureSCSI("sda", 30<<30, "{00000000-0000-8899-0000-000000000000}", "0:0:0:0"),
			RoleOSDisk, "azure-scsi-vmbus", "(root)", ""},
		{"azure gen2 lun 0 root", az, azureSCSI("sda", 30<<30, "{f8b3781a-1e82-4818-a1c3-63d806ec15bb}", "0:0:0:0"),
			RoleOSDisk, "azure-scsi-vmbus", "LUN 0 (root)", ""},
		{"azure gen2 lun 1 resource", az, azureSCSI("sdb", 1<<30, "{F8B3781A-1E82-4818-A1C3-63D806EC15BB}", "0:0:0:1"),
			RoleTempDisk, "azure-scsi-vmbus", "LUN 1 (resource)", "disagrees"},
		{"azure gen2 lun 2 is neither", az, azureSCSI("sr0", 1<<30, "{f8b3781a-1e82-4818-a1c3-63d806ec15bb}", "0:0:0:2"),
			RoleUnidentified, "azure-scsi-vmbus", "neither root (0) nor resource (1)", ""},
		{"azure gen2 without address", az, azureSCSI("sdb", 1<<30, "{f8b3781a-1e82-4818-a1c3-63d806ec15bb}", ""),
			RoleUnidentified, "azure-scsi-vmbus", "no SCSI address", ""},
		{"azure gen2 malformed address", az, azureSCSI("sdb", 1<<30, "{f8b3781a-1e82-4818-a1c3-63d806ec15bb}", "0:0:x"),
			RoleUnidentified, "azure-scsi-vmbus", "not a SCSI address", ""},
		{"azure size only is not identified", az, azureSCSI("sdb", tempMB<<20, "", ""),
			RoleUnidentified, "azure-scsi-vmbus", "without a VMBus device_id", ""},
		{"azure malformed device_id", az, azureSCSI("sdb", tempMB<<20, "{zz}", ""),
			RoleUnidentified, "azure-scsi-vmbus", "not a VMBus device_id", ""},
		{"azure unknown controller", az, azureSCSI("sdb", 1<<30, "{12345678-0000-0000-0000-000000000000}", "2:0:0:0"),
			RoleUnidentified, "azure-scsi-vmbus", "matches no Azure disk rule", ""},
		{"azure other vendor is not azure's", az, scsi("ATA", "Virtual Disk"), "", "", "", ""},
		{"azure nvme direct v1", az, nvme("Microsoft NVMe Direct Disk", 1), RoleTempDisk, "azure-nvme-direct", "type=local", ""},
		{"azure nvme direct v2", az, nvme("Microsoft NVMe Direct Disk v2", 1), RoleTempDisk, "azure-nvme-direct", "v2", ""},
		{"azure nvme remote os", az, nvme("MSFT NVMe Accelerator v1.0", 1), RoleOSDisk, "azure-nvme-remote", "nsid 1", ""},
		{"azure nvme remote data", az, nvme("MSFT NVMe Accelerator v1.0", 5), RoleDataDisk, "azure-nvme-remote", "(LUN 3)", ""},
		{"azure nvme remote no nsid", az, nvme("MSFT NVMe Accelerator v1.0", 0), RoleManagedDisk, "azure-nvme-remote", "nsid not collected", ""},
		{"azure direct disk v3 is unknown", az, nvme("Microsoft NVMe Direct Disk v3", 1), "", "", "", ""},
		{"aws ebs", aws, nvme("Amazon Elastic Block Store", 1), RoleEBS, "aws-ebs", "Amazon Elastic Block Store", "lists 2 EBS"},
		{"aws instance store", aws, nvme("Amazon EC2 NVMe Instance Storage", 1), RoleInstanceStore, "aws-instance-store", "Instance Storage", "no ephemeralN entry"},
		{"aws other nvme", aws, nvme("Samsung SSD 980 PRO 1TB", 1), "", "", "", ""},
		{"aws model on gcp", gcp, nvme("Amazon Elastic Block Store", 1), "", "", "", ""},
		{"gcp nvme local ssd", gcp, nvme("nvme_card", 1), RoleLocalSSD, "gcp-nvme-local-ssd", "nvme_card", "lists no non-PERSISTENT"},
		{"gcp nvme local ssd multi-controller", gcp, nvme("nvme_card1", 1), RoleLocalSSD, "gcp-nvme-local-ssd", "nvme_card1", "no non-PERSISTENT"},
		{"gcp nvme pd", gcp, nvme("nvme_card-pd", 2), RolePersistentDisk, "gcp-nvme-pd", "nvme_card-pd", "lists 1 PERSISTENT"},
		{"gcp nvme_cardx is not a card", gcp, nvme("nvme_cardx", 1), "", "", "", ""},
		{"gcp scsi pd", gcp, scsi("Google  ", "PersistentDisk  "), RolePersistentDisk, "gcp-scsi", "PersistentDisk", "lists 1 PERSISTENT"},
		{"gcp scsi local ssd", gcp, scsi("Google", "EphemeralDisk"), RoleLocalSSD, "gcp-scsi", "EphemeralDisk", "no non-PERSISTENT"},
		{"gcp scsi other vendor", gcp, scsi("QEMU", "PersistentDisk"), "", "", "", ""},
		{"no cloud, no identity", nil, nvme("Amazon Elastic Block Store", 1), "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := identifyDisk(tt.c, &tt.d)
			if tt.role == "" {
				if id != nil {
					t.Fatalf("identified as %+v, want no rule to fire", id)
				}
				return
			}
			if id == nil {
				t.Fatalf("no rule fired, want %s by %s", tt.role, tt.rule)
			}
			if id.Role != tt.role || id.Rule != tt.rule || !strings.Contains(id.Evidence, tt.evidence) {
				t.Errorf("got %s by %s (%q), want %s by %s (… %q …)", id.Role, id.Rule, id.Evidence, tt.role, tt.rule, tt.evidence)
			}
			if !strings.HasPrefix(id.Source, "https://github.com/") {
				t.Errorf("rule source %q is not a repository file", id.Source)
			}
			if !strings.Contains(id.Corroboration, tt.corrobora) || tt.corrobora == "" && id.Corroboration != "" {
				t.Errorf("corroboration %q, want … %q …", id.Corroboration, tt.corrobora)
			}
		})
	}
}

func TestAzureGeneration(t *testing.T) {
	for size, want := range map[string]int{"Standard_E16d_v5": 5, "Standard_D8ds_v6": 6, "Standard_D4s_v3": 3, "Standard_A1": 0, "Standard_L8s_v10": 10, "": 0} {
		if got := azureGeneration(size); got != want {
			t.Errorf("azureGeneration(%q) = %d, want %d", size, got, want)
		}
	}
}

func TestBuildBoundsSharedBranches(t *testing.T) {
	// 40 dm devices, each built twice on the next: 2^40 chains if walked naively.
	var devs []snapshot.BlockDevice
	for i := 0; i < 40; i++ {
		name := fmt.Sprintf("dm-%d", i)
		next := fmt.Sprintf("dm-%d", i+1)
		d := snapshot.BlockDevice{Name: name, MajorMinor: fmt.Sprintf("253:%d", i), Kind: snapshot.KindDM, SizeBytes: 1,
			Slaves: []string{next, next}, DM: &snapshot.DM{Name: name, Targets: []snapshot.DMTarget{{Type: "linear"}}}}
		if i > 0 {
			d.Holders = []string{fmt.Sprintf("dm-%d", i-1)}
		}
		devs = append(devs, d)
	}
	devs = append(devs, disk("dm-40", "8:0", "X", 1, "dm-39"))
	m := Build(snap([]snapshot.Mount{mount(1, "253:0", "/x", "ext4")}, devs...))
	p := pathFor(t, m, "/x")
	if len(p.Layers) > maxLayers+2 || len(p.Incomplete) == 0 {
		t.Fatalf("%d layers, incomplete %v", len(p.Layers), p.Incomplete)
	}
}

// TestDMTableNotRead: a dm device whose table was not read (the ioctl was
// skipped for a foreign tree, or failed) is unknown, not an empty table:
// the path is incomplete and the layer's encryption unknown, never "0
// encryption layers" as a fact.
func TestDMTableNotRead(t *testing.T) {
	unread := crypt("dm-0", "253:0", "luks-x", "", []string{"sda"})
	unread.DM.Targets = nil
	unread.DM.TableNotRead = "live-only source not used"
	empty := crypt("dm-1", "253:1", "notable", "", []string{"sdb"})
	empty.DM.Targets = nil
	m := Build(snap([]snapshot.Mount{mount(1, "253:0", "/data", "ext4"), mount(2, "253:1", "/empty", "ext4")},
		disk("sda", "8:0", "X", 1<<30, "dm-0"), unread, disk("sdb", "8:16", "X", 1<<30, "dm-1"), empty))
	p := pathFor(t, m, "/data")
	if p.EncryptionLayers != 0 || p.UnknownEncryptionLayers != 1 || len(p.Incomplete) == 0 {
		t.Errorf("unread table: %d known, %d unknown, incomplete %v; want 0, 1, incomplete", p.EncryptionLayers, p.UnknownEncryptionLayers, p.Incomplete)
	}
	if l := p.Layers[1]; !strings.Contains(l.Note, "not read: live-only source not used") || !l.EncryptionUnknown {
		t.Errorf("layer %+v", l)
	}
	// A table read and found empty stays a fact.
	if p := pathFor(t, m, "/empty"); p.UnknownEncryptionLayers != 0 || len(p.Incomplete) != 0 || p.Layers[1].Note != "device-mapper table is empty" {
		t.Errorf("empty table: %+v", p)
	}
}
