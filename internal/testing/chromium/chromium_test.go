package chromium

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// open loads html in a real headless Chromium.
func open(t *testing.T, html string) *Page {
	t.Helper()
	exe, err := Find()
	if err != nil {
		testenv.Unavailable(t, err.Error())
	}
	f := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(f, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := Open(ctx, exe, f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Opening a page leaves nothing in the temporary directory: not the
// browser's profile (chromedp's), nor its singleton socket directory
// (org.chromium.Chromium.*, which a killed browser leaves in $TMPDIR).
func TestOpenLeavesNoTempFiles(t *testing.T) {
	// Not t.TempDir(): its long name would put the browser's socket path
	// over the 108 bytes of sun_path.
	tmp, err := os.MkdirTemp("", "spt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)
	p := open(t, `<!DOCTYPE html><html><head><title>t</title></head><body>x</body></html>`)
	if len(p.Requests) == 0 {
		t.Fatal("the page was not loaded")
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		if strings.HasPrefix(e.Name(), t.Name()) {
			continue // open's t.TempDir, with the page
		}
		t.Errorf("left in TMPDIR: %s", e.Name())
	}
}

// The harness must see what it is meant to catch, or the report tests
// built on it would pass vacuously: a fetch, a console error, an
// exception, drawn and undrawn boxes.
func TestHarnessSeesRequestsErrorsAndPixels(t *testing.T) {
	// .invalid never resolves (RFC 2606) and the browser's resolver is
	// disabled anyway: the request is attempted and seen, nothing leaves.
	p := open(t, `<!DOCTYPE html><html><head><title>t</title></head><body style="margin:0;background:#fff">
<div class="chart" style="width:200px;height:100px;background:#fff"></div>
<div class="chart" style="width:200px;height:100px"><canvas id="c" width="200" height="100"></canvas></div>
<img src="http://slowpath-test.invalid/x.png">
<script>
var g = document.getElementById("c").getContext("2d"); g.fillStyle = "#c62828"; g.fillRect(10, 10, 50, 50);
console.error("boom");
window.slowpathCharts = {drawn: 1, total: 2};
setTimeout(function(){ null.x; }, 0);
</script></body></html>`)
	if len(p.Requests) < 2 || !strings.HasPrefix(p.Requests[0], "file://") || !strings.Contains(strings.Join(p.Requests, " "), "slowpath-test.invalid") {
		t.Errorf("requests = %q, want the document and the .invalid image", p.Requests)
	}
	joined := strings.Join(p.ConsoleErrors, "\n")
	if !strings.Contains(joined, "boom") || !strings.Contains(joined, "exception") {
		t.Errorf("console errors = %q, want console.error and the exception", p.ConsoleErrors)
	}
	if len(p.Charts) != 2 || p.ChartsDrawn != 1 || p.ChartsTotal != 2 {
		t.Fatalf("charts = %+v drawn %d/%d", p.Charts, p.ChartsDrawn, p.ChartsTotal)
	}
	if n := p.NonBlankPixels(p.Charts[0]); n != 0 {
		t.Errorf("blank box has %d non-blank pixels", n)
	}
	// 50×50 red square.
	if n := p.NonBlankPixels(p.Charts[1]); n < 2400 || n > 2600 {
		t.Errorf("drawn box has %d non-blank pixels, want about 2500", n)
	}
	if p.FirstContentfulPaint <= 0 {
		t.Errorf("no first contentful paint recorded")
	}
}
