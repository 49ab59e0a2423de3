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
// of the whole text report fits 80 columns, with and without colour, but
// for a finding's references (a URL is not broken).
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
				// A reference is printed whole, so it can be followed or
				// copied; nothing else on its line.
				if ref, ok := strings.CutPrefix(line, "  see: "); ok && strings.HasPrefix(ref, "https://") && !strings.Contains(ref, " ") {
					continue
				}
				if n := report.VisibleLen(line); n > 80 {
					t.Errorf("%s (colour %v): %d columns: %q", filepath.Base(h), color, n, line)
				}
			}
		}
	}
}

// TestLayerNoteOnce: a layer's note is said once in the storage tree. A dm
// layer whose table was not read carries it on its own line, so its
// "encryption unknown" mark does not repeat it; a cloud disk's line does
// not carry it, so its mark does (how to find out).
func TestLayerNoteOnce(t *testing.T) {
	s, err := snapshot.Load("../../testdata/hosts/aws-i4i-luks-unprivileged.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := analyze.Run(s, check.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := report.Write(&buf, r, "text", report.Options{}); err != nil {
		t.Fatal(err)
	}
	tree, _, ok := strings.Cut(buf.String(), "\nFindings\n")
	if !ok {
		t.Fatalf("no findings section:\n%s", buf.String())
	}
	flat := strings.Join(strings.Fields(tree), " ")
	for _, tc := range []struct {
		note string
		want int
	}{
		{"device-mapper table not read: DM_TABLE_STATUS 253:0", 1},
		// /, /boot/efi and the unmounted partition sit on the EBS disk.
		{"EBS encryption is set per volume", 3},
	} {
		if n := strings.Count(flat, tc.note); n != tc.want {
			t.Errorf("%q said %d times in the storage tree, want %d:\n%s", tc.note, n, tc.want, tree)
		}
	}
}
