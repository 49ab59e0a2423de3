package report_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/report"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// TestStorageTextFits80Columns renders the storage section of every fixture
// host and checks that each line fits 80 columns, with and without colour.
func TestStorageTextFits80Columns(t *testing.T) {
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
			start := strings.Index(out, "Storage paths")
			if start < 0 {
				t.Fatalf("%s: no storage section", h)
			}
			section := out[start:]
			if end := strings.Index(section, "\n\x1b[1m"); color && end > 0 {
				section = section[:end]
			}
			for _, heading := range []string{"\nNetwork\n", "\nFindings\n"} {
				if end := strings.Index(section, heading); end > 0 {
					section = section[:end]
				}
			}
			for _, line := range strings.Split(section, "\n") {
				if n := utf8.RuneCountInString(stripANSI(line)); n > 80 {
					t.Errorf("%s (colour %v): %d columns: %q", filepath.Base(h), color, n, line)
				}
			}
		}
	}
}

func stripANSI(s string) string {
	var b strings.Builder
	esc := false
	for _, r := range s {
		switch {
		case esc:
			if r == 'm' {
				esc = false
			}
		case r == 0x1b:
			esc = true
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
