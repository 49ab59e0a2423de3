package analyze_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/report"
	"github.com/slowpath/slowpath/internal/snapshot"
)

func textOf(t *testing.T, host string, o report.Options) string {
	t.Helper()
	s, err := snapshot.Load(filepath.Join(hostsDir, host+".json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := analyze.Run(s, loadFixtureConfig(t, host))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := report.Write(&buf, r, "text", o); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestSummarySaysWhatToDo: doctor's text ends with the counts, the next
// command (fix where a finding has one, bench to measure where none has,
// nothing on a clean host) and the exit status in words for --fail-on.
func TestSummarySaysWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		host string
		o    report.Options
		want []string
	}{
		{"azure-e16dv5-eah-luks", report.Options{From: "h.json"}, []string{"Findings: 0 critical, 2 warning, 0 info; 1 could not be decided (unknown).",
			"Next: slowpath fix --from h.json prints the plan", "Exit status 1: a warning finding is at or above --fail-on warning", report.GlossaryURL}},
		{"azure-e16dv5-eah-luks", report.Options{FailOn: check.Critical}, []string{"Exit status 0: no finding is at or above --fail-on critical"}},
		{"aws-r6i-ebs-luks-tuned", report.Options{}, []string{"Next: measure what the path costs: slowpath bench PROFILE --dir DIR"}},
		{"plain-host", report.Options{}, []string{"Findings: 0 critical, 0 warning, 0 info.", "Next: nothing to do.", "Exit status 0"}},
	} {
		out := textOf(t, tc.host, tc.o)
		_, summary, ok := strings.Cut(out, "\nSummary\n")
		if !ok {
			t.Fatalf("%s: no summary:\n%s", tc.host, out)
		}
		flat := strings.Join(strings.Fields(summary), " ")
		for _, w := range tc.want {
			if !strings.Contains(flat, w) {
				t.Errorf("%s %+v: summary lacks %q:\n%s", tc.host, tc.o, w, summary)
			}
		}
	}
}

// TestGlossaryCoversReportTerms: every cloud fact, encryption site and
// layer count word the fixtures' text reports print is in docs/glossary.md,
// so the link in the summary never leads to a page without the term.
func TestGlossaryCoversReportTerms(t *testing.T) {
	g, err := os.ReadFile("../../docs/glossary.md")
	if err != nil {
		t.Fatal(err)
	}
	terms := map[string]bool{"unknown": true, "local SSD (queue/rotational says 1)": true, "Not collected": true}
	fact := regexp.MustCompile(`fact\s+([a-z0-9-]+)`)
	by := regexp.MustCompile(`\[encrypted by ([a-z-]+)\]`)
	key := regexp.MustCompile(`\d+-bit key \(([a-z]+)\)`)
	vmbus := regexp.MustCompile(`matches (\?0{8}-\d{4}-\*)`)
	// Phrases of the text report a newcomer asked about (issue 44).
	phrases := []string{"(root)", "(resource)", "documented as kB", "see the manifest"}
	for _, h := range fixtureHosts(t, hostsDir) {
		name := strings.TrimSuffix(filepath.Base(h), ".json")
		out := textOf(t, name, report.Options{})
		for _, re := range []*regexp.Regexp{fact, by, vmbus} {
			for _, m := range re.FindAllStringSubmatch(out, -1) {
				terms[m[1]] = true
			}
		}
		for _, m := range key.FindAllStringSubmatch(out, -1) {
			terms["`"+m[1]+"`"] = true
		}
		for _, p := range phrases {
			if strings.Contains(out, p) {
				terms[p] = true
			}
		}
	}
	if len(terms) < 8 {
		t.Fatalf("only %d terms found: the fixtures or the patterns changed", len(terms))
	}
	for term := range terms {
		if !strings.Contains(string(g), term) {
			t.Errorf("docs/glossary.md does not explain %q, which a report prints", term)
		}
	}
}
