package storagecheck

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// stackedOn runs storage.stacked-encryption on a fixture host, after edit.
func stackedOn(t *testing.T, name, subject string, edit func(*snapshot.Snapshot)) *check.Finding {
	t.Helper()
	s, err := snapshot.Load(filepath.Join(hostsDir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(s)
	}
	m := storagemodel.Build(s)
	for _, f := range runStackedEncryption(&check.Input{Snapshot: s, Storage: m}) {
		if f.Subject == subject {
			return &f
		}
	}
	t.Fatalf("%s: no storage.stacked-encryption finding for %s", name, subject)
	return nil
}

// TestStackedEncryptionTableUnread: a LUKS mapping over a drive that
// encrypts, its dm table unread (no CAP_SYS_ADMIN). The unknown layer is
// the dm one in this machine, not a platform layer below: the finding
// says so, cites the table once, and asks for the table read as root.
// With the table read, the same host is a plain stack and none of this
// is said.
func TestStackedEncryptionTableUnread(t *testing.T) {
	f := stackedOn(t, "aws-i4i-luks-unprivileged", "/data", nil)
	if f.Status != check.Unknown || f.Severity != check.Info {
		t.Fatalf("status %s/%s, want unknown/info", f.Status, f.Severity)
	}
	for _, want := range []string{"1 known encryption layer (drive)", "dm scratch", "could not be read", "cryptsetup LUKS2 mapping"} {
		if !strings.Contains(f.Summary, want) {
			t.Errorf("summary lacks %q: %s", want, f.Summary)
		}
	}
	if strings.Contains(f.Summary, "seen from inside") {
		t.Errorf("summary calls the unread dm table a layer outside the machine: %s", f.Summary)
	}
	var tables int
	for _, e := range f.Evidence {
		if e.Source == "dm table scratch" {
			tables++
			if !strings.Contains(e.Observed, "permission denied") {
				t.Errorf("dm table evidence does not say why it was not read: %+v", e)
			}
		}
	}
	if tables != 1 {
		t.Errorf("%d dm table evidence lines, want 1: %+v", tables, f.Evidence)
	}
	if !strings.Contains(f.Remediation, "\n  dmsetup table scratch\n") || strings.Contains(f.Remediation, "from the platform") {
		t.Errorf("remediation does not ask for the table:\n%s", f.Remediation)
	}
	// Prose lines fit the text report (80 columns less its 4-column
	// indent), so the renderer never continues them as if they were commands.
	for _, line := range strings.Split(f.Remediation, "\n") {
		if len(line) > 76 {
			t.Errorf("remediation line of %d columns: %q", len(line), line)
		}
	}

	// A failing finding leaves Status empty; check.Run fills in fail.
	read := stackedOn(t, "aws-i4i-luks-default", "/data", nil)
	if read.Status != "" || strings.Contains(read.Remediation, "dmsetup table") || strings.Contains(read.Summary, "could not be read") {
		t.Errorf("table read: %s %q\n%s", read.Status, read.Summary, read.Remediation)
	}
}

// TestStackedEncryptionTableUnreadQuotes: the mapping name is data from
// the snapshot; the command it goes into quotes it.
func TestStackedEncryptionTableUnreadQuotes(t *testing.T) {
	f := stackedOn(t, "aws-i4i-luks-unprivileged", "/data", func(s *snapshot.Snapshot) {
		for i := range s.Storage.BlockDevices {
			if d := &s.Storage.BlockDevices[i]; d.DM != nil {
				d.DM.Name = "scr atch;reboot"
			}
		}
	})
	if !strings.Contains(f.Remediation, "\n  dmsetup table 'scr atch;reboot'\n") {
		t.Errorf("mapping name not quoted:\n%s", f.Remediation)
	}
}
