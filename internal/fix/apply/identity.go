package apply

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/collect/host"
	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// ErrOtherHost marks a snapshot that cannot be shown to be of this host:
// its plan must not be applied or persisted here.
var ErrOtherHost = errors.New("the snapshot is not of this host")

// CheckSameHost decides whether the plan p, made from snapshot s, may
// change the host h reads. It may when s has this boot's id
// (/proc/sys/kernel/random/boot_id: the same host, not rebooted since).
// Otherwise, when the boot ids differ or one is unknown, it may only when
// s has this host's machine id and every device the plan touches is here
// with the identity s recorded: an interface by name and ifindex, a dm
// device by name, major:minor and dm uuid. Anything else is ErrOtherHost,
// saying what differed.
func CheckSameHost(s *snapshot.Snapshot, h Host, p *fix.Plan) error {
	var sb, sm string
	if s != nil && s.Host != nil {
		sb, sm = s.Host.BootID, s.Host.MachineID
	}
	hb, hm, _ := host.Identity(h.FS)
	if sb != "" && sb == hb {
		return nil
	}
	boot := fmt.Sprintf("its boot id %s is not this boot's %s", orNone(sb), orNone(hb))
	if sm == "" || hm == "" || sm != hm {
		return fmt.Errorf("%w: %s, and its machine id %s is not this host's %s", ErrOtherHost, boot, orNone(sm), orNone(hm))
	}
	var why []string
	for _, e := range p.Entries {
		for _, st := range e.Steps {
			var errs []error
			if c, ok := st.Change.(fix.OnInterface); ok {
				errs = append(errs, sameInterface(s, h.FS, c.NetInterface()))
			}
			if c, ok := st.Change.(fix.OnDM); ok {
				errs = append(errs, sameDM(s, h.FS, c.DMName()))
			}
			if c, ok := st.Change.(fix.OnBlockDevice); ok {
				errs = append(errs, sameBlockDevice(s, h.FS, c.BlockDevice()))
			}
			for _, err := range errs {
				if err != nil && !slices.Contains(why, err.Error()) {
					why = append(why, err.Error())
				}
			}
		}
	}
	if len(why) > 0 {
		return fmt.Errorf("%w: %s (same machine id, rebooted since), and %s", ErrOtherHost, boot, strings.Join(why, "; "))
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// component reports whether name can be read as one directory entry of
// sysfs: a name from a snapshot with / or .. names nothing here.
func component(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

// sameInterface: the interface exists here with the ifindex s recorded
// (/sys/class/net/IF/ifindex; a name reused by another device after a
// reboot gets another ifindex unless created in the same order).
func sameInterface(s *snapshot.Snapshot, fs hostfs.FS, name string) error {
	var want int
	found := false
	if s.Net != nil {
		for _, i := range s.Net.Interfaces {
			if i.Name == name {
				want, found = i.Ifindex, true
			}
		}
	}
	if !found {
		return fmt.Errorf("interface %q is not in the snapshot, so its identity cannot be checked", name)
	}
	if !component(name) {
		return fmt.Errorf("interface %q cannot be a name on this host", name)
	}
	v, err := hostfs.ReadValue(fs.SysPath("class", "net", name, "ifindex"))
	if err != nil {
		return fmt.Errorf("interface %q is not on this host (%v)", name, err)
	}
	if v != fmt.Sprint(want) {
		return fmt.Errorf("interface %q has ifindex %s here, %d in the snapshot", name, v, want)
	}
	return nil
}

// sameDM: a dm device of that name exists here (/sys/block/dm-N/dm/name)
// with the major:minor and dm uuid s recorded.
func sameDM(s *snapshot.Snapshot, fs hostfs.FS, name string) error {
	var want *snapshot.BlockDevice
	if s.Storage != nil {
		for i, b := range s.Storage.BlockDevices {
			if b.DM != nil && b.DM.Name == name {
				want = &s.Storage.BlockDevices[i]
			}
		}
	}
	if want == nil {
		return fmt.Errorf("dm device %q is not in the snapshot, so its identity cannot be checked", name)
	}
	dirs, err := filepath.Glob(fs.SysPath("block", "dm-*"))
	if err != nil {
		return err
	}
	for _, d := range dirs {
		n, err := hostfs.ReadValue(filepath.Join(d, "dm", "name"))
		if err != nil || n != name {
			continue
		}
		dev, err := hostfs.ReadValue(filepath.Join(d, "dev"))
		if err != nil {
			return fmt.Errorf("dm device %q: %v", name, err)
		}
		uuid, err := hostfs.ReadValue(filepath.Join(d, "dm", "uuid"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("dm device %q: %v", name, err)
		}
		uuid = strings.TrimSpace(uuid)
		switch {
		case dev != want.MajorMinor:
			return fmt.Errorf("dm device %q is %s here, %s in the snapshot", name, dev, want.MajorMinor)
		case uuid != want.DM.UUID:
			return fmt.Errorf("dm device %q has uuid %q here, %q in the snapshot", name, uuid, want.DM.UUID)
		}
		return nil
	}
	return fmt.Errorf("dm device %q is not on this host", name)
}

// sameBlockDevice: a block device of that name exists here
// (/sys/class/block/NAME/dev) with the major:minor, model and NVMe
// namespace id s recorded. NVMe names and minors are given in probe order,
// so two controllers that swap after a reboot swap both: the model and
// namespace id tell different drives apart (two drives of one model with
// the same namespace id still look alike: slowpath keeps no serial).
func sameBlockDevice(s *snapshot.Snapshot, fs hostfs.FS, name string) error {
	want := ""
	var ident *snapshot.Identity
	if s.Storage != nil {
		for _, b := range s.Storage.BlockDevices {
			if b.Name == name {
				want, ident = b.MajorMinor, b.Ident
			}
		}
	}
	if want == "" {
		return fmt.Errorf("block device %q is not in the snapshot, so its identity cannot be checked", name)
	}
	if !component(name) {
		return fmt.Errorf("block device %q cannot be a name on this host", name)
	}
	v, err := hostfs.ReadValue(fs.SysPath("class", "block", name, "dev"))
	if err != nil {
		return fmt.Errorf("block device %q is not on this host (%v)", name, err)
	}
	if v != want {
		return fmt.Errorf("block device %q is %s here, %s in the snapshot", name, v, want)
	}
	if ident == nil {
		return nil
	}
	if ident.Model != "" {
		m, err := hostfs.ReadValue(fs.SysPath("class", "block", name, "device", "model"))
		if err != nil || strings.TrimSpace(m) != ident.Model {
			return fmt.Errorf("block device %q is model %q here, %q in the snapshot", name, strings.TrimSpace(m), ident.Model)
		}
	}
	if ident.NVMeNSID > 0 {
		n, err := hostfs.ReadValue(fs.SysPath("class", "block", name, "nsid"))
		if err != nil || n != fmt.Sprint(ident.NVMeNSID) {
			return fmt.Errorf("block device %q is namespace %s here, %d in the snapshot", name, n, ident.NVMeNSID)
		}
	}
	return nil
}
