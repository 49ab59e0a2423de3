package snapshot

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/safetext"
)

// validBase is a snapshot with every section filled, valid by every rule;
// each table row changes one field of a fresh copy.
func validBase() *Snapshot {
	rot := true
	speed := int64(10000)
	return &Snapshot{
		Manifest: Manifest{
			FormatVersion: FormatVersion, Tool: "slowpath test", Hostname: "node-a",
			Fixture:     "written for the test\nsecond line",
			LiveSources: &LiveSources{Mode: "auto", Used: true},
			Errors: []CollectError{{Collector: "net.sysctl", Path: "/proc/sys/net/core/netdev_budget_usecs",
				Kind: hostfs.KindMissing, Message: "open: no such file or directory\n\tdetail"}},
		},
		Host: &Host{
			KernelRelease: "6.1.0-13-amd64", Arch: "x86_64",
			BootID:    "8c7cf0a2-5b0e-4f5e-9a0c-3f1f3c1d2e4b",
			MachineID: "3f1f3c1d2e4b4f5e9a0c8c7cf0a25b0e",
			NumCPU:    2, CPUModel: "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz",
			CPUFlags: []string{"aes", "avx2", "sha_ni"},
			DMI:      &DMI{SysVendor: "Amazon EC2", ProductName: "i4i.2xlarge"},
			Crypto:   []CryptoAlg{{Name: "xts(aes)", Driver: "xts-aes-aesni", Module: "aesni_intel", Priority: 401, Type: "skcipher"}},
			Cipher: &CipherLimit{Algorithm: "xts(aes)", KeyBits: 512, SectorSize: 512, Method: "af_alg",
				Driver: "xts-aes-aesni", BytesPerSecPerCore: 2.5e9, What: "one core", DurationMS: 150, Why: "dm crypt target data (dm-0)"},
		},
		Storage: &Storage{
			Mounts: []Mount{{MountID: 22, ParentID: 1, MajorMinor: "253:0", Root: "/", MountPoint: "/data",
				Options: "rw,relatime", FSType: "ext4", Source: "/dev/mapper/data", SuperOpts: "rw", FscryptStatus: FscryptNotEncrypted}},
			BlockDevices: []BlockDevice{
				{Name: "nvme0n1", MajorMinor: "259:0", Kind: KindDisk, SizeBytes: 1 << 30, Holders: []string{"dm-0"},
					Queue: &Queue{Rotational: &rot, LogicalBlockSize: 512, PhysicalBlockSize: 4096, Scheduler: "none",
						Schedulers: []string{"none", "mq-deadline"}, NrRequests: 1023, ReadAheadKB: 128},
					Ident: &Identity{Transport: "nvme", Model: "Amazon EC2 NVMe Instance Storage", NVMeNSID: 1},
					Stat:  &BlockStat{Fields: 17, ReadIOs: 10}},
				{Name: "nvme0n1p1", MajorMinor: "259:1", Kind: KindPartition, Parent: "nvme0n1", SizeBytes: 1 << 20},
				{Name: "dm-0", MajorMinor: "253:0", Kind: KindDM, Slaves: []string{"nvme0n1"}, SizeBytes: 1 << 29,
					DM: &DM{Name: "data", UUID: "CRYPT-LUKS2-0123456789abcdef0123456789abcdef-data",
						Targets: []DMTarget{{Start: 0, Length: 1 << 20, Type: "crypt", Params: "aes-xts-plain64 redacted:512 0 259:0 32768"}}}},
				{Name: "loop0", MajorMinor: "7:0", Kind: KindLoop,
					Loop: &Loop{BackingFile: "/var/lib/img.raw (deleted)", BackingDevice: "253:0"}},
				{Name: "sdb", MajorMinor: "8:16", Kind: KindDisk,
					Ident: &Identity{Transport: "scsi", Vendor: "Msft", Model: "Virtual Disk",
						VMBusDeviceID: "{00000000-0001-8899-0000-000000000000}", SCSIAddress: "0:0:0:1"}},
			},
		},
		Cloud: &Cloud{Provider: "aws", DetectedBy: "dmi", InstanceType: "i4i.2xlarge", Region: "eu-west-1",
			AWS: &AWSMeta{InstanceType: "i4i.2xlarge", BlockDeviceMapping: map[string]string{"ami": "/dev/xvda"}}},
		Engines: &Engines{Processes: []Engine{{Engine: EngineMariaDB, PID: 812, Comm: "mariadbd", DataDir: "/var/lib/mysql",
			DataDev: "253:0", ConfigFiles: []string{"/etc/mysql/my.cnf", "/etc/mysql/mariadb.conf.d/50-server.cnf"},
			Encryption: []EngineEncryption{{Setting: "innodb_encrypt_tables", Value: "FORCE", Enabled: true,
				Source: "/etc/mysql/mariadb.conf.d/50-server.cnf", Covers: []string{CoversTables}, KeyManager: KeyManagerKeyfile, Cipher: "AES_CTR"}},
			Notes: []string{"pg_tde is loaded"}}}},
		Net: &Net{
			Interfaces: []NetInterface{
				{Name: "eth0", Ifindex: 2, Iflink: 2, MTU: 9001, OperState: "up", SpeedMbps: &speed,
					Driver: "ena", DriverVersion: "2.8.0", BusInfo: "0000:00:05.0", Master: "bond0",
					Ring:     &Ring{RX: 1024, RXMax: 16384, TX: 1024, TXMax: 1024},
					Channels: &Channels{Combined: 8, MaxCombined: 8},
					Queues:   []NetQueue{{Name: "rx-0", RPSCPUs: "00000000,00000003", RPSFlowCnt: 0}, {Name: "tx-0", XPSCPUs: "1"}},
					IRQs:     []IRQ{{Number: 27, Name: "ens5-Tx-Rx-0", AffinityList: "0-1,3"}},
				},
				{Name: "bond0", Ifindex: 3, Kind: "bond", Lower: []string{"eth0"}, Unsupported: []string{"ring", "stats"}},
			},
			Sysctls:     map[string]int64{"net.core.netdev_max_backlog": 1000, "net.core.somaxconn": 4096},
			DropReasons: &DropReasons{Status: "yes", Source: "/sys/kernel/tracing/events/skb/kfree_skb/format", KernelBTF: "yes"},
			Samples: []NetSample{
				{MonotonicNS: 1000, SoftnetColumns: 13, Softnet: []SoftnetCPU{{CPU: 0, Processed: 5}},
					Interfaces: []NetCounters{{Name: "eth0", Stats: map[string]uint64{"rx_dropped": 1},
						Driver: map[string]uint64{"pps_allowance_exceeded": 0}, Qdisc: &QdiscCounters{Kind: "mq"}}},
					SNMP: map[string]int64{"Udp.RcvbufErrors": 0}},
				{MonotonicNS: 2000},
			},
		},
	}
}

