package cryptotax

import (
	"math"
	"strings"
	"testing"
	"time"
)

// The published cases, at 1 GB/s per core for round numbers.
func TestAssess(t *testing.T) {
	l := Limit{BytesPerSecPerCore: 1e9}
	for _, tc := range []struct {
		name  string
		o     Observation
		want  string
		ratio float64
	}{
		// PostgreSQL story: 4 KiB direct I/O, 171k IOPS plain, 26.6k on
		// default dm-crypt (QD 1 taken here): +32 µs per I/O against 4.1 µs
		// of cipher: far above.
		{"default dm-crypt", Observation{Layers: 1, BytesPerIO: 4096, QueueDepth: 1, PlainIOPS: 171e3, IOPS: 26.6e3}, VerdictFarAbove, 7.75},
		// A healthy 10%: 4 KiB at 100k → 90.9k IOPS adds 1 µs < 4.1 µs.
		{"healthy", Observation{Layers: 1, BytesPerIO: 4096, QueueDepth: 1, PlainIOPS: 100e3, IOPS: 90.9e3}, VerdictCipher, 0.24},
		{"faster", Observation{Layers: 1, BytesPerIO: 4096, QueueDepth: 1, PlainIOPS: 100e3, IOPS: 101e3}, VerdictNoOverhead, -0.02},
		// Two layers double what the cipher may cost.
		{"stacked", Observation{Layers: 2, BytesPerIO: 4096, QueueDepth: 2, Cores: 2, PlainIOPS: 100e3, IOPS: 50e3}, VerdictAbove, 2.44},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Assess(l, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if got.Verdict != tc.want || math.Abs(got.Ratio-tc.ratio) > 0.05 {
				t.Errorf("verdict %q ratio %.3f, want %q %.2f (%+v)", got.Verdict, got.Ratio, tc.want, tc.ratio, got)
			}
			if !strings.Contains(got.Line(), got.Verdict) {
				t.Errorf("line %q", got.Line())
			}
		})
	}
	got, _ := Assess(l, Observation{Layers: 1, BytesPerIO: 4096, QueueDepth: 1, PlainIOPS: 171e3, IOPS: 26.6e3})
	if got.ExpectedPerIO != 4096*time.Nanosecond || got.ObservedPerIO < 31*time.Microsecond || got.ObservedPerIO > 32*time.Microsecond {
		t.Errorf("per-IO figures %+v", got)
	}
	if c := (Observation{Layers: 1, BytesPerIO: 4096, QueueDepth: 1, PlainIOPS: 1, IOPS: 1, CPU: 0.5, BytesPerS: 1 << 30, PlainCPU: 0.25, PlainBytesPerSec: 1 << 30}); true {
		got, _ := Assess(l, c)
		if math.Abs(got.ObservedCPUPerGiB-0.25) > 1e-9 || math.Abs(got.ExpectedCPUPerGiB-1.0737) > 1e-3 {
			t.Errorf("CPU per GiB %+v", got)
		}
	}
	for _, bad := range []struct {
		l Limit
		o Observation
	}{
		{Limit{}, Observation{Layers: 1, BytesPerIO: 1, QueueDepth: 1, PlainIOPS: 1, IOPS: 1}},
		{l, Observation{Layers: 0, BytesPerIO: 1, QueueDepth: 1, PlainIOPS: 1, IOPS: 1}},
		{l, Observation{Layers: 1, BytesPerIO: 1, QueueDepth: 1, PlainIOPS: math.NaN(), IOPS: 1}},
	} {
		if got, err := Assess(bad.l, bad.o); err == nil || got.Verdict != VerdictUnknown {
			t.Errorf("Assess(%+v, %+v) = %+v, %v", bad.l, bad.o, got, err)
		}
	}
}

// A cipher-bound run with many I/Os in flight on few cores waits for the
// cipher, not for a queue: it must not be called far above.
func TestAssessQueueDepthOverCores(t *testing.T) {
	l := Limit{BytesPerSecPerCore: 1e9}
	// 32 in flight on 2 cores, 4 KiB: the cipher allows 2/4.096 µs =
	// 488k IOPS; a run held to it adds 32 × (1/488k − 1/1M) ≈ 33.5 µs.
	o := Observation{Layers: 1, BytesPerIO: 4096, QueueDepth: 32, Cores: 2, PlainIOPS: 1e6, IOPS: 488e3}
	got, err := Assess(l, o)
	if err != nil {
		t.Fatal(err)
	}
	if got.Verdict != VerdictCipher {
		t.Errorf("cipher-bound run: %+v", got)
	}
	// The same observation on a machine with 32 cores cannot be the
	// cipher: each I/O had a core.
	o.Cores = 32
	if got, _ := Assess(l, o); got.Verdict != VerdictFarAbove {
		t.Errorf("32 cores: %+v", got)
	}
}

