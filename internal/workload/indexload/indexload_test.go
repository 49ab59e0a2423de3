package indexload

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
)

func TestSummarise(t *testing.T) {
	ms := func(n int) int64 { return int64(time.Duration(n) * time.Millisecond) }
	var loads []benchresult.Load
	for i := 1; i <= 100; i++ {
		loads = append(loads, benchresult.Load{DurationNS: ms(i), Bytes: 1 << 20})
	}
	lt := Summarise(loads, 10*time.Millisecond)
	if lt.Count != 100 || lt.Slow != 90 || lt.P50NS != ms(50) || lt.P99NS != ms(99) || lt.MaxNS != ms(100) {
		t.Errorf("summary %+v", lt)
	}
	// 100 MiB in 5.05 s.
	if want := float64(100<<20) / 5.05; lt.PageBytesPerSec < want*0.999 || lt.PageBytesPerSec > want*1.001 {
		t.Errorf("throughput %.0f, want %.0f", lt.PageBytesPerSec, want)
	}
	if e := Summarise(nil, time.Millisecond); e.Count != 0 || e.Loads == nil {
		t.Errorf("empty %+v", e)
	}
}

// TestWatch: a writer finishes three files one after another; the loader
// loads each once, only when finished, and never a file of another prefix.
func TestWatch(t *testing.T) {
	dir := t.TempDir()
	const size = 1 << 20
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan []benchresult.Load)
	go func() {
		loads, err := Watch(ctx, Options{Dir: dir, Prefix: "w.", FileSize: size, MaxRate: 20, Evict: true, Start: time.Now()})
		if err != nil {
			t.Error(err)
		}
		done <- loads
	}()
	buf := make([]byte, size/2)
	for i, name := range []string{"w.0.0", "w.0.1", "w.0.2"} {
		buf[0] = byte(i + 1)
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		f.Write(buf) // half a file: not finished
		time.Sleep(150 * time.Millisecond)
		f.Write(buf)
		f.Close()
	}
	if err := os.WriteFile(filepath.Join(dir, "other"), make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	cancel()
	loads := <-done
	if len(loads) != 3 {
		t.Fatalf("loads %+v, want 3", loads)
	}
	for i, l := range loads {
		if l.Bytes != size || l.DurationNS <= 0 || l.File != []string{"w.0.0", "w.0.1", "w.0.2"}[i] {
			t.Errorf("load %d: %+v", i, l)
		}
	}
	if loads[1].StartNS <= loads[0].StartNS {
		t.Errorf("loads out of order: %+v", loads)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := Load(filepath.Join(dir, "missing"), false); err == nil {
		t.Error("missing file loaded")
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o644)
	if _, _, err := Load(empty, false); err == nil {
		t.Error("empty file loaded")
	}
	if _, err := Watch(context.Background(), Options{Dir: dir}); err == nil {
		t.Error("Watch without rate accepted")
	}
}
