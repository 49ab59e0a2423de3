package storage

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/dmioctl"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/dmtest"
)

func TestParseMountInfoLine(t *testing.T) {
	tests := []struct {
		line    string
		want    snapshot.Mount
		wantErr bool
	}{
		{
			line: "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue",
			want: snapshot.Mount{MountID: 36, ParentID: 35, MajorMinor: "98:0", Root: "/mnt1", MountPoint: "/mnt2",
				Options: "rw,noatime", FSType: "ext3", Source: "/dev/root", SuperOpts: "rw,errors=continue"},
		},
		{
			line: `27 1 254:0 / / rw,relatime shared:1 master:2 propagate_from:3 - ext4 /dev/vda rw,discard`,
			want: snapshot.Mount{MountID: 27, ParentID: 1, MajorMinor: "254:0", Root: "/", MountPoint: "/",
				Options: "rw,relatime", FSType: "ext4", Source: "/dev/vda", SuperOpts: "rw,discard"},
		},
		{
			line: `40 27 0:50 /a\134b /mnt/a\040b\011c rw - fuse.sshfs user@h:/x\040y rw`,
			want: snapshot.Mount{MountID: 40, ParentID: 27, MajorMinor: "0:50", Root: `/a\b`, MountPoint: "/mnt/a b\tc",
				Options: "rw", FSType: "fuse.sshfs", Source: "user@h:/x y", SuperOpts: "rw"},
		},
		{
			// A source without super options (seen on old kernels).
			line: "41 27 0:51 / /x rw - tmpfs none",
			want: snapshot.Mount{MountID: 41, ParentID: 27, MajorMinor: "0:51", Root: "/", MountPoint: "/x",
				Options: "rw", FSType: "tmpfs", Source: "none"},
		},
		{line: "", wantErr: true},
		{line: "36 35 98:0 /mnt1 /mnt2 rw,noatime ext3 /dev/root rw", wantErr: true},
		{line: "x 35 98:0 / / rw - ext4 /dev/a rw", wantErr: true},
		{line: "36 y 98:0 / / rw - ext4 /dev/a rw", wantErr: true},
		{line: "36 35 98 / / rw - ext4 /dev/a rw", wantErr: true},
		{line: "36 35 98:0 / / rw - ext4", wantErr: true},
		{line: "36 35 98:0 / / - ext4 /dev/a rw", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseMountInfoLine(tt.line)
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err = %v, wantErr %v", tt.line, err, tt.wantErr)
			continue
		}
		if err != nil {
			if !errors.Is(err, errMountInfoLine) {
				t.Errorf("%q: error %v does not wrap errMountInfoLine", tt.line, err)
			}
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tt.line, diff)
		}
	}
}

func TestParseMountInfoPartial(t *testing.T) {
	in := "1 0 8:1 / / rw - ext4 /dev/sda1 rw\ngarbage\n\n2 1 8:2 / /home rw - xfs /dev/sda2 rw\n3 1 8:3 / /var rw - xfs"
	got, errs, err := parseMountInfo(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].MountPoint != "/home" {
		t.Errorf("mounts = %+v", got)
	}
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), "line 2") || !strings.Contains(errs[1].Error(), "line 5") {
		t.Errorf("line errors = %v", errs)
	}
}

func TestParseScheduler(t *testing.T) {
	tests := []struct {
		in      string
		active  string
		all     []string
		wantErr bool
	}{
		{in: "none [mq-deadline] kyber bfq", active: "mq-deadline", all: []string{"none", "mq-deadline", "kyber", "bfq"}},
		{in: "[none] mq-deadline", active: "none", all: []string{"none", "mq-deadline"}},
		{in: "none", active: "none", all: []string{"none"}},
		{in: "[bfq]\n", active: "bfq", all: []string{"bfq"}},
		{in: "mq-deadline kyber", all: []string{"mq-deadline", "kyber"}, wantErr: true},
		{in: "[a] [b]", wantErr: true},
		{in: "", wantErr: true},
		{in: "[]", all: []string{"[]"}, active: "[]"},
	}
	for _, tt := range tests {
		active, all, err := parseScheduler(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err = %v, wantErr %v", tt.in, err, tt.wantErr)
		}
		if active != tt.active || !cmp.Equal(all, tt.all) {
			t.Errorf("%q: got %q %q, want %q %q", tt.in, active, all, tt.active, tt.all)
		}
	}
}

