package storagecheck_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/check/storagecheck"
	"github.com/slowpath/slowpath/internal/report"
)

// TestKeyNeverInReports feeds a crypt table that still holds its hex key (a
// snapshot that bypassed collection-time redaction, e.g. hand-written) and
// proves no report format prints it: the model refuses the key field, and
// the path is reported as incomplete instead.
func TestKeyNeverInReports(t *testing.T) {
	const key = "6a1f0c3e9b8d7f2a4c5e6d7f8a9b0c1d2e3f405162738495a6b7c8d9e0f1a2b3"
	s := storagecheck.CryptHost("aes-xts-plain64 " + key + key + " 0 DEV 32768")
	r, err := analyze.Run(s, check.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "json", "markdown"} {
		var buf bytes.Buffer
		if err := report.Write(&buf, r, format, report.Options{}); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if strings.Contains(out, key[:16]) {
			t.Errorf("%s report contains key material", format)
		}
		if !strings.Contains(out, "unredacted key material is refused") {
			t.Errorf("%s report does not say why the crypt table was not read:\n%s", format, out)
		}
	}
}
