package apply

import (
	"errors"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/hostfstest"
)

// rebootedHost is a host tree with the snapshots' machine id and another
// boot id, and the files of tree (each a line).
func rebootedHost(t *testing.T, tree map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	hostfstest.WriteFile(t, dir, "proc/sys/kernel/random/boot_id", "0f4e2b6c-1d2a-4b3c-9e8f-7a6b5c4d3e2f\n")
	hostfstest.WriteFile(t, dir, "etc/machine-id", "4c3f1e2d5a6b7c8d9e0f1a2b3c4d5e6f\n")
	for p, c := range tree {
		hostfstest.WriteFile(t, dir, p, c+"\n")
	}
	return dir
}

// A dm device is the same when its name, major:minor and uuid are; the
// snapshot has the same machine id and another boot id throughout.
func TestCheckSameHostDM(t *testing.T) {
	const app = "5a94e339d5424f3a808dcfb5934e9f45" // of the machine id below
	for _, tc := range []struct {
		name      string
		tree      map[string]string
		dm        string // the plan's mapping
		wantError string
	}{
		{"same", map[string]string{"sys/block/dm-0/dm/name": "data", "sys/block/dm-0/dev": "253:0", "sys/block/dm-0/dm/uuid": "CRYPT-PLAIN-data"}, "data", ""},
		{"other number", map[string]string{"sys/block/dm-1/dm/name": "data", "sys/block/dm-1/dev": "253:1", "sys/block/dm-1/dm/uuid": "CRYPT-PLAIN-data"}, "data", `dm device "data" is 253:1 here, 253:0 in the snapshot`},
		{"other uuid", map[string]string{"sys/block/dm-0/dm/name": "data", "sys/block/dm-0/dev": "253:0", "sys/block/dm-0/dm/uuid": "CRYPT-LUKS2-x-data"}, "data", `has uuid "CRYPT-LUKS2-x-data" here`},
		{"absent", map[string]string{"sys/block/dm-0/dm/name": "other", "sys/block/dm-0/dev": "253:0"}, "data", `dm device "data" is not on this host`},
		{"not in snapshot", nil, "../../x", `dm device "../../x" is not in the snapshot`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := rebootedHost(t, tc.tree)
			s := &snapshot.Snapshot{
				Host: &snapshot.Host{BootID: "11111111-2222-4333-8444-555555555555", MachineID: app},
				Storage: &snapshot.Storage{BlockDevices: []snapshot.BlockDevice{{Name: "dm-0", MajorMinor: "253:0", Kind: snapshot.KindDM,
					DM: &snapshot.DM{Name: "data", UUID: "CRYPT-PLAIN-data"}}}},
			}
			p := &fix.Plan{Entries: []fix.Entry{{ID: "dmcrypt.workqueue", Steps: []fix.Step{{
				Change: fix.Crypt{Name: tc.dm, Add: []string{"no_read_workqueue"}}}}}}}
			err := CheckSameHost(s, Host{FS: hostfs.New(dir)}, p)
			if tc.wantError == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrOtherHost) || !strings.Contains(err.Error(), tc.wantError) {
				t.Errorf("got %v, want ErrOtherHost with %q", err, tc.wantError)
			}
		})
	}
}

// A block device is the same when its name, major:minor, model and NVMe
// namespace are: two NVMe controllers that swap names after a reboot swap
// their minors too, so only the model or namespace tells them apart.
func TestCheckSameHostBlockDevice(t *testing.T) {
	const app = "5a94e339d5424f3a808dcfb5934e9f45" // of the machine id below
	same := map[string]string{"sys/class/block/nvme0n1/dev": "259:0", "sys/class/block/nvme0n1/device/model": "Amazon EC2 NVMe Instance Storage        ", "sys/class/block/nvme0n1/nsid": "1"}
	for _, tc := range []struct {
		name      string
		tree      map[string]string
		wantError string
	}{
		{"same", same, ""},
		{"swapped drive", map[string]string{"sys/class/block/nvme0n1/dev": "259:0", "sys/class/block/nvme0n1/device/model": "Amazon Elastic Block Store", "sys/class/block/nvme0n1/nsid": "1"},
			`is model "Amazon Elastic Block Store" here, "Amazon EC2 NVMe Instance Storage" in the snapshot`},
		{"other namespace", map[string]string{"sys/class/block/nvme0n1/dev": "259:0", "sys/class/block/nvme0n1/device/model": "Amazon EC2 NVMe Instance Storage", "sys/class/block/nvme0n1/nsid": "2"},
			`is namespace 2 here, 1 in the snapshot`},
		{"other number", map[string]string{"sys/class/block/nvme0n1/dev": "259:3"}, `is 259:3 here, 259:0 in the snapshot`},
		{"absent", nil, `block device "nvme0n1" is not on this host`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := rebootedHost(t, tc.tree)
			s := &snapshot.Snapshot{
				Host: &snapshot.Host{BootID: "11111111-2222-4333-8444-555555555555", MachineID: app},
				Storage: &snapshot.Storage{BlockDevices: []snapshot.BlockDevice{{Name: "nvme0n1", MajorMinor: "259:0", Kind: snapshot.KindDisk,
					Ident: &snapshot.Identity{Transport: "nvme", Model: "Amazon EC2 NVMe Instance Storage", NVMeNSID: 1}}}},
			}
			p := &fix.Plan{Entries: []fix.Entry{{ID: "dmcrypt.scheduler", Steps: []fix.Step{{
				Change: fix.Scheduler{Device: "nvme0n1", From: "mq-deadline", To: "none"}}}}}}
			err := CheckSameHost(s, Host{FS: hostfs.New(dir)}, p)
			if tc.wantError == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrOtherHost) || !strings.Contains(err.Error(), tc.wantError) {
				t.Errorf("got %v, want ErrOtherHost with %q", err, tc.wantError)
			}
		})
	}
}