// rule is one table row: values that pass and values that fail at path;
// goodV and badV show the values in test output.
type rule struct {
	path        string
	good, bad   []func(*Snapshot)
	goodV, badV []string
}

// luks is the LUKS header of the dm device of the base snapshot, made
// when it has none, so a rule can move one of its fields.
func luks(s *Snapshot) *LUKSHeader {
	d := s.Storage.BlockDevices[2].DM
	if d.LUKS == nil {
		d.LUKS = &LUKSHeader{Device: "nvme0n1", Version: 2, Keyslots: []int{0, 1},
			Tokens: []LUKSToken{{Type: "systemd-tpm2", Keyslots: []int{1}}}, Flags: []string{"allow-discards"}}
	}
	return d.LUKS
}

func field[T any](path string, f func(*Snapshot) *T, good, bad []T) rule {
	r := rule{path: path}
	for _, v := range good {
		r.good = append(r.good, func(s *Snapshot) { *f(s) = v })
		r.goodV = append(r.goodV, show(v))
	}
	for _, v := range bad {
		r.bad = append(r.bad, func(s *Snapshot) { *f(s) = v })
		r.badV = append(r.badV, show(v))
	}
	return r
}

func show(v any) string {
	if s, ok := v.(string); ok {
		return showString(s)
	}
	return fmt.Sprintf("%#v", v)
}

