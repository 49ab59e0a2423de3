package fleetverdict

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/check"
)

// TestFindingSeriesExist: every series a check declares for `fleet
// verdict` (check.Check.Series) reads series that exist: ones the agent
// exports (its golden scrapes, internal/agent/testdata) with the label
// values it selects, or recording rules of
// deploy/kubernetes/prometheusrule.yaml. A name is one series: two checks
// that share it share its query. Its query is per node, and a value of it
// reaches back only $__rate_interval unless it says how far.
func TestFindingSeriesExist(t *testing.T) {
	scrapes, err := filepath.Glob("../agent/testdata/*.prom")
	if err != nil || len(scrapes) == 0 {
		t.Fatalf("no agent scrapes: %v", err)
	}
	var samples []string // the scrapes' sample lines
	exported := map[string]bool{}
	for _, p := range scrapes {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
				exported[f[2]] = true
			} else if l != "" && !strings.HasPrefix(l, "#") {
				samples = append(samples, l)
			}
		}
	}
	rules, err := os.ReadFile("../../deploy/kubernetes/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^\s*- record: (\S+)$`).FindAllStringSubmatch(string(rules), -1) {
		exported[m[1]] = true
	}

	metric := regexp.MustCompile(`[a-zA-Z_:]*slowpath_[a-zA-Z0-9_:]*`)
	matcher := regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}`)
	byName := map[string]check.Series{}
	n := 0
	for _, c := range check.All() {
		s := c.Series
		if s == nil {
			continue
		}
		n++
		if err := checkName(s.Name); err != nil {
			t.Errorf("%s: %v", c.ID, err)
		}
		if prev, ok := byName[s.Name]; ok && prev != *s {
			t.Errorf("%s: series %s is %+v here, %+v in another check", c.ID, s.Name, *s, prev)
		}
		byName[s.Name] = *s
		if !strings.Contains(s.Expr, "by ($node)") {
			t.Errorf("%s: %s is not per node (by ($node)): %s", c.ID, s.Name, s.Expr)
		}
		if !strings.Contains(s.Expr, "$__rate_interval") && s.Lookback == 0 {
			t.Errorf("%s: %s reads no $__rate_interval and says no lookback: %s", c.ID, s.Name, s.Expr)
		}
		names := metric.FindAllString(s.Expr, -1)
		if len(names) == 0 {
			t.Errorf("%s: %s reads no slowpath series: %s", c.ID, s.Name, s.Expr)
		}
		for _, m := range names {
			if !exported[m] {
				t.Errorf("%s: %s reads %s, which neither the agent exports nor a recording rule records", c.ID, s.Name, m)
			}
		}
		for _, sel := range matcher.FindAllStringSubmatch(s.Expr, -1) {
			for _, lv := range strings.Split(sel[2], ",") {
				lv = strings.TrimSpace(lv)
				found := false
				for _, l := range samples {
					if strings.HasPrefix(l, sel[1]+"{") && strings.Contains(l, lv) {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("%s: %s selects %s{%s}: no such sample in the agent's scrapes", c.ID, s.Name, sel[1], lv)
				}
			}
		}
	}
	if n == 0 {
		t.Error("no check declares a series: the check packages are not imported")
	}
}
