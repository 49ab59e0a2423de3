package storagecheck

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// engineRun runs storage.engine-encryption on the MariaDB fixture with its
// engine changed by edit.
func engineRun(t *testing.T, edit func(e *snapshot.Engine)) check.Finding {
	t.Helper()
	s, err := snapshot.Load(filepath.Join(hostsDir, "aws-i4i-mariadb-luks.json"))
	if err != nil {
		t.Fatal(err)
	}
	edit(&s.Engines.Processes[0])
	fs := runEngineEncryption(&check.Input{Snapshot: s, Storage: storagemodel.Build(s)})
	if len(fs) != 1 {
		t.Fatalf("%d findings, want 1: %+v", len(fs), fs)
	}
	return fs[0]
}

func TestEngineEncryptionFinding(t *testing.T) {
	f := engineRun(t, func(*snapshot.Engine) {})
	for _, want := range []string{"MariaDB InnoDB (mariadbd, pid 1873) encrypts tables, logs, temp", "(service-cpu)",
		"on /var/lib/mysql, over dm-crypt (kernel-cpu), cloud-disk (drive)"} {
		if !strings.Contains(f.Summary, want) {
			t.Errorf("summary does not say %q: %s", want, f.Summary)
		}
	}
	if !strings.Contains(f.Remediation, "INNODB_TABLESPACES_ENCRYPTION") {
		t.Errorf("remediation: %s", f.Remediation)
	}
	// Every setting is evidence, the one that is off too.
	if !strings.Contains(evidenceText(f), "encrypt_binlog: OFF (off)") {
		t.Errorf("evidence: %s", evidenceText(f))
	}

	for _, tt := range []struct {
		name string
		edit func(e *snapshot.Engine)
		want check.Status
		says string
	}{
		{"no data dir", func(e *snapshot.Engine) { e.DataDir, e.DataDev = "", "" }, check.Unknown, "data directory was not found"},
		{"on no path", func(e *snapshot.Engine) { e.DataDev = "8:1" }, check.Unknown, "no storage path holds its data (device 8:1)"},
		{"all off", func(e *snapshot.Engine) {
			for i := range e.Encryption {
				e.Encryption[i].Enabled = false
			}
		}, check.Pass, "encrypts none of its files itself"},
		{"hostile text", func(e *snapshot.Engine) { e.Comm = "mariadbd\x1b[2J"; e.Notes = []string{"include loop\nat x"} }, check.Fail, "mariadbd?[2J"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := engineRun(t, tt.edit)
			if f.Status != tt.want || !strings.Contains(f.Summary+evidenceText(f), tt.says) {
				t.Errorf("%s: %s, want %s saying %q", f.Status, f.Summary, tt.want, tt.says)
			}
			if strings.ContainsAny(f.Summary+evidenceText(f), "\x1b\n") {
				t.Errorf("control characters reach the finding: %q", f.Summary+evidenceText(f))
			}
		})
	}

	// No engine in the snapshot passes; one the collector could not read is unknown.
	s := &snapshot.Snapshot{}
	if fs := runEngineEncryption(&check.Input{Snapshot: s}); len(fs) != 1 || fs[0].Status != check.Pass {
		t.Errorf("no engines: %+v", fs)
	}
	s.Manifest.Errors = []snapshot.CollectError{{Collector: "engines", Message: "permission denied"}}
	if fs := runEngineEncryption(&check.Input{Snapshot: s}); len(fs) != 1 || fs[0].Status != check.Unknown {
		t.Errorf("engines not collected: %+v", fs)
	}
}

func evidenceText(f check.Finding) string {
	var b strings.Builder
	for _, e := range f.Evidence {
		b.WriteString(e.Source + " " + e.Key + ": " + e.Observed + " (expected " + e.Expected + ") | ")
	}
	return b.String()
}
