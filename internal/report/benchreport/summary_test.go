package benchreport

import (
	"bytes"
	"testing"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/testing/golden"
)

// The summary prints the encryption tax's line after where the time went.
// The result is the engine's own golden file (experiment's
// TestTaxInResultFile writes it from its tax assessment).
func TestSummaryWithTax(t *testing.T) {
	r, err := benchresult.ReadFile("../../experiment/testdata/result-tax.json")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteSummary(&out, r, SummaryOptions{Tabs: true}); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "testdata/summary-tax.txt", out.Bytes())
}