// sysctlKeyRow is a row for one key of net.sysctls: map keys have no
// address, so the row replaces the map.
func sysctlKeyRow(k string, good bool) rule {
	set := func(s *Snapshot) { s.Net.Sysctls = map[string]int64{k: 1} }
	if good {
		return rule{path: "net.sysctls", good: []func(*Snapshot){set}, goodV: []string{showString(k)}}
	}
	return rule{path: "net.sysctls", bad: []func(*Snapshot){set}, badV: []string{showString(k)}}
}

func sysctlValueRow(k string, good, bad []int64) rule {
	r := rule{path: fmt.Sprintf("net.sysctls[%q]", k)}
	for _, v := range good {
		r.good = append(r.good, func(s *Snapshot) { s.Net.Sysctls[k] = v })
		r.goodV = append(r.goodV, fmt.Sprint(v))
	}
	for _, v := range bad {
		r.bad = append(r.bad, func(s *Snapshot) { s.Net.Sysctls[k] = v })
		r.badV = append(r.badV, fmt.Sprint(v))
	}
	return r
}

func TestValidateRules(t *testing.T) {
	if err := validBase().Validate(); err != nil {
		t.Fatalf("base snapshot: %v", err)
	}
	r := strings.Repeat
	nc := func(s *Snapshot) *NetInterface { return &s.Net.Interfaces[0] }
	bd := func(s *Snapshot, i int) *BlockDevice { return &s.Storage.BlockDevices[i] }
	ifnameGood := []string{"a;reboot", "$(id)", "`id`", "x|y&z>w", "é", r("a", 15), "eth0.100", "\u00ff"}
	ifnameBad := []string{"", ".", "..", "a/b", "a:b", "a b", "a\tb", "a\nb", "a\vb", "a\fb", "a\rb", r("a", 16), "à" /* UTF-8 C3 A0: the kernel's isspace(0xA0) */, "a\x00b"}
	rules := []rule{
		field("net.interfaces[0].name", func(s *Snapshot) *string { return &nc(s).Name }, ifnameGood, ifnameBad),
		field("net.interfaces[0].name", func(s *Snapshot) *string { return &nc(s).Name },
			nil, []string{"a\xffb" /* the kernel takes it; JSON cannot carry it */, "\x1b[2J", "a\u009bb", "a\x7fb"}),
		field("net.interfaces[0].master", func(s *Snapshot) *string { return &nc(s).Master }, []string{"", "bond;0"}, []string{"bond 0", r("b", 16)}),
		field("net.interfaces[1].lower[0]", func(s *Snapshot) *string { return &s.Net.Interfaces[1].Lower[0] }, []string{"eth0"}, []string{"", "a/b"}),
		field("net.samples[0].interfaces[0].name", func(s *Snapshot) *string { return &s.Net.Samples[0].Interfaces[0].Name }, []string{"$(x)"}, []string{"a\nb", "a:1"}),
		field("net.interfaces[1].name", func(s *Snapshot) *string { return &s.Net.Interfaces[1].Name }, []string{"bond1"}, []string{"eth0" /* duplicate */}),
		field("net.interfaces[0].operstate", func(s *Snapshot) *string { return &nc(s).OperState }, []string{"", "lowerlayerdown", "dormant"}, []string{"sideways", "UP"}),
		field("net.interfaces[0].driver", func(s *Snapshot) *string { return &nc(s).Driver }, []string{"", r("d", 31)}, []string{r("d", 32), "a\nb"}),
		field("net.interfaces[0].kind", func(s *Snapshot) *string { return &nc(s).Kind }, []string{"", "veth"}, []string{"ve th"}),
		field("net.interfaces[0].mtu", func(s *Snapshot) *int { return &nc(s).MTU }, []int{0, 68, 65536, math.MaxInt32}, []int{-1, math.MaxInt32 + 1}),
		field("net.interfaces[0].ifindex", func(s *Snapshot) *int { return &nc(s).Ifindex }, []int{0, 1}, []int{-1}),
		// A ring above its maximum is what a driver that lowered the
		// maximum reports (netdevsim's debugfs; test/vm TestFixApplyRollback).
		field("net.interfaces[0].ring.rx", func(s *Snapshot) *uint32 { return &nc(s).Ring.RX }, []uint32{0, 16384, 16385}, nil),
		field("net.interfaces[0].ring.tx", func(s *Snapshot) *uint32 { return &nc(s).Ring.TX }, []uint32{1024, 1025}, nil),
		// Above the maximum is what a driver that lowered its maximum
		// reports (netdevsim's debugfs): accepted.
		field("net.interfaces[0].channels.combined", func(s *Snapshot) *uint32 { return &nc(s).Channels.Combined }, []uint32{1, 8, 9}, nil),
		field("net.interfaces[0].queues[0].name", func(s *Snapshot) *string { return &nc(s).Queues[0].Name }, []string{"rx-15", "tx-0"}, []string{"rx-", "rx-01", "foo", "rx-0/../x"}),
		field("net.interfaces[0].queues[0].rps_cpus", func(s *Snapshot) *string { return &nc(s).Queues[0].RPSCPUs }, []string{"", "ff,ffffffff"}, []string{"0x3", "3;id"}),
		field("net.interfaces[0].irqs[0].affinity_list", func(s *Snapshot) *string { return &nc(s).IRQs[0].AffinityList }, []string{"", "0-3,8"}, []string{"0-1;x", "all"}),
		field("net.interfaces[0].irqs[0].name", func(s *Snapshot) *string { return &nc(s).IRQs[0].Name }, []string{"mlx5_comp3@pci:0002:00:02.0"}, []string{"a\x1bb"}),
		field("net.interfaces[1].unsupported[0]", func(s *Snapshot) *string { return &s.Net.Interfaces[1].Unsupported[0] }, []string{"drvinfo", "channels"}, []string{"everything"}),
		field("net.samples[0].softnet_columns", func(s *Snapshot) *int { return &s.Net.Samples[0].SoftnetColumns }, []int{0, 9, 10, 11, 13, 15}, []int{1, 8, -1, 65}),
		field("net.samples[0].softnet[0].cpu", func(s *Snapshot) *int { return &s.Net.Samples[0].Softnet[0].CPU }, []int{0, 127}, []int{-1}),
		field("net.samples[1].monotonic_ns", func(s *Snapshot) *int64 { return &s.Net.Samples[1].MonotonicNS }, []int64{1000, 5000}, []int64{999}),
		field("net.samples[0].monotonic_ns", func(s *Snapshot) *int64 { return &s.Net.Samples[0].MonotonicNS }, []int64{0}, []int64{-1}),
		field("net.samples[0].interfaces[0].qdisc.kind", func(s *Snapshot) *string { return &s.Net.Samples[0].Interfaces[0].Qdisc.Kind }, []string{"fq_codel"}, []string{"", r("q", 16)}),
		field("net.drop_reasons.status", func(s *Snapshot) *string { return &s.Net.DropReasons.Status }, []string{"no", "unknown"}, []string{"", "maybe"}),

		field("storage.block_devices[0].name", func(s *Snapshot) *string { return &bd(s, 0).Name }, []string{"sda", "a b;c", r("n", 35)}, []string{"", ".", "..", "a/b", r("n", 36), "a\nb"}),
		field("storage.block_devices[1].name", func(s *Snapshot) *string { return &bd(s, 1).Name }, []string{"nvme0n1p2"}, []string{"nvme0n1" /* duplicate */}),
		field("storage.block_devices[1].parent", func(s *Snapshot) *string { return &bd(s, 1).Parent }, []string{"", "sda"}, []string{"../sda", "."}),
		field("storage.block_devices[2].slaves[0]", func(s *Snapshot) *string { return &bd(s, 2).Slaves[0] }, []string{"sda1"}, []string{"", "x/y"}),
		field("storage.block_devices[0].holders[0]", func(s *Snapshot) *string { return &bd(s, 0).Holders[0] }, []string{"dm-1"}, []string{"dm-1\n"}),
		field("storage.block_devices[0].major_minor", func(s *Snapshot) *string { return &bd(s, 0).MajorMinor },
			[]string{"0:0", "4095:1048575", "259:0"}, []string{"", "259", "4096:0", "1:1048576", "01:2", "1:02", "-1:2", "+1:2", "a:b", "1:2:3", " 1:2"}),
		field("storage.mounts[0].major_minor", func(s *Snapshot) *string { return &s.Storage.Mounts[0].MajorMinor }, []string{"0:25"}, []string{"0x1:0"}),
		field("storage.block_devices[3].loop.backing_device", func(s *Snapshot) *string { return &bd(s, 3).Loop.BackingDevice }, []string{"", "8:1"}, []string{"8-1"}),
		field("storage.block_devices[0].kind", func(s *Snapshot) *string { return &bd(s, 0).Kind }, []string{KindZram, KindOther}, []string{"", "tape"}),
		field("storage.block_devices[0].size_bytes", func(s *Snapshot) *uint64 { return &bd(s, 0).SizeBytes }, []uint64{0, 512, 1 << 40}, []uint64{513, 1}),
		field("storage.block_devices[0].stat.fields", func(s *Snapshot) *int { return &bd(s, 0).Stat.Fields }, []int{11, 15, 17, 20}, []int{0, 10, 12, 14, 16, 65}),
		field("storage.block_devices[0].queue.logical_block_size", func(s *Snapshot) *int { return &bd(s, 0).Queue.LogicalBlockSize }, []int{0, 512, 4096}, []int{-512, 256, 1000, 131072}),
		field("storage.block_devices[0].queue.physical_block_size", func(s *Snapshot) *int { return &bd(s, 0).Queue.PhysicalBlockSize }, []int{0, 512, 1 << 20}, []int{256, 3000}),
		field("storage.block_devices[0].queue.scheduler", func(s *Snapshot) *string { return &bd(s, 0).Queue.Scheduler }, []string{"", "mq-deadline"}, []string{"mq deadline", r("s", 16)}),
		field("storage.block_devices[0].queue.nr_requests", func(s *Snapshot) *int { return &bd(s, 0).Queue.NrRequests }, []int{0}, []int{-1}),
		field("storage.block_devices[0].identity.nvme_nsid", func(s *Snapshot) *int { return &bd(s, 0).Ident.NVMeNSID }, []int{0, 1, 0xFFFFFFFE}, []int{-1, 0xFFFFFFFF}),
		field("storage.block_devices[0].identity.transport", func(s *Snapshot) *string { return &bd(s, 0).Ident.Transport }, []string{"", "virtio"}, []string{"firewire"}),
		field("storage.block_devices[4].identity.vmbus_device_id", func(s *Snapshot) *string { return &bd(s, 4).Ident.VMBusDeviceID }, []string{"", "{F8B3781A-1E82-4818-A1C3-63D806EC15BB}"}, []string{"f8b3781a-1e82-4818-a1c3-63d806ec15bb", "{x}"}),
		field("storage.block_devices[4].identity.scsi_address", func(s *Snapshot) *string { return &bd(s, 4).Ident.SCSIAddress }, []string{"", "1:0:1:0"}, []string{"1:0:1", "a:b:c:d"}),
		field("storage.block_devices[2].dm.name", func(s *Snapshot) *string { return &bd(s, 2).DM.Name },
			[]string{"a b;c", "$(id)", "luks-" + r("x", 122)}, []string{"", "a/b", "control", ".", "..", r("x", 128), "a\nb"}),
		field("storage.block_devices[2].dm.uuid", func(s *Snapshot) *string { return &bd(s, 2).DM.UUID }, []string{"", r("u", 128)}, []string{r("u", 129), "a\x00b"}),
		field("storage.block_devices[2].dm.luks.tokens[0].type", func(s *Snapshot) *string { return &luks(s).Tokens[0].Type },
			[]string{"systemd-tpm2", "luks2-keyring", "clevis", r("t", 64)}, []string{"", "a b", "$(id)", "-x", "x\n#", r("t", 65)}),
		field("storage.block_devices[2].dm.luks.flags[0]", func(s *Snapshot) *string { return &luks(s).Flags[0] }, []string{"no-read-workqueue"}, []string{"a;b", ""}),
		field("storage.block_devices[2].dm.luks.keyslots[0]", func(s *Snapshot) *int { return &luks(s).Keyslots[0] }, []int{0, 31}, []int{-1, 32}),
		field("storage.block_devices[2].dm.luks.tokens[0].keyslots[0]", func(s *Snapshot) *int { return &luks(s).Tokens[0].Keyslots[0] }, []int{1}, []int{32}),
		field("storage.block_devices[2].dm.luks.version", func(s *Snapshot) *int { return &luks(s).Version }, []int{0, 1, 2}, []int{3, -1}),
		field("storage.block_devices[2].dm.luks.device", func(s *Snapshot) *string { return &luks(s).Device }, []string{"", "nvme0n1"}, []string{"a b", "x\ny", "../nvme0n1", "sda1" /* not beneath */}),
		field("storage.block_devices[2].dm.targets[0].type", func(s *Snapshot) *string { return &bd(s, 2).DM.Targets[0].Type }, []string{"thin-pool", "snapshot-origin"}, []string{"", r("t", 16), "cry pt"}),
		field("storage.block_devices[2].dm.targets[0].params", func(s *Snapshot) *string { return &bd(s, 2).DM.Targets[0].Params },
			[]string{"", "0 8:16 0", r("p ", 1000)}, []string{"a\nb", "a\x00b", r("p", 64<<10+1)}),
		field("storage.mounts[0].mount_point", func(s *Snapshot) *string { return &s.Storage.Mounts[0].MountPoint },
			[]string{"/", "/media/My Disk", "/srv/a;b", "/x (deleted)"}, []string{"", "data", "/a/../b", "/a/./b", "/a/", "//a", "/a\nb", "/a\x00", "/a\tb", "/a\u2028b"}),
		field("storage.mounts[0].root", func(s *Snapshot) *string { return &s.Storage.Mounts[0].Root },
			[]string{"/", "/var/lib/x", "/etc/hosts//deleted", "net:[4026532216]"}, []string{"", "x", "/a/./b", "net:[x]", ":[1]", "//deleted"}),
		field("storage.mounts[0].fs_type", func(s *Snapshot) *string { return &s.Storage.Mounts[0].FSType }, []string{"fuse.sshfs", "xfs"}, []string{"", "ext4\n"}),
		field("storage.mounts[0].mount_id", func(s *Snapshot) *int { return &s.Storage.Mounts[0].MountID }, []int{0}, []int{-1}),
		field("storage.mounts[0].fscrypt_status", func(s *Snapshot) *string { return &s.Storage.Mounts[0].FscryptStatus }, []string{"", FscryptUnsupported}, []string{"yes"}),
		field("storage.block_devices[3].loop.backing_file", func(s *Snapshot) *string { return &bd(s, 3).Loop.BackingFile },
			[]string{"/img", "/memfd:x (deleted)"}, []string{"", "img", "/a/../img", "/img\n"}),

		field("host.kernel_release", func(s *Snapshot) *string { return &s.Host.KernelRelease }, []string{"", "6.8.0-1015-azure", r("k", 64)}, []string{"6.1 x", r("k", 65), "6.1\x1b"}),
		field("host.arch", func(s *Snapshot) *string { return &s.Host.Arch }, []string{"aarch64"}, []string{"x86 64"}),
		field("host.boot_id", func(s *Snapshot) *string { return &s.Host.BootID },
			[]string{"", "00000000-0000-4000-8000-000000000000", "ffffffff-ffff-4fff-bfff-ffffffffffff"},
			[]string{"8C7CF0A2-5B0E-4F5E-9A0C-3F1F3C1D2E4B", "8c7cf0a25b0e4f5e9a0c3f1f3c1d2e4b", "8c7cf0a2-5b0e-1f5e-9a0c-3f1f3c1d2e4b",
				"8c7cf0a2-5b0e-4f5e-7a0c-3f1f3c1d2e4b", "8c7cf0a2-5b0e-4f5e-9a0c-3f1f3c1d2e4", "8c7cf0a2-5b0e-4f5e-9a0c-3f1f3c1d2e4b\n"}),
		field("host.machine_id", func(s *Snapshot) *string { return &s.Host.MachineID }, []string{"", r("a", 32)},
			[]string{r("A", 32), r("a", 31), r("a", 33), r("0", 32), r("g", 32)}),
		field("host.num_cpu", func(s *Snapshot) *int { return &s.Host.NumCPU }, []int{0, 1, 8192}, []int{-1, 1<<16 + 1}),
		field("host.cpu_flags[0]", func(s *Snapshot) *string { return &s.Host.CPUFlags[0] }, []string{"vaes"}, []string{"", "a b", r("f", 65)}),
		field("host.dmi.sys_vendor", func(s *Snapshot) *string { return &s.Host.DMI.SysVendor }, []string{"", "Microsoft Corporation"}, []string{"a\x07b", r("v", 1025)}),
		field("host.crypto[0].name", func(s *Snapshot) *string { return &s.Host.Crypto[0].Name }, []string{r("c", 127)}, []string{"", r("c", 128)}),
		field("host.crypto[0].driver", func(s *Snapshot) *string { return &s.Host.Crypto[0].Driver }, []string{"aes-generic"}, []string{"", "a b"}),
		field("host.crypto[0].module", func(s *Snapshot) *string { return &s.Host.Crypto[0].Module }, []string{"", "kernel", r("m", 55)}, []string{r("m", 56)}),
		field("host.cipher.bytes_per_sec_per_core", func(s *Snapshot) *float64 { return &s.Host.Cipher.BytesPerSecPerCore },
			[]float64{0, 1.5e9}, []float64{-1, math.NaN(), math.Inf(1)}),
		field("host.cipher.method", func(s *Snapshot) *string { return &s.Host.Cipher.Method }, []string{"user-space"}, []string{"", "gpu"}),
		field("host.cipher.duration_ms", func(s *Snapshot) *int64 { return &s.Host.Cipher.DurationMS }, []int64{0}, []int64{-1}),

		field("cloud.provider", func(s *Snapshot) *string { return &s.Cloud.Provider }, []string{"azure", "gcp"}, []string{"", "digitalocean", "AWS"}),
		field("cloud.detected_by", func(s *Snapshot) *string { return &s.Cloud.DetectedBy }, []string{"flag"}, []string{"guess"}),
		field("cloud.instance_type", func(s *Snapshot) *string { return &s.Cloud.InstanceType }, []string{"", "Standard_E16d_v5"}, []string{"a b", "a;\nb", r("i", 129)}),
		field("cloud.region", func(s *Snapshot) *string { return &s.Cloud.Region }, []string{"europe-west4-a"}, []string{"eu\x1bwest"}),
		field("cloud.metadata_error", func(s *Snapshot) *string { return &s.Cloud.MetadataError }, []string{"", "timeout\nafter 1s"}, []string{"a\x1b[31m"}),

		field("manifest.format_version", func(s *Snapshot) *int { return &s.Manifest.FormatVersion }, []int{FormatVersion}, []int{0, FormatVersion + 1}),
		field("manifest.hostname", func(s *Snapshot) *string { return &s.Manifest.Hostname }, []string{"", "node-a.example", r("h", 64)}, []string{r("h", 65), "a\nb"}),
		field("manifest.fixture", func(s *Snapshot) *string { return &s.Manifest.Fixture }, []string{"a\nb\tc"}, []string{"a\rb", "a\u2029b", "a\x00b", r("f", 64<<10+1)}),
		field("manifest.errors[0].message", func(s *Snapshot) *string { return &s.Manifest.Errors[0].Message }, []string{"a\n\tb"}, []string{"a\x1b[31mb", r("m", 64<<10+1)}),
		field("manifest.errors[0].collector", func(s *Snapshot) *string { return &s.Manifest.Errors[0].Collector }, []string{"storage.dm"}, []string{"", "a b"}),
		field("manifest.errors[0].kind", func(s *Snapshot) *hostfs.Kind { return &s.Manifest.Errors[0].Kind }, []hostfs.Kind{hostfs.KindSkipped}, []hostfs.Kind{"", "fatal"}),
		field("manifest.live_sources.mode", func(s *Snapshot) *string { return &s.Manifest.LiveSources.Mode }, []string{"off"}, []string{"", "maybe"}),
	}
	for _, k := range []string{"net.core.somaxconn", "net.ipv4.conf.all.rp_filter", "vm.dirty_ratio", "net.core.x-y_z"} {
		rules = append(rules, sysctlKeyRow(k, true))
	}
	for _, k := range []string{"", "net", "net..x", ".net.core", "net.core.", "net.core.a=b", "net/core/x", "net.core.x\nkernel.core_pattern", "net.core.a b", "net.core.é", strings.Repeat("a.", 200)} {
		rules = append(rules, sysctlKeyRow(k, false))
	}
	rules = append(rules,
		sysctlValueRow("net.core.netdev_max_backlog", []int64{0, 1000, math.MaxInt32}, []int64{-1, math.MaxInt32 + 1}),
		sysctlValueRow("net.core.somaxconn", []int64{0, 4096}, []int64{-1}),
		sysctlValueRow("vm.dirty_ratio", []int64{math.MinInt32, 20}, []int64{math.MinInt32 - 1}),
	)

	checkRules(t, rules)
}

