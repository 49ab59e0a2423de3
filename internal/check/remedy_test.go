package check

import (
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// TestPersistCommand: what the refresh asks for comes from the header; a
// clevis-only volume gets the clevis pipeline; a volume only a token
// cryptsetup cannot use opens gets no command at all.
func TestPersistCommand(t *testing.T) {
	base := CryptChange{Name: "data", Format: "luks2", Add: []string{"no_read_workqueue"}}
	refresh := "cryptsetup refresh --perf-no_read_workqueue --persistent -- data"
	tests := []struct {
		name      string
		header    *snapshot.LUKSHeader
		cmd, asks string
	}{
		{"header not read", nil, refresh, "passphrase, key file or token"},
		{"passphrase", &snapshot.LUKSHeader{Device: "sda2", Version: 2, Keyslots: []int{0}}, refresh, "passphrase (or --key-file) of key slot 0"},
		{"passphrase and tpm2", &snapshot.LUKSHeader{Device: "sda2", Version: 2, Keyslots: []int{0, 1}, Tokens: []snapshot.LUKSToken{{Type: "systemd-tpm2", Keyslots: []int{1}}}},
			refresh, "key slot 0; cryptsetup tries the volume's systemd-tpm2 token first"},
		{"tpm2 only", &snapshot.LUKSHeader{Device: "sda2", Version: 2, Keyslots: []int{1}, Tokens: []snapshot.LUKSToken{{Type: "systemd-tpm2", Keyslots: []int{1}}}},
			refresh, "TPM"},
		{"fido2 only", &snapshot.LUKSHeader{Device: "sda2", Version: 2, Keyslots: []int{2}, Tokens: []snapshot.LUKSToken{{Type: "systemd-fido2", Keyslots: []int{2}}}},
			refresh, "FIDO2 security key"},
		{"clevis only", &snapshot.LUKSHeader{Device: "cciss!c0d0p2", Version: 2, Keyslots: []int{1}, Tokens: []snapshot.LUKSToken{{Type: "clevis", Keyslots: []int{1}}}},
			"clevis luks pass -d /dev/cciss/c0d0p2 -s 1 | cryptsetup refresh --perf-no_read_workqueue --persistent --key-file - -- data", "clevis holds key slot 1"},
		{"unknown token only", &snapshot.LUKSHeader{Device: "sda2", Version: 2, Keyslots: []int{0}, Tokens: []snapshot.LUKSToken{{Type: "vendor-hsm", Keyslots: []int{0}}}},
			"", "its vendor-hsm token is none cryptsetup can use"},
		{"header unreadable", &snapshot.LUKSHeader{Device: "sda2", NotRead: "permission denied"}, refresh, "passphrase, key file or token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			c.Opens = OpenersOf(tt.header)
			if len(c.Opens) > 0 {
				c.Device = tt.header.Device
			}
			cmd, asks := PersistCommand(&c)
			if cmd != tt.cmd || !strings.Contains(asks, tt.asks) {
				t.Errorf("got %q\n  (%s)\nwant %q\n  (... %s ...)", cmd, asks, tt.cmd, tt.asks)
			}
		})
	}
}
