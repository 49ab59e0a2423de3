package report_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/report"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// TestTextFits80Columns renders every fixture host and checks that each line
// of the whole text report fits 80 columns, with and without colour.
func TestTextFits80Columns(t *testing.T) {
	hosts, err := filepath.Glob("../../testdata/hosts/*.json")
	if err != nil || len(hosts) == 0 {
		t.Fatalf("no fixture hosts: %v", err)
	}
	for _, h := range hosts {
		s, err := snapshot.Load(h)
		if err != nil {
			t.Fatal(err)
		}
		r, err := analyze.Run(s, check.Config{})
		if err != nil {
			t.Fatal(err)
		}
		for _, color := range []bool{false, true} {
			var buf bytes.Buffer
			if err := report.Write(&buf, r, "text", report.Options{Color: color}); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if !strings.Contains(out, "Storage paths") {
				t.Fatalf("%s: no storage section", h)
			}
			for _, line := range strings.Split(out, "\n") {
				if n := report.VisibleLen(line); n > 80 {
					t.Errorf("%s (colour %v): %d columns: %q", filepath.Base(h), color, n, line)
				}
			}
		}
	}
}
