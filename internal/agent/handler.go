package agent

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// HandlerOpts are what the agent's /metrics takes of promhttp.HandlerOpts.
type HandlerOpts struct {
	ErrorLog promhttp.Logger
	// MaxRequestsInFlight answers 503 to scrapes beyond it; 0: no limit.
	MaxRequestsInFlight int
	// Timeout answers 503 when a scrape's collection takes longer; 0: none.
	Timeout time.Duration
}

// textFormats are the formats /metrics answers in: the text formats
// client_golang offers. Any other Accept gets text version 0.0.4.
var textFormats = func() []expfmt.Format {
	var out []expfmt.Format
	for _, f := range expfmt.DefaultAcceptedFormats() {
		if f.FormatType() == expfmt.TypeTextPlain {
			out = append(out, f)
		}
	}
	return out
}()

// Handler serves e's series and reg's families (the Go and process
// collectors) on /metrics, as promhttp.HandlerFor(a registry of both)
// would in the text format, byte for byte: families by name, series by
// label values. e's series are written from the scrape's values straight
// to the response: at 512 dm-crypt devices a scrape has 12,894 series,
// and as const metrics (label pairs, a consistency check each, then
// expfmt) they were most of the scrape's CPU and the peak of its memory
// (docs/performance.md). reg's few families go through expfmt. No
// compression (the agent never offered it: gzip's pooled writers cost
// more resident memory than the few kB a scrape is); protobuf is not
// offered either, so every Accept gets a text format.
func (e *Exporter) Handler(reg prometheus.Gatherer, o HandlerOpts) http.Handler {
	var sem chan struct{}
	if o.MaxRequestsInFlight > 0 {
		sem = make(chan struct{}, o.MaxRequestsInFlight)
	}
	logf := func(v ...any) {
		if o.ErrorLog != nil {
			o.ErrorLog.Println(v...)
		}
	}
	type result struct {
		out *sink
		mfs []*dto.MetricFamily
		err error
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sem != nil {
			select {
			case sem <- struct{}{}:
			default:
				http.Error(w, fmt.Sprintf("Limit of concurrent requests reached (%d), try again later.", o.MaxRequestsInFlight),
					http.StatusServiceUnavailable)
				return
			}
		}
		// The collection runs on its own so a timeout can answer while
		// it goes on, as http.TimeoutHandler does for promhttp (which
		// also buffers the whole response, 1 MB at 512 devices); it
		// holds its in-flight slot until it ends.
		done := make(chan result, 1)
		go func() {
			if sem != nil {
				defer func() { <-sem }()
			}
			var hint []int
			if h := e.hint.Load(); h != nil {
				hint = *h
			}
			out := newTextSink(hint)
			e.collect(out)
			counts := out.counts()
			e.hint.Store(&counts)
			mfs, err := reg.Gather()
			done <- result{out, mfs, err}
		}()
		var res result
		if o.Timeout > 0 {
			t := time.NewTimer(o.Timeout)
			defer t.Stop()
			select {
			case res = <-done:
			case <-t.C:
				http.Error(w, fmt.Sprintf("Exceeded configured timeout of %v.\n", o.Timeout), http.StatusServiceUnavailable)
				return
			}
		} else {
			res = <-done
		}
		if res.err != nil {
			logf("error gathering metrics:", res.err)
			http.Error(w, "An error has occurred while serving metrics:\n\n"+res.err.Error(), http.StatusInternalServerError)
			return
		}
		format := expfmt.NegotiateAccept(r.Header, textFormats...)
		w.Header().Add("Vary", "Accept")
		w.Header().Set("Content-Type", string(format))
		var filter map[string]bool
		if r.URL != nil {
			if names := r.URL.Query()["name[]"]; len(names) > 0 {
				filter = map[string]bool{}
				for _, n := range names {
					filter[n] = true
				}
			}
		}
		bw := bufio.NewWriterSize(w, 32<<10)
		if err := writeMerged(bw, expfmt.NewEncoder(bw, format), res.mfs, res.out.families(), filter); err != nil {
			logf("error encoding and sending metric family:", err)
			return
		}
		if err := bw.Flush(); err != nil {
			logf("error encoding and sending metric family:", err)
		}
	})
}

// writeMerged writes mfs (sorted by name, as Gather returns them) and
// fams (sorted) in one order by name.
func writeMerged(bw *bufio.Writer, enc expfmt.Encoder, mfs []*dto.MetricFamily, fams []*family, filter map[string]bool) error {
	for len(mfs) > 0 || len(fams) > 0 {
		if len(fams) == 0 || (len(mfs) > 0 && strings.Compare(mfs[0].GetName(), fams[0].d.name) < 0) {
			mf := mfs[0]
			mfs = mfs[1:]
			if filter != nil && !filter[mf.GetName()] {
				continue
			}
			if err := enc.Encode(mf); err != nil {
				return err
			}
			continue
		}
		f := fams[0]
		fams = fams[1:]
		if filter != nil && !filter[f.d.name] {
			continue
		}
		if err := f.writeText(bw); err != nil {
			return err
		}
	}
	return nil
}
