package htmlpage

import (
	"bytes"
	"strings"
	"testing"
)

func TestVendoredLibraryFitsInAScript(t *testing.T) {
	if len(echartsJS) < 500_000 {
		t.Fatalf("embedded echarts is %d bytes: not the vendored echarts.min.js", len(echartsJS))
	}
	if strings.Contains(strings.ToLower(echartsJS), "</script") {
		t.Fatal("echarts.min.js contains </script: it cannot be inlined unescaped")
	}
	if !strings.Contains(echartsJS, `version="`+EChartsVersion+`"`) && !strings.Contains(echartsJS, `"`+EChartsVersion+`"`) {
		t.Errorf("embedded library does not declare version %s", EChartsVersion)
	}
}

func TestRenderIsSelfContainedAndEscaped(t *testing.T) {
	evil := `</script><script>alert(1)</script>`
	var buf bytes.Buffer
	err := Render(&buf, Page{Title: "t " + evil, Sections: []Section{{
		Heading: "h",
		Blocks: []Block{
			{Text: evil},
			{Table: &Table{Header: []string{"a"}, Rows: [][]Cell{{{Text: evil, Class: "bad"}}}}},
			{Chart: &Chart{Option: map[string]any{"title": map[string]any{"text": evil}, "series": []any{}}}},
			{Items: []Item{{Title: evil, Lines: []string{evil}, Code: []string{evil}}}},
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if n := strings.Count(out, "<script>alert(1)"); n != 0 {
		t.Errorf("user text reached the page unescaped %d times", n)
	}
	// Exactly the two script elements of the template.
	if n := strings.Count(out, "<script"); n != 2 {
		t.Errorf("%d script elements, want 2", n)
	}
	for _, bad := range []string{"src=", "href=", "@import", "url("} {
		if strings.Contains(strings.ReplaceAll(out, echartsJS, ""), bad) {
			t.Errorf("page outside the library contains %q", bad)
		}
	}
	if !strings.Contains(out, "Content-Security-Policy") || !strings.Contains(out, "default-src 'none'") {
		t.Error("no Content-Security-Policy forbidding fetches")
	}
	if !strings.Contains(out, `id="chart-0"`) {
		t.Error("chart box missing")
	}
}

func TestRenderRejectsUnmarshallableOption(t *testing.T) {
	err := Render(&bytes.Buffer{}, Page{Sections: []Section{{Blocks: []Block{{Chart: &Chart{Option: map[string]any{"x": func() {}}}}}}}})
	if err == nil {
		t.Fatal("no error for an option that is not JSON")
	}
}