func TestAssessLayered(t *testing.T) {
	l := Limit{BytesPerSecPerCore: 1e9}
	for _, tc := range []struct {
		name  string
		o     Layered
		want  string
		ratio float64
	}{
		// The search incident's iostat: dm-0 await 18 ms over 0.45 ms
		// beneath; 128 KiB I/Os, 4 in flight on 2 cores: the cipher
		// accounts for 262 µs at most.
		{"search incident", Layered{Layers: 1, BytesPerIO: 128 << 10, TopAwait: 18 * time.Millisecond, BottomAwait: 450 * time.Microsecond, QueueDepth: 4, Cores: 2}, VerdictFarAbove, 66.95},
		// Healthy: +150 µs on 131 µs of cipher.
		{"healthy", Layered{Layers: 1, BytesPerIO: 128 << 10, TopAwait: 600 * time.Microsecond, BottomAwait: 450 * time.Microsecond, QueueDepth: 0.5, Cores: 2}, VerdictCipher, 1.14},
		{"none", Layered{Layers: 1, BytesPerIO: 4096, TopAwait: 100 * time.Microsecond, BottomAwait: 100 * time.Microsecond}, VerdictNoOverhead, 0},
		// Two layers: +20 µs on 2 × 4.1 µs of cipher.
		{"double", Layered{Layers: 2, BytesPerIO: 4096, TopAwait: 30 * time.Microsecond, BottomAwait: 10 * time.Microsecond, QueueDepth: 1, Cores: 2}, VerdictAbove, 2.44},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AssessLayered(l, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if got.Verdict != tc.want || math.Abs(got.Ratio-tc.ratio) > 0.05 {
				t.Errorf("verdict %q ratio %.3f, want %q %.2f (%+v)", got.Verdict, got.Ratio, tc.want, tc.ratio, got)
			}
		})
	}
	for _, bad := range []Layered{
		{Layers: 0, BytesPerIO: 4096, TopAwait: 1},
		{Layers: 1, BytesPerIO: 0, TopAwait: 1},
		{Layers: 1, BytesPerIO: 4096, TopAwait: 0},
		{Layers: 1, BytesPerIO: 4096, TopAwait: 1, QueueDepth: math.NaN()},
	} {
		if got, err := AssessLayered(l, bad); err == nil || got.Verdict != VerdictUnknown {
			t.Errorf("AssessLayered(%+v) = %+v, %v", bad, got, err)
		}
	}
	if _, err := AssessLayered(Limit{}, Layered{Layers: 1, BytesPerIO: 4096, TopAwait: 1}); err == nil {
		t.Error("no limit: want error")
	}
}

// TestTaxNamesDriver: the tax says which kernel driver its expectation is
// for, since one CPU's cipher cost differs between kernels (xts-aes-aesni
// on 6.1, xts-aes-aesni-avx on 6.12 on the same CPU), and says nothing of
// a driver when none is known.
func TestTaxNamesDriver(t *testing.T) {
	o := Observation{Layers: 1, BytesPerIO: 4096, QueueDepth: 1, PlainIOPS: 100000, IOPS: 90000}
	for _, driver := range []string{"xts-aes-aesni", "xts-aes-aesni-avx"} {
		tax, err := Assess(Limit{BytesPerSecPerCore: 2e9, Driver: driver}, o)
		if err != nil {
			t.Fatal(err)
		}
		if tax.Driver != driver || !strings.HasPrefix(tax.Line(), "cipher ("+driver+") ") {
			t.Errorf("driver %s: tax %+v, line %q", driver, tax, tax.Line())
		}
		lt, err := AssessLayered(Limit{BytesPerSecPerCore: 2e9, Driver: driver}, Layered{Layers: 1, BytesPerIO: 4096, TopAwait: 30 * time.Microsecond, BottomAwait: 10 * time.Microsecond})
		if err != nil || lt.Driver != driver {
			t.Errorf("layered, driver %s: %+v, %v", driver, lt, err)
		}
	}
	tax, err := Assess(Limit{BytesPerSecPerCore: 2e9}, o)
	if err != nil {
		t.Fatal(err)
	}
	if tax.Driver != "" || !strings.HasPrefix(tax.Line(), "cipher 2.048µs/IO") {
		t.Errorf("no driver: tax %+v, line %q", tax, tax.Line())
	}
}

// TestLineSign: an encrypted run faster than the plain one (noise) reads
// "observed -2µs/IO", never "+-2µs/IO".
func TestLineSign(t *testing.T) {
	for _, tc := range []struct {
		plain, iops float64
		want        string
	}{
		{1e5, 5e4, "observed +10µs/IO"},
		{5e4, 1e5, "observed -10µs/IO"},
	} {
		tax, err := Assess(Limit{BytesPerSecPerCore: 1e9}, Observation{Layers: 1, BytesPerIO: 4096, QueueDepth: 1, PlainIOPS: tc.plain, IOPS: tc.iops})
		if err != nil {
			t.Fatal(err)
		}
		if l := tax.Line(); !strings.Contains(l, tc.want) || strings.Contains(l, "+-") {
			t.Errorf("line %q, want %q", l, tc.want)
		}
	}
}

// An engine layer's cipher is the service's, counted at the same cost per
// byte as the kernel's; a payer without layers is not listed.
func TestSplitCPU(t *testing.T) {
	l := Limit{BytesPerSecPerCore: 1 << 30}
	got, err := SplitCPU(l, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []Share{{PaidBy: PaidByService, Layers: 1, CPUPerGiB: 1}, {PaidBy: PaidByKernel, Layers: 2, CPUPerGiB: 2}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("SplitCPU = %+v, want %+v", got, want)
	}
	if got, _ := SplitCPU(l, 1, 0); len(got) != 1 || got[0].PaidBy != PaidByKernel {
		t.Errorf("kernel only: %+v", got)
	}
	if _, err := SplitCPU(Limit{}, 1, 1); err == nil {
		t.Error("no cipher figure: no error")
	}
	if _, err := SplitCPU(l, -1, 1); err == nil {
		t.Error("negative layers: no error")
	}
}
