package capturereport

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/capture/capfile"
	"github.com/slowpath/slowpath/internal/testing/golden"
	"github.com/slowpath/slowpath/internal/testing/mdcheck"
)

// manifest is a capture of a database on dm-crypt over a disk, with a few
// events lost, requests that began before it, its io_uring and AIO
// records and a copy_file_range no record describes.
func manifest() *capfile.Manifest {
	return &capfile.Manifest{Kind: capfile.Kind, Status: capfile.StatusComplete, DurationNS: 60_000_400_000,
		Kernel: capfile.Kernel{Release: "6.8.0", FaultSource: capfile.FaultSourcePageFault,
			AIO: capfile.AsyncCaptured, IOURing: capfile.AsyncCaptured},
		Devices: []capfile.Device{{ID: 1, Name: "dm-0", MajorMinor: "253:0", Kind: "dm-crypt", Source: capfile.BlockSourceBio}, {ID: 2, Name: "nvme0n1", MajorMinor: "259:0", Kind: "disk", Source: capfile.BlockSourceRq}},
		Files:   make([]capfile.File, 12), Threads: make([]capfile.Thread, 5),
		Events: capfile.Events{Ops: 48213, Faults: 17, Block: 20117, Dropped: 3, Unmatched: 2, AIO: 12, IOURing: 9240,
			RecursionMisses: 1, Missed: &capfile.Missed{CopyFileRange: 2, CopyFileRangeBytes: 1 << 20}}}
}

// TestGolden: the text and the Markdown of one capture say the same facts.
func TestGolden(t *testing.T) {
	m := manifest()
	var text, md bytes.Buffer
	if err := WriteText(&text, "pg-capture/", m); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, "pg-capture/", m); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "testdata/capture.txt", text.Bytes())
	golden.Compare(t, "testdata/capture.md", md.Bytes())
	for _, f := range facts("pg-capture/", m)[1:] {
		if !strings.Contains(text.String(), f.name+"\t"+f.value+"\n") || !strings.Contains(md.String(), "| "+f.name+" | "+f.value+" |\n") {
			t.Errorf("%s %s not in both the text and the Markdown", f.name, f.value)
		}
	}
}

// hostile is a manifest whose device names and kinds, and the directory
// given on the command line, try to break out of their cell.
func hostile(s string) (string, *capfile.Manifest) {
	m := manifest()
	m.Status, m.Kernel.FaultSource = s, s
	m.Devices[0].Name, m.Devices[0].Kind, m.Devices[1].Source = s, s, s
	return s, m
}

// markdown is what the capture's Markdown keeps: two-cell rows.
var markdown = mdcheck.Rules{Cells: 2}

// TestMarkdownHostile: pipes, backticks, newlines and HTML in a device's
// name or the directory stay text.
func TestMarkdownHostile(t *testing.T) {
	var b bytes.Buffer
	dir, m := hostile(mdcheck.Hostile("cap"))
	if err := WriteMarkdown(&b, dir, m); err != nil {
		t.Fatal(err)
	}
	markdown.Check(t, b.String())
	if want := "| device | " + mdcheck.Escaped("cap") + " (cap"; !strings.Contains(b.String(), want) {
		t.Errorf("markdown lacks %q:\n%s", want, b.String())
	}
}

// FuzzWriteMarkdown: whatever a host names its devices or a user its
// directory, the Markdown holds no HTML and its rows keep two cells.
func FuzzWriteMarkdown(f *testing.F) {
	markdown.Fuzz(f, "dm-0", func(w io.Writer, s string) error {
		dir, m := hostile(s)
		return WriteMarkdown(w, dir, m)
	})
}
