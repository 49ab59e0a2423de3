package cipherlimit

import (
	"context"
	"crypto/aes"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/xts"

	"github.com/slowpath/slowpath/internal/hostfs"
)

// TestMeasureHere runs crypto-limit on this machine. Its kernel has no
// AF_ALG, so the result must be the user-space bound, say so, and be
// plausible: with AES-NI, well above x/crypto/xts's byte loop (~0.3 GB/s)
// and below what any core encrypts (tens of GB/s).
func TestMeasureHere(t *testing.T) {
	r, err := Measure(context.Background(), hostfs.Default(), Options{Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %.2f GB/s per core, %.2f GB/s on %d cores, pipelined AES %.2f GB/s; AF_ALG: %s; kernel: %+v %s",
		r.Method, r.PerCore/1e9, r.AllCores/1e9, r.Cores, r.PipelinedAES/1e9, r.AFALG, r.Kernel, r.KernelNote)
	if r.Method == MethodUserSpace {
		if r.AFALG == "" || !strings.Contains(r.What, "user-space bound") {
			t.Errorf("user-space result not labelled: %+v", r)
		}
	} else if r.Kernel == nil {
		t.Errorf("AF_ALG result without the kernel implementation: %+v", r)
	}
	cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
	if strings.Contains(string(cpuinfo), " aes ") && (r.PerCore < 0.4e9 || r.PerCore > 50e9) {
		t.Errorf("per-core %.2f GB/s outside the plausible range for a CPU with AES-NI", r.PerCore/1e9)
	}
	if r.AllCores < r.PerCore*0.5 {
		t.Errorf("all cores %.2f GB/s below half of one core %.2f", r.AllCores/1e9, r.PerCore/1e9)
	}
	if _, err := Measure(context.Background(), hostfs.Default(), Options{KeyBits: 128}); err == nil {
		t.Error("128-bit xts key accepted")
	}
}

// BenchmarkXTS reports this package's XTS against golang.org/x/crypto/xts
// on 512-byte sectors in the same run, as a ratio.
func BenchmarkXTS(b *testing.B) {
	key := make([]byte, 64)
	buf := make([]byte, 512)
	x, _ := newXTS(key)
	ref, _ := xts.NewCipher(aes.NewCipher, key)
	const n = 20000
	t0 := time.Now()
	for i := range n {
		x.encryptSector(buf, uint64(i))
	}
	ours := time.Since(t0)
	t0 = time.Now()
	for i := range n {
		ref.Encrypt(buf, buf, uint64(i))
	}
	theirs := time.Since(t0)
	b.ReportMetric(float64(n*512)/ours.Seconds()/1e9, "GB/s")
	b.ReportMetric(float64(n*512)/theirs.Seconds()/1e9, "x/crypto-GB/s")
	b.ReportMetric(theirs.Seconds()/ours.Seconds(), "x_vs_xcrypto")
}