// checkRules applies each rule to a fresh validBase: every good value
// validates, every bad one fails naming its path and source.
func checkRules(t *testing.T, rules []rule) {
	t.Helper()
	for _, ru := range rules {
		for i, set := range ru.good {
			s := validBase()
			set(s)
			if err := s.Validate(); err != nil {
				t.Errorf("%s = %s: want valid, got %v", ru.path, ru.goodV[i], err)
			}
		}
		for i, set := range ru.bad {
			s := validBase()
			set(s)
			err := s.Validate()
			var ve *ValidationError
			switch {
			case err == nil:
				t.Errorf("%s = %s: want an error, got none", ru.path, ru.badV[i])
			case !errors.Is(err, ErrInvalid) || !errors.As(err, &ve):
				t.Errorf("%s = %s: error %v does not wrap ErrInvalid as a *ValidationError", ru.path, ru.badV[i], err)
			case ve.Path != ru.path:
				t.Errorf("%s = %s: error names %q: %v", ru.path, ru.badV[i], ve.Path, err)
			case ve.Source == "" || !strings.HasPrefix(err.Error(), "snapshot: "+ru.path):
				t.Errorf("%s = %s: error %q lacks its path or source", ru.path, ru.badV[i], err)
			case strings.ContainsFunc(err.Error(), safetext.Unsafe):
				t.Errorf("%s = %s: error carries a control character: %q", ru.path, ru.badV[i], err)
			}
		}
	}
}

