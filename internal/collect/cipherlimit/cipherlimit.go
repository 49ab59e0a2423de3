// Package cipherlimit measures what AES-XTS costs on this CPU: the
// kernel's own skcipher through AF_ALG (the implementation dm-crypt uses,
// named from /proc/crypto) or, where the kernel offers no AF_ALG, a
// user-space bound built on Go's AES (labelled as such). Each is measured
// on one core and on every core at once. From it the encryption tax model
// (internal/model/cryptotax) says what encryption should cost a workload.
package cipherlimit

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/procfs"

	"github.com/slowpath/slowpath/internal/hostfs"
)

// Methods of measurement.
const (
	MethodAFALG     = "af_alg"     // the kernel's skcipher, through AF_ALG
	MethodUserSpace = "user-space" // Go's AES with XTS built on it: a bound, not the kernel
)

// Options of a measurement.
type Options struct {
	KeyBits    int           // 256 or 512 (aes-xts-plain64 with a 512-bit key is AES-256)
	SectorSize int           // 512 or 4096: one XTS data unit, as dm-crypt's sector_size
	Duration   time.Duration // per measurement; default 500ms
	Method     string        // "" tries af_alg, then user-space
	// PerCoreOnly measures one core only: no all-cores pass and no
	// pipelined-AES reference, so a measurement takes one Duration (what
	// doctor's collector needs; AllCores and PipelinedAES stay 0).
	PerCoreOnly bool
}

// Implementation is the kernel's choice for xts(aes): the /proc/crypto
// entry with the highest priority (docs.kernel.org/crypto/api-intro.html).
type Implementation struct {
	Driver   string `json:"driver"`
	Module   string `json:"module"`
	Priority int    `json:"priority"`
}

// Result is one measurement.
type Result struct {
	Algorithm  string          `json:"algorithm"` // xts(aes)
	KeyBits    int             `json:"key_bits"`
	SectorSize int             `json:"sector_size"`
	Kernel     *Implementation `json:"kernel_implementation,omitempty"`
	KernelNote string          `json:"kernel_note,omitempty"`
	Method     string          `json:"method"`
	// What says in words what was measured.
	What string `json:"what"`
	// AFALG is why AF_ALG was not used, when it was not.
	AFALG    string  `json:"af_alg_unavailable,omitempty"`
	PerCore  float64 `json:"bytes_per_sec_per_core"`
	AllCores float64 `json:"bytes_per_sec_all_cores"` // 0 with Options.PerCoreOnly
	Cores    int     `json:"cores"`
	// PipelinedAES is, for the user-space method, one core's AES
	// throughput with several blocks in flight (Go's AES-CTR keystream):
	// near what the kernel's multi-block XTS reaches, so the user-space
	// PerCore is between it and a third of it.
	PipelinedAES float64 `json:"pipelined_aes_bytes_per_sec,omitempty"`
}

// KernelXTS names the kernel's xts(aes) implementation from /proc/crypto.
func KernelXTS(fs hostfs.FS) (*Implementation, error) {
	pfs, err := procfs.NewFS(fs.Proc)
	if err != nil {
		return nil, err
	}
	all, err := pfs.Crypto()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", fs.ProcPath("crypto"), err)
	}
	var best *Implementation
	for _, c := range all {
		if c.Name != "xts(aes)" || c.Type != "skcipher" {
			continue
		}
		p := 0
		if c.Priority != nil {
			p = int(*c.Priority)
		}
		if best == nil || p > best.Priority {
			best = &Implementation{Driver: c.Driver, Module: c.Module, Priority: p}
		}
	}
	if best == nil {
		return nil, errors.New("/proc/crypto lists no xts(aes) skcipher yet (it appears once dm-crypt or AF_ALG instantiates it)")
	}
	return best, nil
}

// encrypter encrypts sector after sector; one per goroutine.
type encrypter interface {
	encrypt(buf []byte, sector uint64) error
	close()
}

