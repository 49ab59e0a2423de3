package analyze_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/report"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// FuzzAnalyze feeds mutated fixture snapshots through the whole pipeline
// that doctor --from runs (decode, models, checks, every renderer): a hand-
// edited or damaged snapshot must give an error or a report, never a panic.
func FuzzAnalyze(f *testing.F) {
	hosts, err := filepath.Glob(filepath.Join(hostsDir, "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, h := range hosts {
		b, err := os.ReadFile(h)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := snapshot.Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		r, err := analyze.Run(s, check.Config{RequiredStacks: []string{"/"}})
		if err != nil {
			return
		}
		for _, format := range []string{"text", "json", "markdown"} {
			if err := report.Write(io.Discard, r, format, report.Options{Color: true}); err != nil {
				t.Fatalf("%s: %v", format, err)
			}
		}
	})
}
