// Package indexload is slowpath's native index loader: what a search
// engine does when a new index file arrives. It maps the file and reads
// every page, and times that load. Loads are cold: the loader flushes the
// file and evicts its pages (its own file only, posix_fadvise DONTNEED;
// never the host's page cache) before the clock starts.
package indexload

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/benchresult"
)

// Load maps path read-only and reads one byte of every page, returning the
// load's duration and size. With evict the file is first written back and
// its cached pages dropped, so every page comes from the device.
func Load(path string, evict bool) (time.Duration, uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	size := fi.Size()
	if size == 0 {
		return 0, 0, fmt.Errorf("load %s: empty file", path)
	}
	fd := int(f.Fd())
	if evict {
		if err := Evict(fd); err != nil {
			return 0, 0, fmt.Errorf("evict %s: %w", path, err)
		}
	}
	start := time.Now()
	m, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, 0, fmt.Errorf("mmap %s: %w", path, err)
	}
	page := os.Getpagesize()
	var sum byte
	for i := 0; i < len(m); i += page {
		sum += m[i]
	}
	// Keeps the page reads from being optimised away.
	runtime.KeepAlive(sum)
	if err := unix.Munmap(m); err != nil {
		return 0, 0, fmt.Errorf("munmap %s: %w", path, err)
	}
	return time.Since(start), uint64(size), nil
}

// Evict writes the file's dirty pages back and drops its cached pages:
// DONTNEED cannot drop dirty pages, hence the fdatasync first.
func Evict(fd int) error {
	if err := unix.Fdatasync(fd); err != nil {
		return err
	}
	return unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED)
}

// Options configure Watch.
type Options struct {
	Dir string
	// Prefix selects the files to load (fio names a job's files
	// NAME.JOB.FILE, e.g. "writers.").
	Prefix string
	// FileSize is the size of a finished file: a writer has finished a
	// file once it reached it (files are written sequentially).
	FileSize int64
	// MaxRate bounds loads per second (the incident's 4 updates/s).
	MaxRate float64
	// Evict makes loads cold (see Load).
	Evict bool
	// Start is the run's start: Load.StartNS is an offset from it.
	Start time.Time
}

// Watch loads each file as soon as it is finished, at most MaxRate per
// second, until ctx is done. It returns the loads in order; a load that
// fails ends the watch with an error.
func Watch(ctx context.Context, o Options) ([]benchresult.Load, error) {
	if o.MaxRate <= 0 || o.FileSize <= 0 {
		return nil, fmt.Errorf("indexload: MaxRate and FileSize must be positive")
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / o.MaxRate))
	defer tick.Stop()
	loaded := map[string]bool{}
	loads := []benchresult.Load{}
	for {
		select {
		case <-ctx.Done():
			return loads, nil
		case <-tick.C:
		}
		next, err := finished(o, loaded)
		if err != nil {
			return loads, err
		}
		if next == "" {
			continue
		}
		loaded[next] = true
		at := time.Now()
		d, n, err := Load(filepath.Join(o.Dir, next), o.Evict)
		if err != nil {
			return loads, err
		}
		loads = append(loads, benchresult.Load{StartNS: int64(at.Sub(o.Start)), DurationNS: int64(d), Bytes: n, File: next})
	}
}

// finished returns the first finished file not loaded yet, by name.
func finished(o Options, loaded map[string]bool) (string, error) {
	ents, err := os.ReadDir(o.Dir)
	if err != nil {
		return "", err
	}
	var names []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), o.Prefix) || loaded[e.Name()] || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		if fi.Size() >= o.FileSize {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "", nil
	}
	return names[0], nil
}

// Summarise computes the load figures: percentiles by fio's rule (the
// smallest load with at least p% of loads at or below it), the slow count
// and page-read throughput (bytes over summed load time).
func Summarise(loads []benchresult.Load, slow time.Duration) *benchresult.LoadTimes {
	lt := &benchresult.LoadTimes{SlowNS: int64(slow), Count: len(loads), Loads: loads}
	if lt.Loads == nil {
		lt.Loads = []benchresult.Load{}
	}
	if len(loads) == 0 {
		return lt
	}
	ds := make([]time.Duration, len(loads))
	var total time.Duration
	var bytes uint64
	for i, l := range loads {
		ds[i] = time.Duration(l.DurationNS)
		total += ds[i]
		bytes += l.Bytes
		if ds[i] > slow {
			lt.Slow++
		}
	}
	h := benchresult.FromDurations(ds)
	p50, _ := h.Percentile(50)
	p99, _ := h.Percentile(99)
	lt.P50NS, lt.P99NS = p50, p99
	lt.MaxNS = h.Bins[len(h.Bins)-1].ValueNS
	if total > 0 {
		lt.PageBytesPerSec = float64(bytes) / total.Seconds()
	}
	return lt
}
