package agent

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/collect"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testing/dmtest"
)

// series is one add to a sink.
type series struct {
	d   *desc
	t   prometheus.ValueType
	v   float64
	lvs []string
}

// collectorOfSeries is a prometheus.Collector of fixed series, through
// the same sink as the exporter's.
type collectorOfSeries []series

func (c collectorOfSeries) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }
func (c collectorOfSeries) Collect(ch chan<- prometheus.Metric) {
	s := &sink{ch: ch}
	for _, x := range c {
		s.add(x.d, x.t, x.v, x.lvs...)
	}
}

// viaRegistry is the oracle: the series as const metrics, gathered and
// encoded by client_golang and expfmt.
func viaRegistry(t testing.TB, ss []series) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collectorOfSeries(ss))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

// viaText is the series through the text sink.
func viaText(ss []series) string {
	s := newTextSink(nil)
	for _, x := range ss {
		s.add(x.d, x.t, x.v, x.lvs...)
	}
	return sinkText(s)
}

// sinkText is what s's families write as text.
func sinkText(s *sink) string {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	for _, f := range s.families() {
		f.writeText(w)
	}
	w.Flush()
	return buf.String()
}

var (
	testDescA = newDesc("slowpath_test_a", "A test family with \\ and\nnewline \"quoted\".", []string{"zeta", "alpha", "mid"})
	testDescB = newDesc("slowpath_test_b", "No labels.", nil)
	testDescC = newDesc("slowpath_test_c", "Counter.", []string{"x"})
)

