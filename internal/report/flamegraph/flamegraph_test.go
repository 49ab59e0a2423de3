package flamegraph

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/golden"
)

func TestParseFolded(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Stack
		wantErr string
	}{
		{name: "empty", in: "", want: nil},
		{name: "one", in: "a;b;c 3\n", want: []Stack{{Frames: []string{"a", "b", "c"}, Count: 3}}},
		{name: "merge and blank lines", in: "a;b 1\n\na;b 2\r\nc 4\n", want: []Stack{{Frames: []string{"a", "b"}, Count: 3}, {Frames: []string{"c"}, Count: 4}}},
		{name: "spaces in frame names", in: "do_softirq.part.0;func (inlined) 7\n", want: []Stack{{Frames: []string{"do_softirq.part.0", "func (inlined)"}, Count: 7}}},
		{name: "tab separator", in: "a;b\t9\n", want: []Stack{{Frames: []string{"a", "b"}, Count: 9}}},
		{name: "no count", in: "a;b\n", wantErr: "no count"},
		{name: "bad count", in: "a;b x\n", wantErr: `count "x"`},
		{name: "negative count", in: "a -1\n", wantErr: `count "-1"`},
		{name: "no frames", in: " 5\n", wantErr: "no frames"},
		{name: "overflow", in: "a 18446744073709551615\na 1\n", wantErr: "overflows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFolded(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func renderFile(t *testing.T, path string, o Options) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stacks, err := ParseFolded(f)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Render(&buf, stacks, o); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRenderGolden(t *testing.T) {
	for _, tc := range []struct {
		in, golden string
		o          Options
	}{
		{"testdata/drops.folded", "testdata/drops.svg", Options{Title: "Packet drops", CountName: "drops"}},
		{"testdata/empty.folded", "testdata/empty.svg", Options{}},
	} {
		got := renderFile(t, tc.in, tc.o)
		golden.Compare(t, tc.golden, got)
		wellFormed(t, got)
		// Deterministic: a second rendering gives the same bytes.
		if again := renderFile(t, tc.in, tc.o); !bytes.Equal(again, got) {
			t.Errorf("%s: two renderings differ", tc.in)
		}
	}
}

// TestRenderWidths checks the geometry: a frame's width is proportional
// to its count, and children sit inside their parent.
func TestRenderWidths(t *testing.T) {
	stacks := []Stack{{Frames: []string{"a", "b"}, Count: 3}, {Frames: []string{"a", "c"}, Count: 1}, {Frames: []string{"d"}, Count: 4}}
	var buf bytes.Buffer
	if err := Render(&buf, stacks, Options{Width: 820}); err != nil {
		t.Fatal(err)
	}
	rects := map[string][2]float64{} // name -> x, width
	for _, el := range elements(t, buf.Bytes()) {
		rects[el.title] = [2]float64{el.x, el.w}
	}
	// 800 usable pixels for 8 samples: 100 per sample.
	want := map[string][2]float64{
		"all (8 samples, 100%)": {10, 800},
		"a (4 samples, 50%)":    {10, 400},
		"b (3 samples, 37.5%)":  {10, 300},
		"c (1 samples, 12.5%)":  {310, 100},
		"d (4 samples, 50%)":    {410, 400},
	}
	if diff := cmp.Diff(want, rects); diff != "" {
		t.Errorf("frames (-want +got)\n%s", diff)
	}
}

type element struct {
	title string
	x, w  float64
}

// elements parses the SVG (which also proves it is well-formed XML) and
// returns every frame's title and rectangle.
func elements(t *testing.T, svg []byte) []element {
	t.Helper()
	var doc struct {
		G []struct {
			Title string `xml:"title"`
			Rect  struct {
				X     float64 `xml:"x,attr"`
				Width float64 `xml:"width,attr"`
			} `xml:"rect"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal(svg, &doc); err != nil {
		t.Fatalf("SVG is not well-formed XML: %v", err)
	}
	var out []element
	for _, g := range doc.G {
		out = append(out, element{g.Title, g.Rect.X, g.Rect.Width})
	}
	return out
}

func wellFormed(t *testing.T, svg []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
	}
}

func FuzzParseFoldedRender(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.folded")
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("a;b 1\na;;b 2\n;; 3\n")
	f.Fuzz(func(t *testing.T, in string) {
		stacks, err := ParseFolded(strings.NewReader(in))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := Render(&buf, stacks, Options{}); err != nil {
			return
		}
		// Invalid UTF-8 in names may make the XML unparsable; everything
		// else must come out well-formed.
		if !strings.ContainsRune(strings.ToValidUTF8(in, "\uFFFD"), '\uFFFD') && !hasControl(in) {
			wellFormed(t, buf.Bytes())
		}
	})
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' {
			return true
		}
	}
	return false
}
