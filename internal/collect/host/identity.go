package host

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// appID is slowpath's application id for the machine id it stores: a
// fixed random 128-bit value, as machine-id(5) asks of applications that
// need a stable host id (sd_id128_get_machine_app_specific(3)).
var appID = [16]byte{0x5e, 0x0b, 0x3a, 0x6f, 0x2c, 0x41, 0x4d, 0x8e, 0x9b, 0x17, 0xd2, 0x63, 0xa8, 0x05, 0xc4, 0x71}

// collectIdentity reads who the host is, for `fix --from`'s check that a
// snapshot is of this host:
//
//   - /proc/sys/kernel/random/boot_id: a random UUID the kernel makes once
//     per boot (drivers/char/random.c, proc_do_uuid).
//   - <rootfs>/etc/machine-id: 32 lowercase hex digits, the host's id for
//     life (machine-id(5)). The file is "confidential" there and snapshots
//     are sent to others, so the snapshot keeps only the app-specific id
//     systemd derives from it (HMAC-SHA256 keyed by the machine id over
//     appID, made a v4 UUID: sd_id128_get_machine_app_specific), which
//     matches across slowpath runs and reveals nothing else.
//
// Either may be absent (a container without /etc/machine-id, a fixture
// tree): that is quiet and leaves the field empty. A value of the wrong
// shape is a host.identity error and no value.
func collectIdentity(fs hostfs.FS, h *snapshot.Host, s *snapshot.Snapshot) {
	h.BootID = readID(s, fs.ProcPath("sys", "kernel", "random", "boot_id"), parseBootID)
	h.MachineID = readID(s, fs.RootPath("etc", "machine-id"), appSpecificMachineID)
}

// readID reads one identity file and parses it: "" when the file is
// missing (quiet) or unreadable or of the wrong shape (errors).
func readID(s *snapshot.Snapshot, p string, parse func(string) (string, error)) string {
	v, err := hostfs.ReadValue(p)
	if err != nil {
		if hostfs.Classify(err) != hostfs.KindMissing {
			s.AddError("host.identity", p, err)
		}
		return ""
	}
	id, err := parse(v)
	if err != nil {
		s.AddError("host.identity", p, err)
		return ""
	}
	return id
}

// parseBootID accepts the kernel's boot_id format: a UUID as 8-4-4-4-12
// lowercase hex digits (lib/vsprintf.c %pU).
func parseBootID(v string) (string, error) {
	if len(v) != 36 {
		return "", fmt.Errorf("boot_id %q is not a UUID", v)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		dash := i == 8 || i == 13 || i == 18 || i == 23
		if dash != (c == '-') || (!dash && !isLowerHex(c)) {
			return "", fmt.Errorf("boot_id %q is not a UUID", v)
		}
	}
	return v, nil
}

// appSpecificMachineID turns the content of /etc/machine-id into
// slowpath's id for the machine. An empty file or "uninitialized" (a
// first boot, machine-id(5)) is no id yet.
func appSpecificMachineID(v string) (string, error) {
	if v == "" || v == "uninitialized" {
		return "", fmt.Errorf("machine-id is %q: not initialised yet (machine-id(5))", v)
	}
	if len(v) != 32 || strings.IndexFunc(v, func(r rune) bool { return r > 0x7f || !isLowerHex(byte(r)) }) >= 0 {
		return "", fmt.Errorf("machine-id %q is not 32 lowercase hex digits (machine-id(5))", v)
	}
	key, err := hex.DecodeString(v)
	if err != nil {
		return "", fmt.Errorf("machine-id %q: %w", v, err)
	}
	m := hmac.New(sha256.New, key)
	m.Write(appID[:])
	id := m.Sum(nil)[:16]
	// Made a v4 UUID as systemd does (id128_make_v4_uuid).
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return hex.EncodeToString(id), nil
}

func isLowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

// Identity returns the boot id and app-specific machine id of the host
// whose roots fs names, as Collect records them (empty when unread), and
// what could not be read.
func Identity(fs hostfs.FS) (bootID, machineID string, errs []snapshot.CollectError) {
	var s snapshot.Snapshot
	h := &snapshot.Host{}
	collectIdentity(fs, h, &s)
	return h.BootID, h.MachineID, s.Manifest.Errors
}
