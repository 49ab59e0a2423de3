package network

import (
	"testing"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/model/netmodel"
)

// BenchmarkWatchSample is the cost of one `net watch` interval on a
// synthetic host with 64 NICs (each with 13 statistics files and 200
// ethtool counters) and 192 CPUs: one counter sample plus the rates.
func BenchmarkWatchSample(b *testing.B) {
	dir := b.TempDir()
	writeTree(b, dir, 64, 192)
	var clock int64
	s := NewSampler(hostfs.New(dir), Options{
		Ethtool:   &fakeEthtool{stats: driverStats(100)},
		Netlink:   fakeNetlink{},
		Monotonic: func() int64 { clock += 1e9; return clock },
	})
	prev, errs := s.Sample()
	if len(errs) > 0 {
		b.Fatalf("sample errors: %+v", errs)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cur, _ := s.Sample()
		cs, err := netmodel.Rates(prev, cur)
		if err != nil || len(cs) == 0 {
			b.Fatal(err)
		}
		prev = cur
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/sample")
}

// BenchmarkWatchSampleLive is one watch interval on this machine's real
// /proc, /sys, ethtool and netlink (link counters by one netlink dump).
func BenchmarkWatchSampleLive(b *testing.B) {
	s := NewSampler(hostfs.Default(), Options{})
	defer s.Close()
	prev, _ := s.Sample()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cur, _ := s.Sample()
		if _, err := netmodel.Rates(prev, cur); err != nil {
			b.Fatal(err)
		}
		prev = cur
	}
}
