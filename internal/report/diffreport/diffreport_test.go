package diffreport

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slowpath/slowpath/internal/nodediff"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/golden"
)

const hostsDir = "../../../testdata/hosts"

func compare(t *testing.T, a, b string) []nodediff.Difference {
	t.Helper()
	var snaps [2]*snapshot.Snapshot
	for i, name := range []string{a, b} {
		s, err := snapshot.Load(filepath.Join(hostsDir, name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		snaps[i] = s
	}
	ds, err := nodediff.Compare(snaps[0], snaps[1])
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestTextGolden renders node pairs that differ the way the incidents
// did, named as `slowpath diff` names the archives it was given.
func TestTextGolden(t *testing.T) {
	for _, pair := range [][2]string{
		{"azure-e16dv5-eah", "azure-e16dv5-noeah"},         // the Azure incident: one setting apart
		{"aws-i4i-luks-default", "aws-r6i-ebs-luks-tuned"}, // default vs tuned dm-crypt flags
		{"net-aws-ena", "net-healthy"},
		{"plain-host", "plain-host"},
	} {
		t.Run(pair[0]+"_vs_"+pair[1], func(t *testing.T) {
			var out bytes.Buffer
			if err := WriteText(&out, New(pair[0]+".tar.gz", pair[1]+".tar.gz", compare(t, pair[0], pair[1]))); err != nil {
				t.Fatal(err)
			}
			// Every line fits 100 columns, however long a storage path.
			for _, l := range strings.Split(out.String(), "\n") {
				if n := utf8.RuneCountInString(l); n > Width {
					t.Errorf("line of %d columns, want at most %d: %q", n, Width, l)
				}
			}
			golden.Compare(t, filepath.Join("testdata", pair[0]+"_vs_"+pair[1]+".txt"), out.Bytes())
		})
	}
}

// TestMarkdownEscapes: a hostile name or item stays in its cell
// (test/hostile runs every command on the hostile fixtures; this is the
// Markdown oracle).
func TestMarkdownEscapes(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, New("a|<b>", "`b`", []nodediff.Difference{{Area: nodediff.AreaStorage, Item: "/mnt/x|y\n| injected | row |", A: "<script>", B: ""}})); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n")[3:] {
		if strings.Count(l, "|") != 5 {
			t.Errorf("row %q has %d cell bars, want 5", l, strings.Count(l, "|"))
		}
	}
	if strings.ContainsAny(strings.SplitN(b.String(), "\n\n", 2)[0], "<>`") {
		t.Errorf("names not escaped: %q", b.String())
	}
}

// TestNoDifferences: every format says so; the JSON lists none rather
// than null.
func TestNoDifferences(t *testing.T) {
	doc := New("a", "b", nil)
	var text, md bytes.Buffer
	if err := WriteText(&text, doc); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, doc); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "No differences") || !strings.Contains(md.String(), "No differences") ||
		string(js) != `{"a":"a","b":"b","differences":[]}` {
		t.Errorf("text %q, markdown %q, JSON %s", text.String(), md.String(), js)
	}
}