func TestTextFamilyTable(t *testing.T) {
	g, c := prometheus.GaugeValue, prometheus.CounterValue
	for _, tc := range []struct {
		name string
		ss   []series
	}{
		{"one", []series{{testDescA, g, 1, []string{"z", "a", "m"}}}},
		{"escapes", []series{
			{testDescA, g, 0, []string{`back\slash`, "new\nline", `"quoted"`}},
			{testDescA, g, -1, []string{"", "", ""}},
			{testDescA, g, 2.5, []string{"ünï", "\\n", "\\\""}},
		}},
		{"order by label name, then value", []series{
			{testDescA, g, 1, []string{"1", "b", "x"}},
			{testDescA, g, 2, []string{"0", "b", "x"}},
			{testDescA, g, 3, []string{"0", "a", "y"}},
			{testDescA, g, 4, []string{"0", "b", "w"}},
			{testDescA, g, 5, []string{"0", "x", "w"}},
			{testDescA, g, 6, []string{"0", "x!", "w"}},
			{testDescA, g, 7, []string{"0", "x\"", "w"}},
			{testDescA, g, 8, []string{"0", "x ", "w"}},
			{testDescA, g, 9, []string{"0", "x\n", "w"}},
		}},
		{"floats", []series{
			{testDescC, c, math.Inf(1), []string{"a"}},
			{testDescC, c, math.Inf(-1), []string{"b"}},
			{testDescC, c, math.NaN(), []string{"c"}},
			{testDescC, c, 1e21, []string{"d"}},
			{testDescC, c, 0.1, []string{"e"}},
			{testDescC, c, 123456789, []string{"f"}},
			{testDescC, c, math.Copysign(0, -1), []string{"g"}},
			{testDescC, c, 5e-324, []string{"h"}},
		}},
		{"families by name, no labels", []series{
			{testDescC, c, 3, []string{"a"}},
			{testDescB, g, 42, nil},
			{testDescA, g, 1, []string{"z", "a", "m"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := viaRegistry(t, tc.ss)
			if got := viaText(tc.ss); got != want {
				t.Errorf("text sink:\n%s\nclient_golang:\n%s", got, want)
			}
		})
	}
}

// TestTextDuplicateAndInvalid: a repeated label set is written once (a
// registry refuses the scrape), and invalid UTF-8 is replaced (const
// metrics panic).
func TestTextDuplicateAndInvalid(t *testing.T) {
	got := viaText([]series{
		{testDescC, prometheus.CounterValue, 1, []string{"a"}},
		{testDescC, prometheus.CounterValue, 2, []string{"a"}},
		{testDescC, prometheus.CounterValue, 3, []string{"b\xff"}},
	})
	want := "# HELP slowpath_test_c Counter.\n# TYPE slowpath_test_c counter\nslowpath_test_c{x=\"a\"} 1\nslowpath_test_c{x=\"b\uFFFD\"} 3\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// FuzzLabelValue: any label values written by the text sink parse back,
// with expfmt's TextParser, to the same series (invalid UTF-8 replaced),
// and where client_golang accepts them its exposition is the same bytes.
func FuzzLabelValue(f *testing.F) {
	f.Add("a", "b", "c", 1.5)
	f.Add(`\`, "\n", `"`, 0.0)
	f.Add("x\\n", "\\\"", "\xff\xfe", -1.0)
	f.Fuzz(func(t *testing.T, a, b, c string, v float64) {
		ss := []series{{testDescA, prometheus.GaugeValue, v, []string{a, b, c}}, {testDescB, prometheus.GaugeValue, v, nil}}
		text := viaText(ss)
		p := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
		if err != nil {
			t.Fatalf("%v in\n%s", err, text)
		}
		mf := mfs["slowpath_test_a"]
		if mf == nil || len(mf.Metric) != 1 {
			t.Fatalf("no series in\n%s", text)
		}
		m := mf.Metric[0]
		want := map[string]string{"zeta": a, "alpha": b, "mid": c}
		for _, lp := range m.Label {
			if w := strings.ToValidUTF8(want[lp.GetName()], "\uFFFD"); lp.GetValue() != w {
				t.Errorf("%s = %q, want %q", lp.GetName(), lp.GetValue(), w)
			}
		}
		if len(m.Label) != 3 {
			t.Errorf("%d labels", len(m.Label))
		}
		if got := m.GetGauge().GetValue(); got != v && !(math.IsNaN(got) && math.IsNaN(v)) {
			t.Errorf("value %v, want %v", got, v)
		}
		if utf8.ValidString(a) && utf8.ValidString(b) && utf8.ValidString(c) {
			if want := viaRegistry(t, ss); text != want {
				t.Errorf("text sink:\n%s\nclient_golang:\n%s", text, want)
			}
		}
	})
}

// serve scrapes h with the given Accept header.
func serve(t testing.TB, h http.Handler, accept string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest("GET", "/metrics", nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// TestHandlerMatchesRegistry: the handler's exposition of every fixture
// host is client_golang's (the golden files'), byte for byte.
func TestHandlerMatchesRegistry(t *testing.T) {
	for _, name := range []string{"azure-e16dv5-eah", "aws-i4i-luks-default", "aws-i4i-luks-unprivileged", "plain-host", "net-aws-ena", "baremetal-crypt-on-crypt-loop",
		"aws-i4i-mariadb-luks"} {
		t.Run(name, func(t *testing.T) {
			e := &Exporter{Source: &Fixed{S: load(t, name)}}
			want := string(Scrape(t, e))
			resp, got := serve(t, e.Handler(prometheus.NewRegistry(), HandlerOpts{}), "")
			got = durationLine.ReplaceAllString(got, "$1 0")
			if got != want {
				t.Errorf("handler:\n%s\nregistry:\n%s", got, want)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}

// TestHandlerLive: on a synthetic tree of 40 dm-crypt devices read live,
// the handler writes what promhttp writes for a registry of the exporter
// and the same Go collectors' families, merged by name.
func TestHandlerLive(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	live := syntheticLive(t, 40, 3, &now)
	e := &Exporter{Source: live}
	// A fixed family outside slowpath_ stands for the Go collectors.
	other := collectorOfSeries{{newDescFor(t, "aaa_first"), prometheus.GaugeValue, 1, nil}, {newDescFor(t, "zzz_last"), prometheus.GaugeValue, 2, nil}}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(other)
	both := prometheus.NewPedanticRegistry()
	both.MustRegister(other, e)
	h := e.Handler(reg, HandlerOpts{MaxRequestsInFlight: 2, Timeout: time.Minute})
	ref := promhttp.HandlerFor(both, promhttp.HandlerOpts{DisableCompression: true})
	serve(t, h, "") // the topology read
	for _, accept := range []string{"", "text/plain;version=0.0.4", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited",
		"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"} {
		resp, got := serve(t, h, accept)
		_, want := serve(t, ref, "text/plain;version=0.0.4")
		got, want = durationLine.ReplaceAllString(got, "$1 0"), durationLine.ReplaceAllString(want, "$1 0")
		if got != want {
			t.Errorf("Accept %q: handler and promhttp differ:\n%s", accept, firstDiff(got, want))
		}
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/plain; version=") {
			t.Errorf("Accept %q: status %d, Content-Type %q", accept, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		// 40 dm-crypt devices, their 40 partitions and the disk.
		if n := strings.Count(got, "\nslowpath_disk_ios_total{"); n != 81*2 {
			t.Errorf("%d slowpath_disk_ios_total series, want 162", n)
		}
	}
	// name[] filters families, as promhttp's.
	req := httptest.NewRequest("GET", "/metrics?name[]=zzz_last&name[]=slowpath_cpus", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if got := rec.Body.String(); !strings.Contains(got, "zzz_last 2\n") || strings.Contains(got, "aaa_first") || strings.Contains(got, "slowpath_finding") {
		t.Errorf("name[] filter:\n%s", got)
	}
}

func newDescFor(t *testing.T, name string) *desc {
	t.Helper()
	return newDesc(name, "A family of the test.", nil)
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return "line " + strconv.Itoa(i+1) + ": " + al[i] + "\nwant: " + bl[i]
		}
	}
	return "lengths differ"
}

// TestTopologyModelKept: the storage model and encrypted devices a Live
// source keeps with its topology give the series that building them from
// each scrape's snapshot gives.
func TestTopologyModelKept(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	live := syntheticLive(t, 20, 2, &now)
	for i := 0; i < 2; i++ {
		now = now.Add(time.Minute)
		s, _, topo := live.snapshotTopology(context.Background())
		if topo == nil || len(topo.encrypted) != 41 {
			t.Fatalf("scrape %d: topology %+v", i, topo)
		}
		text := func(topo *topology) string {
			out := newTextSink(nil)
			if !emit(out, s, topo, check.Config{}) {
				t.Fatal("emit failed")
			}
			return sinkText(out)
		}
		kept, built := text(topo), text(nil)
		if kept != built {
			t.Errorf("scrape %d: kept model and built model differ:\n%s", i, firstDiff(kept, built))
		}
		if !strings.Contains(kept, "slowpath_dmcrypt_tax_span{") || !strings.Contains(kept, "slowpath_disk_ios_total{") {
			t.Errorf("scrape %d: no tax series", i)
		}
	}
}

// syntheticLive is a Live source over a synthetic tree of dm dm-crypt
// devices and nics NICs, read without live sources, its clock *now;
// closed when t ends.
func syntheticLive(t *testing.T, dm, nics int, now *time.Time) *Live {
	t.Helper()
	dir := t.TempDir()
	if _, err := dmtest.WriteSynthetic(dir, dm); err != nil {
		t.Fatal(err)
	}
	if err := dmtest.WriteCounters(dir, nics); err != nil {
		t.Fatal(err)
	}
	live := &Live{FS: hostfs.New(dir).WithLiveSources(hostfs.LiveOff), LiveSources: hostfs.LiveOff, TopologyInterval: time.Hour,
		Cipher: collect.Cipher{Off: true}, Now: func() time.Time { return *now }}
	live.Cloud.Cloud = "none"
	t.Cleanup(live.Close)
	return live
}