// TestValidateErrorShowsLittle: a huge value is cut in the message, and
// the message quotes it (no raw control character reaches a terminal).
func TestValidateErrorShowsLittle(t *testing.T) {
	s := validBase()
	s.Storage.BlockDevices[2].DM.Targets[0].Params = strings.Repeat("\x1b[2J", 1<<20)
	err := s.Validate()
	if err == nil {
		t.Fatal("want an error")
	}
	msg := err.Error()
	if len(msg) > 600 || strings.Contains(msg, "\x1b") || !strings.Contains(msg, "(4194304 bytes)") {
		t.Errorf("message of %d bytes: %q", len(msg), msg)
	}
	want := `snapshot: storage.block_devices[2].dm.targets[0].params "\x1b[2J`
	if !strings.HasPrefix(msg, want) {
		t.Errorf("message %q does not start with %q", msg, want)
	}
}

// TestLoadRefusesInvalid: Load (JSON and archive) returns ErrInvalid with
// the file and what to do; the message has the form.
func TestLoadRefusesInvalid(t *testing.T) {
	dir := t.TempDir()
	s := validBase()
	s.Net.Interfaces[0].Name = "a\nb"
	for _, name := range []string{"s.json", "s.tar.gz"} {
		p := filepath.Join(dir, name)
		if err := Save(p, s); err != nil {
			t.Fatal(err)
		}
		got, err := Load(p)
		if got != nil || !errors.Is(err, ErrInvalid) {
			t.Fatalf("%s: got %v, %v; want ErrInvalid", name, got, err)
		}
		want := `snapshot: net.interfaces[0].name "a\nb": not a valid interface name: holds white space '\n' (net/core/dev.c dev_valid_name)`
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "slowpath collect") {
			t.Errorf("%s: %v\nwant it to hold %q, the path and what to do", name, err, want)
		}
	}
}
