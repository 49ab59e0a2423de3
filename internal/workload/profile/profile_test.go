package profile

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

func TestNewRefuses(t *testing.T) {
	p := Params{Scale: 1, Runtime: time.Second, Dir: "/x", NumCPU: 2}
	if _, err := New("search", p); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "db-commit") {
		t.Errorf("unknown profile: %v", err)
	}
	if _, err := New("fio:", p); !errors.Is(err, ErrUnknown) {
		t.Errorf("fio: without a file: %v", err)
	}
	for _, s := range []float64{0, -1, math.NaN(), MaxScale + 1} {
		q := p
		q.Scale = s
		if _, err := New(DBCommit, q); err == nil || !strings.Contains(err.Error(), "--scale") {
			t.Errorf("scale %v: %v", s, err)
		}
	}
	q := p
	q.Dir = "/tmp/a\nrw=write"
	if _, err := New(DBCommit, q); err == nil || !strings.Contains(err.Error(), "line break") {
		t.Errorf("dir with a newline: %v", err)
	}
	for _, d := range []string{"/tmp/a;b", "/tmp/a#b", `/tmp/a\b`} {
		q = p
		q.Dir = d
		if _, err := New(TelemetryIngest, q); err == nil || !strings.Contains(err.Error(), "cannot hold") {
			t.Errorf("dir %q: %v", d, err)
		}
	}
	// fio splits directory= at ':': the colon is escaped.
	q = p
	q.Dir = "/tmp/a:b"
	pl, err := New(TelemetryIngest, q)
	if err != nil || !strings.Contains(string(pl.Phases[0].JobFile), "directory=/tmp/a\\:b\n") {
		t.Errorf("dir with a colon: %v %s", err, pl.Phases[0].JobFile)
	}
	q = p
	q.Runtime = 0
	if _, err := New(DBCommit, q); err == nil {
		t.Error("zero runtime accepted")
	}
	for _, jf := range []string{"", "[a]\nfilename=/dev/sda\n", "[a]\ndirectory = /etc\n", "[a]\nfilename=../x\n"} {
		q := p
		q.JobFile = []byte(jf)
		if _, err := New("fio:x.fio", q); err == nil {
			t.Errorf("job file %q accepted", jf)
		}
	}
}

// TestScaling: scale 1 fits this machine, scale 32 is the incident's size.
func TestScaling(t *testing.T) {
	pl, err := New(SearchIndex, Params{Scale: 32, Runtime: time.Second, Dir: "/d", NumCPU: 2, SlowLoad: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if pl.Settings["writers"] != "30" || pl.Settings["writer_bytes"] != "2g" || pl.Settings["blob"] != "50g" || pl.Settings["readers"] != "8" {
		t.Errorf("scale 32: %v", pl.Settings)
	}
	jf := string(pl.Phases[0].JobFile)
	for _, want := range []string{"directory=/d\n", "[writers]\nrw=write\nioengine=psync\nbs=4m\nnumjobs=30\n", "[readers]\nnew_group\nrw=randread\nioengine=mmap\nbsrange=4k-1m\nnumjobs=8\n"} {
		if !strings.Contains(jf, want) {
			t.Errorf("job file lacks %q:\n%s", want, jf)
		}
	}
	pl, err = New(DBCommit, Params{Scale: 1, Runtime: 15 * time.Second, Dir: "/d", NumCPU: 2})
	if err != nil {
		t.Fatal(err)
	}
	var total time.Duration
	for _, ph := range pl.Phases {
		total += ph.Expected
	}
	if total > 60*time.Second {
		t.Errorf("db-commit at scale 1 expected to take %v", total)
	}
	if !strings.Contains(string(pl.Phases[0].JobFile), "rw=randrw\nrwmixread=50\nbs=4k\ndirect=1\n") || !strings.Contains(string(pl.Phases[2].JobFile), "fdatasync=1") {
		t.Errorf("db-commit job files:\n%s\n%s", pl.Phases[0].JobFile, pl.Phases[2].JobFile)
	}
}

// TestSearchIndexReal runs the pair and the loader at the smallest scale
// for 3 s: the loader loads finished writer files, each of the file size.
func TestSearchIndexReal(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	dir := t.TempDir()
	pl, err := New(SearchIndex, Params{Scale: 0.05, Runtime: 3 * time.Second, Dir: dir, NumCPU: 2, SlowLoad: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	phases, loads, err := pl.Run(context.Background(), dir, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	lt := pl.LoadTimes(loads)
	figs := pl.Figures(phases, lt)
	get := func(name string) float64 {
		for _, f := range figs {
			if f.Name == name {
				return f.Value
			}
		}
		t.Errorf("no figure %s in %+v", name, figs)
		return 0
	}
	if get("read_iops") <= 0 || get("read_p99") < get("read_p50") || get("write_bytes_per_sec") <= 0 {
		t.Errorf("figures %+v", figs)
	}
	if lt.Count == 0 || get("loads") != float64(lt.Count) || lt.PageBytesPerSec <= 0 {
		t.Fatalf("loads %+v", lt)
	}
	for _, l := range lt.Loads {
		if l.Bytes != 2<<20 || !strings.HasPrefix(l.File, "writers.") {
			t.Errorf("load %+v, want a 2 MiB writers file", l)
		}
	}
	// Writers wrote whole files: bytes ≤ planned, and at least the loaded ones.
	var w, r benchresult.Stream
	for _, s := range phases[0].Streams {
		if s.Name == "writers" && s.Op == "write" {
			w = s
		}
		if s.Name == "readers" && s.Op == "read" {
			r = s
		}
	}
	if w.Bytes > 8<<20 || w.Bytes < uint64(lt.Count)*(2<<20) {
		t.Errorf("writers %d bytes for %d loads", w.Bytes, lt.Count)
	}
	// Readers ran 3 s: per-second points, IOPS and bytes/s.
	if len(r.Timeline) < 4 || r.Latency == nil || r.Latency.Histogram.Count() != r.Ops {
		t.Errorf("readers: timeline %v, %d ops", r.Timeline, r.Ops)
	}
	t.Logf("%d loads p50 %v max %v; read %.0f IOPS; figures %d", lt.Count, time.Duration(lt.P50NS), time.Duration(lt.MaxNS), get("read_iops"), len(figs))
}
