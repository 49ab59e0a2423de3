package flamegraph

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/testing/golden"
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
	if n, err := Render(&buf, stacks, o); err != nil || n != 0 {
		t.Fatalf("Render: %d names replaced, %v", n, err)
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
	if _, err := Render(&buf, stacks, Options{Width: 820}); err != nil {
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

// TestRenderForbiddenChars: names holding characters XML 1.0 does not
// allow come out as U+FFFD, the SVG parses, and a note counts the names.
func TestRenderForbiddenChars(t *testing.T) {
	for _, tc := range []struct {
		name     string
		frames   []string
		want     []string // titles' names, in drawing order after the root
		replaced int
	}{
		{"U+FFFE", []string{"a", "b\uFFFE"}, []string{"a", "b\uFFFD"}, 1},
		{"U+FFFF and a C0 control", []string{"x\uFFFF", "y\x01z"}, []string{"x\uFFFD", "y\uFFFDz"}, 2},
		{"invalid UTF-8", []string{"\xffq"}, []string{"\uFFFDq"}, 1},
		{"lone surrogate", []string{"s\xed\xa0\x80"}, []string{"s\uFFFD\uFFFD\uFFFD"}, 1},
		{"allowed: tab, CR, U+FFFD itself, astral", []string{"t\tu\rv", "w\uFFFD", "\U0001F600"}, []string{"t\tu\rv", "w\uFFFD", "\U0001F600"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			n, err := Render(&buf, []Stack{{Frames: tc.frames, Count: 1}}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.replaced {
				t.Errorf("replaced = %d, want %d", n, tc.replaced)
			}
			wellFormed(t, buf.Bytes())
			var got []string
			for _, el := range elements(t, buf.Bytes())[1:] {
				name, _, _ := strings.Cut(el.title, " (1 samples")
				got = append(got, name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("frame names (-want +got)\n%s", diff)
			}
			note := fmt.Sprintf(">%d frame name", tc.replaced)
			if has := bytes.Contains(buf.Bytes(), []byte(note)); has != (tc.replaced > 0) {
				t.Errorf("note %q present = %v, want %v:\n%s", note, has, tc.replaced > 0, buf.Bytes())
			}
		})
	}
}

// TestRenderNoteCountsDrawnNames: a name repeated in several stacks counts
// once, and a frame too narrow to draw is not counted.
func TestRenderNoteCountsDrawnNames(t *testing.T) {
	stacks := []Stack{
		{Frames: []string{"a", "b\x00"}, Count: 1_000_000},
		{Frames: []string{"c", "b\x00"}, Count: 1_000_000},
		{Frames: []string{"tiny\x00"}, Count: 1},
	}
	var buf bytes.Buffer
	n, err := Render(&buf, stacks, Options{})
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, buf.Bytes())
	if n != 1 || !bytes.Contains(buf.Bytes(), []byte(">1 frame name held")) {
		t.Errorf("replaced = %d, want 1 and a note saying so:\n%s", n, buf.Bytes())
	}
}

// FuzzParseFoldedRender: for every input that parses, the SVG is
// well-formed XML to encoding/xml's strict decoder, and every frame with
// samples has a title naming it: its name with characters XML forbids as
// U+FFFD (xmlAllowed states the rule independently of the renderer).
// MinWidth is set so small that no frame with samples is left out.
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
	f.Add("a;b\uFFFE 1\n")
	f.Add("\x01;\xff\xfe;c\rd;]]> 5\n")
	f.Fuzz(func(t *testing.T, in string) {
		stacks, err := ParseFolded(strings.NewReader(in))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if _, err := Render(&buf, stacks, Options{MinWidth: math.SmallestNonzeroFloat64}); err != nil {
			return
		}
		// A title is "NAME (COUNT samples, PCT%)"; NAME may hold " (".
		names := map[string]bool{}
		for _, el := range elements(t, buf.Bytes()) {
			if i := strings.LastIndex(el.title, " ("); i >= 0 {
				names[el.title[:i]] = true
			}
		}
		for _, s := range stacks {
			if s.Count == 0 {
				continue
			}
			for _, fr := range s.Frames {
				if want := xmlAllowed(fr); !names[want] {
					t.Fatalf("no frame titled %q in:\n%s", want, buf.Bytes())
				}
			}
		}
	})
}

// xmlAllowed is the fuzz oracle's own statement of the XML 1.0 Char rule:
// every rune outside it, and every byte that is not UTF-8, is U+FFFD.
func xmlAllowed(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1,
			r < 0x20 && r != '\t' && r != '\n' && r != '\r',
			0xD800 <= r && r <= 0xDFFF, r == 0xFFFE, r == 0xFFFF:
			r = utf8.RuneError
		}
		b.WriteRune(r)
		s = s[size:]
	}
	return b.String()
}
