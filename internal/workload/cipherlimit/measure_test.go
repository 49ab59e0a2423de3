package cipherlimit

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/xts"

	"github.com/slowpath/slowpath/internal/hostfs"
)

// TestMeasureHere runs crypto-limit on this machine. Its kernel has no
// AF_ALG, so the result must be the user-space bound and say so. Whether the
// figure is plausible is judged against references measured in the same
// test, not against a clock budget (other jobs share this machine's two
// cores): per core it must be well above golang.org/x/crypto/xts's byte
// loop and close to Go's own single-block AES, which it is built on.
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
	if !(r.PerCore > 0) || !(r.AllCores > 0) {
		t.Fatalf("no throughput: %+v", r)
	}
	if _, err := Measure(context.Background(), hostfs.Default(), Options{KeyBits: 128}); err == nil {
		t.Error("128-bit xts key accepted")
	}

	// Interleaved rounds, best of each, so both see the same load.
	key := make([]byte, 64)
	o := Options{SectorSize: 512, Duration: 100 * time.Millisecond}
	ours := func() (encrypter, error) { x, err := newXTS(key); return userXTS{x}, err }
	ref := func() (encrypter, error) { x, err := xts.NewCipher(aes.NewCipher, key); return xcrypto{x}, err }
	block := func() (encrypter, error) { b, err := aes.NewCipher(key[:32]); return blocks{b}, err }
	var best [3]float64
	for range 5 {
		for i, f := range []func() (encrypter, error){ours, ref, block} {
			v, err := run(context.Background(), f, 1, o)
			if err != nil {
				t.Fatal(err)
			}
			best[i] = max(best[i], v)
		}
	}
	t.Logf("same run, best of 5: this XTS %.2f GB/s, x/crypto/xts %.2f GB/s, single-block AES-256 %.2f GB/s", best[0]/1e9, best[1]/1e9, best[2]/1e9)
	if best[0] < 2*best[1] {
		t.Errorf("XTS %.2f GB/s is not well above x/crypto/xts's byte loop (%.2f GB/s): not a realistic bound", best[0]/1e9, best[1]/1e9)
	}
	if best[0] < 0.5*best[2] {
		t.Errorf("XTS %.2f GB/s is less than half the single-block AES it is built on (%.2f GB/s)", best[0]/1e9, best[2]/1e9)
	}
	cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
	if strings.Contains(string(cpuinfo), " aes ") && best[2] < 0.2e9 {
		t.Errorf("single-block AES at %.2f GB/s on a CPU with AES-NI", best[2]/1e9)
	}
}

type xcrypto struct{ c *xts.Cipher }

func (x xcrypto) encrypt(buf []byte, sector uint64) error {
	x.c.Encrypt(buf, buf, sector)
	return nil
}
func (xcrypto) close() {}

type blocks struct{ b cipher.Block }

func (b blocks) encrypt(buf []byte, _ uint64) error {
	for i := 0; i+16 <= len(buf); i += 16 {
		b.b.Encrypt(buf[i:i+16], buf[i:i+16])
	}
	return nil
}
func (blocks) close() {}

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