func TestTransportFromLink(t *testing.T) {
	tests := map[string]string{
		"../../devices/pci0000:00/0000:00:02.0/virtio1/block/vda":                                                 "virtio",
		"../../devices/pci0000:00/0000:00:03.0/virtio2/host0/target0:0:1/0:0:1:0/block/sda":                       "scsi",
		"../../devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1":                                                "nvme",
		"../../devices/virtual/nvme-subsystem/nvme-subsys0/nvme0n1":                                               "nvme",
		"../../devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda":                          "ata",
		"../../devices/LNXSYSTM:00/LNXSYBUS:00/ACPI0004:00/VMBUS:00/f8b3781b/host3/target3:0:1/3:0:1:0/block/sdb": "scsi",
		"../../devices/platform/soc/fe340000.mmc/mmc_host/mmc0/mmc0:aaaa/block/mmcblk0":                           "mmc",
		"../../devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0/block/sdc":              "usb",
		"../../devices/vbd-51712/block/xvda":                                                                      "xen",
		"../../devices/virtual/block/loop0":                                                                       "",
		"":                                                                                                        "",
	}
	for link, want := range tests {
		if got := transportFromLink(link); got != want {
			t.Errorf("%q: got %q, want %q", link, got, want)
		}
	}
}

func TestRedactCryptParams(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: "aes-xts-plain64 " + testKey + " 0 8:2 4096", want: "aes-xts-plain64 redacted:512 0 8:2 4096"},
		{in: "aes-xts-plain64 " + strings.ToUpper(testKey[:64]) + " 0 /dev/sda2 0 1 allow_discards",
			want: "aes-xts-plain64 redacted:256 0 /dev/sda2 0 1 allow_discards"},
		{in: "aes-xts-plain64 :64:logon:cryptsetup:7c1e5b0a-d0 0 259:2 32768 3 allow_discards sector_size:4096 no_read_workqueue",
			want: "aes-xts-plain64 :64:logon:cryptsetup:7c1e5b0a-d0 0 259:2 32768 3 allow_discards sector_size:4096 no_read_workqueue"},
		{in: "aes-xts-plain64 - 0 8:2 0", want: "aes-xts-plain64 - 0 8:2 0"},
		{in: "capi:xts(aes)-plain64 " + testKey + " 0 8:2 0", want: "capi:xts(aes)-plain64 redacted:512 0 8:2 0"},
		{in: "aes-xts-plain64 notahexkey 0 8:2 0", want: "aes-xts-plain64 redacted 0 8:2 0", wantErr: true},
		{in: "aes-xts-plain64 " + testKey + " 0 8:2", want: "", wantErr: true},
		{in: testKey, want: "", wantErr: true},
		{in: "", want: "", wantErr: true},
	}
	for _, tt := range tests {
		got, err := redactCryptParams([]byte(tt.in))
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err = %v, wantErr %v", tt.in, err, tt.wantErr)
		}
		if got != tt.want {
			t.Errorf("%q:\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func TestRedactIntegrityParams(t *testing.T) {
	in := "253:0 0 28 J 4 journal_sectors:1024 internal_hash:hmac(sha256):" + testKey[:64] +
		" journal_crypt:ctr(aes):ZZ journal_mac:hmac(sha256) block_size:4096"
	want := "253:0 0 28 J 4 journal_sectors:1024 internal_hash:hmac(sha256):redacted:256" +
		" journal_crypt:ctr(aes):redacted journal_mac:hmac(sha256) block_size:4096"
	if got, _ := redactParams("integrity", []byte(in)); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestDecodeAndRedactTableStatus: a decoded DM_TABLE_STATUS answer reaches
// the snapshot with its key redacted. Malformed answers are tested in
// internal/dmioctl.
func TestDecodeAndRedactTableStatus(t *testing.T) {
	good := dmtest.EncodeTableStatus([]dmtest.Target{
		dmtest.T(0, 2048, "linear", "8:1 0"),
		dmtest.T(2048, 4096, "crypt", "aes-xts-plain64 "+testKey+" 0 8:2 0"),
		dmtest.T(6144, 8, "zero", ""),
	})
	raw, err := dmioctl.DecodeTableStatus(good)
	if err != nil {
		t.Fatal(err)
	}
	got, errs := redactTargets(raw)
	want := []snapshot.DMTarget{
		{Start: 0, Length: 2048, Type: "linear", Params: "8:1 0"},
		{Start: 2048, Length: 4096, Type: "crypt", Params: "aes-xts-plain64 redacted:512 0 8:2 0"},
		{Start: 6144, Length: 8, Type: "zero", Params: ""},
	}
	if diff := cmp.Diff(want, got); diff != "" || errs != nil {
		t.Errorf("(-want +got):\n%s errs %v", diff, errs)
	}

}

func TestReadDMTableGarbageTable(t *testing.T) {
	// A crypt target whose params are cut short: kept without params.
	dm := &dmtest.Control{Payloads: map[string][]byte{"253:0": dmtest.EncodeTableStatus([]dmtest.Target{dmtest.T(0, 8, "crypt", "aes-xts-plain64 "+testKey)})}}
	got, errs := readDMTable(dm, "253:0")
	if len(errs) != 1 || !errors.Is(errs[0], errDMParams) {
		t.Errorf("errs = %v", errs)
	}
	if diff := cmp.Diff([]snapshot.DMTarget{{Start: 0, Length: 8, Type: "crypt"}}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if bytes.ContainsFunc(dm.Handed[0], func(r rune) bool { return r != 0 }) {
		t.Error("buffer not zeroed")
	}
	if _, errs := readDMTable(dm, "253:9"); len(errs) != 1 {
		t.Errorf("unknown device: errs = %v", errs)
	}
}

func TestDecodeFscryptPolicy(t *testing.T) {
	p := make([]byte, 24)
	p[0], p[1], p[2] = 2, 1, 4
	got, err := decodeFscryptPolicy(24, p)
	if err != nil || !cmp.Equal(got, &snapshot.Fscrypt{Version: 2, ContentsMode: "AES-256-XTS", FilenamesMode: "AES-256-CTS"}) {
		t.Errorf("v2: %+v %v", got, err)
	}
	p[0], p[1], p[2] = 0, 9, 9
	got, err = decodeFscryptPolicy(12, p)
	if err != nil || !cmp.Equal(got, &snapshot.Fscrypt{Version: 1, ContentsMode: "Adiantum", FilenamesMode: "Adiantum"}) {
		t.Errorf("v1: %+v %v", got, err)
	}
	p[0] = 7
	if _, err := decodeFscryptPolicy(24, p); err == nil {
		t.Error("unknown version accepted")
	}
	if _, err := decodeFscryptPolicy(100, p); err == nil {
		t.Error("oversized policy accepted")
	}
}

func TestParseDMTable(t *testing.T) {
	in := "0 2048 linear 8:1 0\n" +
		"2048 4096 crypt aes-xts-plain64 " + testKey + " 0 8:2 0 1 sector_size:4096\n" +
		"\n6144 8 zero\nx 8 zero\n8 8\n"
	got, errs := ParseDMTable([]byte(in))
	want := []snapshot.DMTarget{
		{Start: 0, Length: 2048, Type: "linear", Params: "8:1 0"},
		{Start: 2048, Length: 4096, Type: "crypt", Params: "aes-xts-plain64 redacted:512 0 8:2 0 1 sector_size:4096"},
		{Start: 6144, Length: 8, Type: "zero"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), "line 5") || !strings.Contains(errs[1].Error(), "line 6") {
		t.Errorf("errs = %v", errs)
	}
	// The ioctl path and the text path agree on the same table.
	raw, err := dmioctl.DecodeTableStatus(dmtest.EncodeTableStatus([]dmtest.Target{
		dmtest.T(0, 2048, "linear", "8:1 0"),
		dmtest.T(2048, 4096, "crypt", "aes-xts-plain64 "+testKey+" 0 8:2 0 1 sector_size:4096"),
		dmtest.T(6144, 8, "zero", ""),
	}))
	if err != nil {
		t.Fatal(err)
	}
	fromIoctl, _ := redactTargets(raw)
	if diff := cmp.Diff(want, fromIoctl); diff != "" {
		t.Errorf("ioctl vs text (-text +ioctl):\n%s", diff)
	}
}

func TestParseBlockStat(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    *snapshot.BlockStat
		wantErr bool
	}{
		{
			// Documentation/admin-guide/iostats.rst's example, 17 fields.
			name: "17 fields",
			line: "  255999      814 12369153    47919   996858       81 36123056   426009        0   301809   580491        0        0        0        0    60605   106562\n",
			want: &snapshot.BlockStat{Fields: 17, ReadIOs: 255999, ReadMerges: 814, ReadSectors: 12369153, ReadTicksMS: 47919,
				WriteIOs: 996858, WriteMerges: 81, WriteSectors: 36123056, WriteTicksMS: 426009, InFlight: 0, IOTicksMS: 301809,
				TimeInQueueMS: 580491, FlushIOs: 60605, FlushTicksMS: 106562},
		},
		{
			name: "11 fields (before Linux 4.18)",
			line: "1 2 3 4 5 6 7 8 9 10 11",
			want: &snapshot.BlockStat{Fields: 11, ReadIOs: 1, ReadMerges: 2, ReadSectors: 3, ReadTicksMS: 4, WriteIOs: 5,
				WriteMerges: 6, WriteSectors: 7, WriteTicksMS: 8, InFlight: 9, IOTicksMS: 10, TimeInQueueMS: 11},
		},
		{
			name: "15 fields (discard, 4.18 to 5.4)",
			line: "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15",
			want: &snapshot.BlockStat{Fields: 15, ReadIOs: 1, ReadMerges: 2, ReadSectors: 3, ReadTicksMS: 4, WriteIOs: 5,
				WriteMerges: 6, WriteSectors: 7, WriteTicksMS: 8, InFlight: 9, IOTicksMS: 10, TimeInQueueMS: 11,
				DiscardIOs: 12, DiscardMerges: 13, DiscardSectors: 14, DiscardTicksMS: 15},
		},
		{
			name: "a later kernel's extra fields are counted, not kept",
			line: "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
			want: &snapshot.BlockStat{Fields: 20, ReadIOs: 1, ReadMerges: 2, ReadSectors: 3, ReadTicksMS: 4, WriteIOs: 5,
				WriteMerges: 6, WriteSectors: 7, WriteTicksMS: 8, InFlight: 9, IOTicksMS: 10, TimeInQueueMS: 11,
				DiscardIOs: 12, DiscardMerges: 13, DiscardSectors: 14, DiscardTicksMS: 15, FlushIOs: 16, FlushTicksMS: 17},
		},
		{name: "max uint64", line: "18446744073709551615 0 0 0 0 0 0 0 0 0 0",
			want: &snapshot.BlockStat{Fields: 11, ReadIOs: 18446744073709551615}},
		{name: "empty", line: "", wantErr: true},
		{name: "truncated at 10 fields", line: "1 2 3 4 5 6 7 8 9 10", wantErr: true},
		{name: "negative", line: "1 2 3 -4 5 6 7 8 9 10 11", wantErr: true},
		{name: "not a number", line: "1 2 3 4 5 6 7 8 9 10 x", wantErr: true},
		{name: "bad extra field", line: "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 0x12", wantErr: true},
		{name: "overflow", line: "18446744073709551616 0 0 0 0 0 0 0 0 0 0", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseBlockStat(tt.line)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				if !errors.Is(err, errBlockStat) {
					t.Errorf("error %v does not wrap errBlockStat", err)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
