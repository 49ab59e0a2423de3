// Package chromium opens a page in a real headless Chromium (Debian's
// chromium, driven over the DevTools protocol by chromedp) and reports what
// the browser saw: every network request from its own Network events,
// console errors and uncaught exceptions, paint timings and a screenshot.
// The HTML report tests and benchmarks use it; nothing in the slowpath binary
// does.
package chromium

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Find returns the path of the chromium binary, or an error saying how to
// install it.
func Find() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("chromium not found: apt-get install chromium")
}

// Box is an element's rectangle in CSS pixels from the top of the page.
type Box struct{ X, Y, W, H float64 }

// Page is what the browser saw while loading one file.
type Page struct {
	// Requests lists the URL of every request the page made, the document
	// itself first.
	Requests []string
	// ConsoleErrors are console.error/assert calls, uncaught exceptions and
	// browser log entries at level error (CSP violations land there).
	ConsoleErrors []string
	// FirstPaint and FirstContentfulPaint come from the page's Paint Timing
	// entries, measured from navigation start.
	FirstPaint, FirstContentfulPaint time.Duration
	// Charts are the boxes of the page's .chart elements; ChartsDrawn and
	// ChartsTotal what the page's own script counted.
	Charts                   []Box
	ChartsDrawn, ChartsTotal int
	Screenshot               image.Image
	// Scale is screenshot pixels per CSS pixel.
	Scale float64
}

// NonBlankPixels counts the screenshot's pixels inside b that are not the
// page background (white): a drawn chart has many, an empty box none.
func (p *Page) NonBlankPixels(b Box) int {
	r := image.Rect(int(b.X*p.Scale), int(b.Y*p.Scale), int((b.X+b.W)*p.Scale), int((b.Y+b.H)*p.Scale)).Intersect(p.Screenshot.Bounds())
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := p.Screenshot.At(x, y).RGBA()
			if cr < 0xf000 || cg < 0xf000 || cb < 0xf000 {
				n++
			}
		}
	}
	return n
}

// Open loads file in a fresh headless Chromium at execPath and returns what
// it saw. The browser cannot resolve any host name (--host-resolver-rules),
// so even a page that tried to fetch something could not leave the machine;
// the request would still show in Requests.
func Open(ctx context.Context, execPath, file string) (*Page, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, err
	}
	// Chromium puts its singleton socket in $TMPDIR/org.chromium.Chromium.*
	// and removes it only on a clean exit; chromedp kills the browser, so
	// every page left one in /tmp (163 after a day of test runs). The
	// browser gets a TMPDIR of its own, removed after it has exited; a
	// short name, as the socket's path must fit in 108 bytes.
	tmp, err := os.MkdirTemp("", "spc-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(execPath),
		chromedp.Env("TMPDIR="+tmp),
		chromedp.DisableGPU,
		chromedp.WindowSize(1200, 900),
		// No DNS, no background traffic from the browser itself.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("force-device-scale-factor", "1"),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to run as root with its sandbox.
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()

	p := &Page{}
	var mu sync.Mutex
	listener := func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			p.Requests = append(p.Requests, e.Request.URL)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range e.Args {
					if len(a.Value) > 0 {
						parts = append(parts, string(a.Value))
					} else {
						parts = append(parts, a.Description)
					}
				}
				p.ConsoleErrors = append(p.ConsoleErrors, "console."+string(e.Type)+": "+strings.Join(parts, " "))
			}
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			p.ConsoleErrors = append(p.ConsoleErrors, "exception: "+msg)
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				p.ConsoleErrors = append(p.ConsoleErrors, "log: "+e.Entry.Text+" "+e.Entry.URL)
			}
		}
	}
	tctx, cancelTab := chromedp.NewContext(actx, chromedp.WithListener(listener))
	defer cancelTab()
	// The first call starts the browser; it must not carry a timeout.
	if _, err := chromedp.Call(tctx, runtime.Enable, struct{}{}); err != nil {
		return nil, fmt.Errorf("start %s: %w", execPath, err)
	}
	if err := chromedp.Do(tctx, chromedp.Navigate("file://"+abs)); err != nil {
		return nil, fmt.Errorf("load %s: %w", abs, err)
	}
	type paint struct {
		FP, FCP float64
	}
	type info struct {
		Paint  paint
		Charts []Box
		Drawn  int
		Total  int
		Width  float64
	}
	// Wait two animation frames so anything scheduled has drawn, and for
	// the paint entries (they are recorded just after the frame).
	res, err := chromedp.Run(tctx, chromedp.Evaluate[info](`(async () => {
		const frame = () => new Promise(r => requestAnimationFrame(() => r()));
		await frame(); await frame();
		const get = (n) => { const e = performance.getEntriesByName(n)[0]; return e ? e.startTime : -1; };
		for (let i = 0; i < 50 && get("first-contentful-paint") < 0; i++) await new Promise(r => setTimeout(r, 20));
		const c = window.slowpathCharts || {drawn: 0, total: 0};
		return {
			Paint: {FP: get("first-paint"), FCP: get("first-contentful-paint")},
			Charts: Array.from(document.querySelectorAll(".chart")).map(e => { const r = e.getBoundingClientRect(); return {X: r.left + scrollX, Y: r.top + scrollY, W: r.width, H: r.height}; }),
			Drawn: c.drawn, Total: c.total,
			Width: document.documentElement.scrollWidth,
		};
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		return nil, fmt.Errorf("inspect %s: %w", abs, err)
	}
	shot, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
	if err != nil {
		return nil, fmt.Errorf("screenshot %s: %w", abs, err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		return nil, fmt.Errorf("decode screenshot: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	p.Screenshot = img
	p.Scale = 1
	if res.Width > 0 {
		p.Scale = float64(img.Bounds().Dx()) / res.Width
	}
	p.Charts, p.ChartsDrawn, p.ChartsTotal = res.Charts, res.Drawn, res.Total
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	if res.Paint.FP >= 0 {
		p.FirstPaint = ms(res.Paint.FP)
	}
	if res.Paint.FCP >= 0 {
		p.FirstContentfulPaint = ms(res.Paint.FCP)
	}
	// Copies, so the caller owns slices the listener no longer touches.
	p.Requests = append([]string(nil), p.Requests...)
	p.ConsoleErrors = append([]string(nil), p.ConsoleErrors...)
	return p, nil
}
