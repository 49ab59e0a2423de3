package analyze_test

import (
	"os"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
)

// TestDocsNameEveryCheck: the README's list and the check catalogue name
// every registered check (the README once listed 13 of 15).
func TestDocsNameEveryCheck(t *testing.T) {
	_ = analyze.Run // the check packages register through analyze's imports
	all := check.All()
	if len(all) < 15 {
		t.Fatalf("%d checks registered", len(all))
	}
	for _, doc := range []string{"../../README.md", "../../docs/checks.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range all {
			if !strings.Contains(string(b), "`"+c.ID+"`") {
				t.Errorf("%s does not name %s", doc, c.ID)
			}
		}
	}
}
