package host

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/hostfstest"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

func TestCollectIdentity(t *testing.T) {
	const boot = "8cde3281-bb6a-4a60-be41-e1b769b99f79"
	for _, tc := range []struct {
		name          string
		files         map[string]string
		boot, machine string
		errors        []string
	}{
		{"both", map[string]string{"proc/sys/kernel/random/boot_id": boot + "\n", "etc/machine-id": "4c3f1e2d5a6b7c8d9e0f1a2b3c4d5e6f\n"},
			// Computed independently (Python hmac) and the same as
			// systemd-id128 machine-id --app-specific on a real host
			// (TestIdentityLive).
			boot, "5a94e339d5424f3a808dcfb5934e9f45", nil},
		{"none", nil, "", "", nil},
		{"uninitialized", map[string]string{"etc/machine-id": "uninitialized\n"}, "", "", []string{"host.identity error etc/machine-id"}},
		{"short machine id", map[string]string{"etc/machine-id": "4c3f\n"}, "", "", []string{"host.identity error etc/machine-id"}},
		{"upper-case machine id", map[string]string{"etc/machine-id": "4C3F1E2D5A6B7C8D9E0F1A2B3C4D5E6F\n"}, "", "", []string{"host.identity error etc/machine-id"}},
		{"not a uuid", map[string]string{"proc/sys/kernel/random/boot_id": "a;reboot\n"}, "", "", []string{"host.identity error proc/sys/kernel/random/boot_id"}},
		{"uuid without dashes", map[string]string{"proc/sys/kernel/random/boot_id": strings.ReplaceAll(boot, "-", "") + "abcd\n"}, "", "", []string{"host.identity error proc/sys/kernel/random/boot_id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for p, c := range tc.files {
				hostfstest.WriteFile(t, dir, p, c)
			}
			fs := hostfs.New(dir)
			var s snapshot.Snapshot
			h := &snapshot.Host{}
			collectIdentity(fs, h, &s)
			if h.BootID != tc.boot || h.MachineID != tc.machine {
				t.Errorf("boot %q machine %q, want %q %q", h.BootID, h.MachineID, tc.boot, tc.machine)
			}
			if d := cmp.Diff(tc.errors, hostfstest.ErrorLines(&s, dir)); d != "" {
				t.Errorf("errors (-want +got):\n%s", d)
			}
		})
	}
}

// TestIdentityLive reads this machine and checks the machine id against
// systemd's own derivation of an app-specific id.
func TestIdentityLive(t *testing.T) {
	var s snapshot.Snapshot
	h := &snapshot.Host{}
	collectIdentity(hostfs.Default(), h, &s)
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		testenv.Unavailable(t, "no /proc/sys/kernel/random/boot_id: "+err.Error())
	}
	if h.BootID != strings.TrimSpace(string(b)) {
		t.Errorf("boot id %q, /proc says %q", h.BootID, b)
	}
	if _, err := os.Stat("/etc/machine-id"); err != nil {
		testenv.Unavailable(t, "no /etc/machine-id on this host")
	}
	tool := testenv.RequireTool(t, "systemd-id128", "systemd")
	out, err := exec.Command(tool, "machine-id", "--app-specific=5e0b3a6f2c414d8e9b17d263a805c471").Output()
	if err != nil {
		t.Fatalf("systemd-id128: %v", err)
	}
	if want := strings.TrimSpace(string(out)); h.MachineID != want {
		t.Errorf("machine id %q, systemd-id128 says %q", h.MachineID, want)
	}
}
