package htmlreport

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/chromium"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

func doctorReport(t *testing.T, host string) *analyze.Report {
	t.Helper()
	s, err := snapshot.Load(filepath.Join("../../../testdata/hosts", host+".json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := analyze.Run(s, check.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDoctorPageContent(t *testing.T) {
	r := doctorReport(t, "azure-e16dv5-eah-luks")
	var buf bytes.Buffer
	if err := WriteDoctor(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"storage.stacked-encryption", "dmcrypt.workqueue", // findings
		"cryptsetup refresh --perf-no_read_workqueue", // the fix
		"/mnt/data: 3 encryption layers",              // the path summary
		`encrypted by kernel-cpu`,                     // encryption marked in the diagram data
		`"type":"tree"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor HTML lacks %q", want)
		}
	}
}

// openInChromium writes page to a file and loads it in a real headless
// Chromium, then applies the acceptance checks every report must pass:
// each chart drew (non-blank pixels in a screenshot), the page made no
// request but for itself, nothing went to the console as an error.
func openInChromium(t *testing.T, page []byte) *chromium.Page {
	t.Helper()
	exe, err := chromium.Find()
	if err != nil {
		testenv.Unavailable(t, err.Error())
	}
	f := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(f, page, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p, err := chromium.Open(ctx, exe, f)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Requests) != 1 || p.Requests[0] != "file://"+f {
		t.Errorf("page made requests besides itself: %q", p.Requests)
	}
	if len(p.ConsoleErrors) > 0 {
		t.Errorf("console errors: %q", p.ConsoleErrors)
	}
	if p.ChartsTotal == 0 || p.ChartsDrawn != p.ChartsTotal || len(p.Charts) != p.ChartsTotal {
		t.Errorf("charts drawn %d of %d (%d boxes)", p.ChartsDrawn, p.ChartsTotal, len(p.Charts))
	}
	for i, b := range p.Charts {
		// A drawn chart has axes, labels and marks: thousands of pixels.
		if n := p.NonBlankPixels(b); n < 500 {
			t.Errorf("chart %d (%+v) has %d non-blank pixels: not drawn", i, b, n)
		}
	}
	return p
}

func TestDoctorHTMLInChromium(t *testing.T) {
	for _, host := range []string{"azure-e16dv5-eah-luks", "net-aws-ena", "baremetal-crypt-on-crypt-loop"} {
		t.Run(host, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteDoctor(&buf, doctorReport(t, host)); err != nil {
				t.Fatal(err)
			}
			p := openInChromium(t, buf.Bytes())
			t.Logf("%s: %d bytes, %d charts, first contentful paint %v", host, buf.Len(), p.ChartsTotal, p.FirstContentfulPaint)
		})
	}
}

// TestLayerNodeUnknownMark: the chart marks an unknown layer as the text
// report does: a cloud disk is unknown "from inside", a dm table that
// could not be read is just unknown.
func TestLayerNodeUnknownMark(t *testing.T) {
	for _, tc := range []struct {
		l    storagemodel.Layer
		want string
	}{
		{storagemodel.Layer{Kind: storagemodel.LayerCloud, Name: "nvme0n1", EncryptionUnknown: true}, "[encryption unknown from inside]"},
		{storagemodel.Layer{Kind: "dm", Name: "dm-0", EncryptionUnknown: true}, "[encryption unknown]"},
	} {
		if got := layerNode(tc.l).Name; !strings.HasSuffix(got, tc.want) {
			t.Errorf("%s %s: %q, want it to end in %q", tc.l.Kind, tc.l.Name, got, tc.want)
		}
	}
}
