package fio

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// LogPoint is one line of an fio bandwidth or IOPS log written with
// log_avg_msec: the average over the window ending at TimeMS.
// Format: https://fio.readthedocs.io/en/latest/fio_doc.html#log-file-formats
// ("time (msec), value, data direction, block size (bytes), offset (bytes)";
// bandwidth values are KiB/s).
type LogPoint struct {
	TimeMS int64
	Value  float64
	Dir    int // 0 read, 1 write, 2 trim
}

// ParseLog reads one fio log file.
func ParseLog(r io.Reader) ([]LogPoint, error) {
	var out []LogPoint
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) < 3 {
			return nil, fmt.Errorf("fio log line %d: %d fields, want at least 3", n, len(f))
		}
		t, err1 := strconv.ParseInt(strings.TrimSpace(f[0]), 10, 64)
		v, err2 := strconv.ParseFloat(strings.TrimSpace(f[1]), 64)
		d, err3 := strconv.Atoi(strings.TrimSpace(f[2]))
		if err1 != nil || err2 != nil || err3 != nil || t < 0 || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) || d < 0 || d > 2 {
			return nil, fmt.Errorf("fio log line %d: %q is not time, value, direction", n, line)
		}
		out = append(out, LogPoint{TimeMS: t, Value: v, Dir: d})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// SumLogs reads every PREFIX_KIND.N.log in dir (one per job of a group;
// KIND is "bw" or "iops") and sums the jobs per direction and per second
// (times rounded to the nearest second, as jobs log a few ms apart).
// Bandwidth is converted to bytes/s. The result is keyed by direction,
// ascending in time.
func SumLogs(dir, prefix, kind string) (map[int][]LogPoint, error) {
	files, err := filepath.Glob(filepath.Join(dir, prefix+"_"+kind+".*.log"))
	if err != nil {
		return nil, err
	}
	sum := map[int]map[int64]float64{}
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		pts, err := ParseLog(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for _, pt := range pts {
			sec := (pt.TimeMS + 500) / 1000 * 1000
			if sum[pt.Dir] == nil {
				sum[pt.Dir] = map[int64]float64{}
			}
			v := pt.Value
			if kind == "bw" {
				v *= 1024
			}
			sum[pt.Dir][sec] += v
		}
	}
	out := map[int][]LogPoint{}
	for d, m := range sum {
		for t, v := range m {
			out[d] = append(out[d], LogPoint{TimeMS: t, Value: v, Dir: d})
		}
		sort.Slice(out[d], func(i, j int) bool { return out[d][i].TimeMS < out[d][j].TimeMS })
	}
	return out, nil
}
