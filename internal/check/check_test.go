package check

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSeverityJSON(t *testing.T) {
	for _, s := range []Severity{Info, Warning, Critical} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back Severity
		if err := json.Unmarshal(b, &back); err != nil || back != s {
			t.Errorf("%v -> %s -> %v (%v)", s, b, back, err)
		}
	}
	if _, err := ParseSeverity("loud"); err == nil {
		t.Error("ParseSeverity accepted an unknown name")
	}
	if none, _ := ParseSeverity("none"); none <= Critical {
		t.Error("none must be above every severity so nothing fails")
	}
}

func TestRunFillsDefaultsAndSorts(t *testing.T) {
	saved := registry
	t.Cleanup(func() { registry = saved })
	registry = map[string]Check{}
	Register(Check{ID: "b.two", Severity: Warning, Run: func(*Input) []Finding {
		return []Finding{{Subject: "/z"}, {Subject: "/a"}, {Subject: "/p", Status: Pass}}
	}})
	Register(Check{ID: "a.one", Severity: Info, Run: func(*Input) []Finding {
		return []Finding{{Subject: "/x", Severity: Critical, Status: Unknown}, {Subject: "/y", Status: Unknown}}
	}})
	got := Run(&Input{}, false)
	want := []Finding{
		{ID: "a.one", Status: Unknown, Severity: Critical, Subject: "/x"},
		{ID: "b.two", Status: Fail, Severity: Warning, Subject: "/a"},
		{ID: "b.two", Status: Fail, Severity: Warning, Subject: "/z"},
		{ID: "a.one", Status: Unknown, Severity: Info, Subject: "/y"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Run (-want +got):\n%s", d)
	}
	if Worst(got) != Critical {
		t.Errorf("Worst = %v", Worst(got))
	}
	if n := len(Run(&Input{}, true)); n != 5 {
		t.Errorf("keepPass kept %d findings, want 5", n)
	}
}

func TestRegisterRejectsDuplicates(t *testing.T) {
	saved := registry
	t.Cleanup(func() { registry = saved })
	registry = map[string]Check{}
	c := Check{ID: "x.y", Severity: Info, Run: func(*Input) []Finding { return nil }}
	Register(c)
	defer func() {
		if recover() == nil {
			t.Error("duplicate registration did not panic")
		}
	}()
	Register(c)
}

func TestRequiredStack(t *testing.T) {
	c := Config{RequiredStacks: []string{"/data"}}
	if !c.IsRequiredStack("/data") || c.IsRequiredStack("/") {
		t.Error("IsRequiredStack")
	}
}