// Measure runs the measurement.
func Measure(ctx context.Context, fs hostfs.FS, o Options) (*Result, error) {
	if o.KeyBits == 0 {
		o.KeyBits = 512
	}
	if o.SectorSize == 0 {
		o.SectorSize = 512
	}
	if o.Duration <= 0 {
		o.Duration = 500 * time.Millisecond
	}
	if o.KeyBits != 256 && o.KeyBits != 512 {
		return nil, fmt.Errorf("aes-xts key of %d bits: want 256 or 512", o.KeyBits)
	}
	if o.SectorSize != 512 && o.SectorSize != 4096 {
		return nil, fmt.Errorf("sector size %d: want 512 or 4096", o.SectorSize)
	}
	key := make([]byte, o.KeyBits/8)
	defer clear(key)
	rand.Read(key)
	r := &Result{Algorithm: "xts(aes)", KeyBits: o.KeyBits, SectorSize: o.SectorSize, Cores: runtime.NumCPU()}
	var newEnc func() (encrypter, error)
	if o.Method == "" || o.Method == MethodAFALG {
		if err := afalgAvailable(key); err != nil {
			if o.Method == MethodAFALG {
				return nil, err
			}
			r.AFALG = err.Error()
		} else {
			r.Method = MethodAFALG
			newEnc = func() (encrypter, error) { return newAFALG(key) }
		}
	}
	if r.Method == "" {
		if o.Method != "" && o.Method != MethodUserSpace {
			return nil, fmt.Errorf("method %q: want %s or %s", o.Method, MethodAFALG, MethodUserSpace)
		}
		r.Method = MethodUserSpace
		newEnc = func() (encrypter, error) {
			x, err := newXTS(key)
			return userXTS{x}, err
		}
	}
	// Read /proc/crypto after AF_ALG has instantiated xts(aes), so the
	// kernel's choice is listed.
	if impl, err := KernelXTS(fs); err != nil {
		r.KernelNote = err.Error()
	} else {
		r.Kernel = impl
	}
	switch r.Method {
	case MethodAFALG:
		r.What = fmt.Sprintf("the kernel's xts(aes) skcipher through AF_ALG, one %d-byte sector per request (syscall cost included)", o.SectorSize)
		if r.Kernel != nil {
			r.What += ", driver " + r.Kernel.Driver
		}
	default:
		r.What = fmt.Sprintf("user-space bound, not the kernel: Go crypto/aes (AES-NI where the CPU has it) one block at a time, XTS tweak in Go, %d-byte sectors; the kernel's multi-block implementation is usually faster", o.SectorSize)
	}
	var err error
	if r.PerCore, err = run(ctx, newEnc, 1, o); err != nil {
		return nil, err
	}
	if o.PerCoreOnly {
		return r, nil
	}
	if r.AllCores, err = run(ctx, newEnc, r.Cores, o); err != nil {
		return nil, err
	}
	if r.Method == MethodUserSpace {
		ctr := func() (encrypter, error) {
			b, err := aes.NewCipher(key[:len(key)/2])
			if err != nil {
				return nil, err
			}
			return ctrStream{cipher.NewCTR(b, make([]byte, 16))}, nil
		}
		if r.PipelinedAES, err = run(ctx, ctr, 1, o); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// run encrypts sectors on n goroutines, each locked to an OS thread, for
// o.Duration and returns bytes per second in total.
func run(ctx context.Context, newEnc func() (encrypter, error), n int, o Options) (float64, error) {
	var wg sync.WaitGroup
	counts := make([]uint64, n)
	errs := make([]error, n)
	start := make(chan struct{})
	stop := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			e, err := newEnc()
			if err != nil {
				errs[i] = err
				return
			}
			defer e.close()
			buf := make([]byte, o.SectorSize)
			<-start
			for s := uint64(0); ; s++ {
				if s%64 == 0 {
					select {
					case <-stop:
						counts[i] = s * uint64(o.SectorSize)
						return
					default:
					}
				}
				if err := e.encrypt(buf, s); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	t0 := time.Now()
	close(start)
	select {
	case <-time.After(o.Duration):
	case <-ctx.Done():
	}
	close(stop)
	wg.Wait()
	el := time.Since(t0).Seconds()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var total uint64
	for _, c := range counts {
		total += c
	}
	return float64(total) / el, nil
}

type userXTS struct{ x *xtsCipher }

func (u userXTS) encrypt(buf []byte, sector uint64) error {
	u.x.encryptSector(buf, sector)
	return nil
}
func (userXTS) close() {}

type ctrStream struct{ s cipher.Stream }

func (c ctrStream) encrypt(buf []byte, _ uint64) error {
	c.s.XORKeyStream(buf, buf)
	return nil
}
func (ctrStream) close() {}
